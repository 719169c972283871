package config

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// found is what a test compares of a FluxObject.
type found struct {
	APIVersion, Kind, Name string
	Line                   int
}

func summarize(objs []FluxObject) []found {
	var out []found
	for _, o := range objs {
		out = append(out, found{o.Object.GetAPIVersion(), o.Object.GetKind(), o.Object.GetName(), o.Line})
	}
	return out
}

const ksDoc = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: %s\nspec:\n  path: ./x\n"

func ks(name string) string { return strings.Replace(ksDoc, "%s", name, 1) }

func TestParseFluxDocs(t *testing.T) {
	t.Parallel()
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    docs: https://toolkit.fluxcd.io\n"
	tests := []struct {
		name string
		data string
		want []found
	}{
		{
			name: "one document",
			data: ks("a"),
			want: []found{{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "a", 1}},
		},
		{
			name: "leading separator",
			data: "---\n" + ks("a"),
			want: []found{{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "a", 2}},
		},
		{
			name: "second document, after a non-Flux one that mentions Flux",
			data: cm + "---\n" + ks("b"),
			want: []found{{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "b", 8}},
		},
		{
			name: "separators with a comment and trailing spaces, empty documents",
			data: "# header\n--- # first\n" + ks("a") + "---   \n---\n# only a comment\n---\n" + ks("b"),
			want: []found{
				{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "a", 3},
				{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "b", 13},
			},
		},
		{
			name: "every Flux group is kept, other groups are not",
			data: "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: h\n" +
				"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n" +
				"---\napiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: t\n  labels:\n    via: toolkit.fluxcd.io\n",
			want: []found{
				{"helm.toolkit.fluxcd.io/v2", "HelmRelease", "h", 1},
				{"source.toolkit.fluxcd.io/v1", "GitRepository", "g", 6},
			},
		},
		{
			name: "a group that merely ends in toolkit.fluxcd.io is not Flux's",
			data: "apiVersion: notflux-toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: n\n" +
				"---\n!00 apiVersion: 0toolkit.fluxcd.io/\n", // the second found by FuzzParseFluxDocs
			want: nil,
		},
		{
			name: "a list or scalar that mentions Flux is not an object",
			data: "# https://toolkit.fluxcd.io\n- a\n---\ntoolkit.fluxcd.io\n---\n" + ks("a"),
			want: []found{{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "a", 6}},
		},
		{
			name: "CRLF line endings",
			data: strings.ReplaceAll(cm+"---\n"+ks("b"), "\n", "\r\n"),
			want: []found{{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "b", 8}},
		},
		{
			name: "an indented --- in a block scalar is not a separator",
			data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  f: |\n    ---\n    x\n---\n" + ks("a"),
			want: []found{{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "a", 10}},
		},
		{
			name: "no Flux object",
			data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			want: nil,
		},
		{
			name: "empty file",
			data: "",
			want: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objs, err := parseFluxDocs("f.yaml", []byte(tc.data))
			if err != nil {
				t.Fatalf("parseFluxDocs: %v", err)
			}
			if diff := cmp.Diff(tc.want, summarize(objs)); diff != "" {
				t.Errorf("parseFluxDocs (-want +got):\n%s", diff)
			}
			for _, o := range objs {
				if o.File != "f.yaml" || o.Where() != "f.yaml:"+strconv.Itoa(o.Line) {
					t.Errorf("File = %q, Where() = %q", o.File, o.Where())
				}
			}
		})
	}
}

func TestParseFluxDocsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string
	}{
		{
			name: "syntax error in the second document names its line",
			data: "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: [\n",
			want: "dir/f.yaml:6: invalid YAML",
		},
		{
			name: "tab indentation",
			data: "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n\tname: a\n",
			want: "dir/f.yaml:",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objs, err := parseFluxDocs("dir/f.yaml", []byte(tc.data))
			if err == nil {
				t.Fatalf("parseFluxDocs = %v, want an error", summarize(objs))
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q does not start with %q", err, tc.want)
			}
		})
	}
}

var (
	errLine   = regexp.MustCompile(`^f\.yaml:(\d+): invalid YAML: `)
	yamlBreak = regexp.MustCompile(`\r\n|\r|\n`)
)

// FuzzParseFluxDocs checks that parseFluxDocs never panics, that every
// object it returns is of a Flux API group and starts on a line that
// exists (right after a separator, unless it is line 1), and that an
// error names the file and a line of it.
func FuzzParseFluxDocs(f *testing.F) {
	for _, seed := range []string{
		"",
		ks("a"),
		"---\n" + ks("a") + "---\n" + ks("b"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: {a: toolkit.fluxcd.io}\n---\n" + ks("b"),
		strings.ReplaceAll("--- # x\n"+ks("a"), "\n", "\r\n"),
		"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: [\n",
		"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: x}\n...\n---\n",
		"apiVersion: [kustomize.toolkit.fluxcd.io/v1]\nkind: 3\nmetadata: 5\n",
		"apiVersion: toolkit.fluxcd.io\n",
		"- toolkit.fluxcd.io\n",
		"toolkit.fluxcd.io\n",
		"a: &a toolkit.fluxcd.io\nb: *a\napiVersion: *a\n",
		"apiVersion: kustomize.toolkit.fluxcd.io/v1\r\n---\r\n\r\n---",
		"\xef\xbb\xbfapiVersion: kustomize.toolkit.fluxcd.io/v1\n",
		"0: toolkit.fluxcd.io\r0", // a lone \r breaks lines for YAML, not for the scanner
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := parseFluxDocs("f.yaml", data)
		lines := strings.Split(string(data), "\n")
		if err != nil {
			if objs != nil {
				t.Fatalf("objects along with an error: %v", err)
			}
			m := errLine.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error %q does not name the file and a line", err)
			}
			// The YAML parser counts a lone \r as a line break too, and may
			// point just past the last line.
			if n, _ := strconv.Atoi(m[1]); n < 1 || n > len(yamlBreak.Split(string(data), -1))+1 {
				t.Fatalf("error %q names line %d of a %d-line file", err, n, len(lines))
			}
			return
		}
		for _, o := range objs {
			group := o.Object.GroupVersionKind().Group
			if group != "toolkit.fluxcd.io" && !strings.HasSuffix(group, ".toolkit.fluxcd.io") {
				t.Errorf("object of group %q (apiVersion %q) is not a Flux object", group, o.Object.GetAPIVersion())
			}
			if o.File != "f.yaml" {
				t.Errorf("File = %q", o.File)
			}
			if o.Line < 1 || o.Line > len(lines) {
				t.Fatalf("Line = %d in a %d-line file", o.Line, len(lines))
			}
			if o.Line > 1 {
				if prev := strings.TrimSuffix(lines[o.Line-2], "\r"); !docSeparator.MatchString(prev) {
					t.Errorf("object at line %d does not follow a separator: line %d is %q", o.Line, o.Line-1, prev)
				}
			}
		}
	})
}
