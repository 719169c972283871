package config_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// Names a target may have: Kubernetes names and cluster folder names,
// joined by '/'.
func TestTargetNamesInFerryYAML(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"stage", "production-eu/apps", "app.v2", "a_b", "_shared", "prod/flux-system/apps", "0"} {
		f, err := config.ParseFile([]byte("targets:\n  - name: " + quoteYAML(name) + "\n    path: apps\n"))
		if err != nil {
			t.Errorf("name %q: %v", name, err)
			continue
		}
		if got := f.Targets[0].Name; got != name {
			t.Errorf("name %q read as %q", name, got)
		}
	}
}

func TestBadNamesInFerryYAML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "a newline, which would forge a row of render --list",
			yaml: "targets:\n  - name: \"app\\nevil  apps  true  -  ferry.yaml\"\n    path: apps\n",
			want: []string{`targets[0]: name "app\nevil  apps`, `'\n'`, "not a valid name"},
		},
		{
			name: "a name that climbs out of render -o's folder",
			yaml: "targets: [{name: ../../escaped, path: apps}]\n",
			want: []string{`targets[0]: name "../../escaped"`, "not a valid name"},
		},
		{
			name: "a dot part",
			yaml: "targets: [{name: prod/./apps, path: apps}]\n",
			want: []string{`name "prod/./apps"`, "not starting with '-' or '.'"},
		},
		{
			name: "an empty part",
			yaml: "targets: [{name: prod//apps, path: apps}]\n",
			want: []string{`name "prod//apps"`, "an empty part"},
		},
		{
			name: "a leading slash",
			yaml: "targets: [{name: /etc, path: apps}]\n",
			want: []string{`name "/etc"`, "an empty part"},
		},
		{
			name: "a backslash",
			yaml: `targets: [{name: 'a\b', path: apps}]` + "\n",
			want: []string{`name "a\\b"`, `'\\'`},
		},
		{
			name: "blanks",
			yaml: "targets: [{name: my app, path: apps}]\n",
			want: []string{`name "my app"`, "' '"},
		},
		{
			name: "upper case, which Kubernetes refuses in names too",
			yaml: "targets: [{name: Stage, path: apps}]\n",
			want: []string{`name "Stage"`, "'S'", "lowercase"},
		},
		{
			name: "a leading dash, which reads as a flag",
			yaml: "targets: [{name: -rf, path: apps}]\n",
			want: []string{`name "-rf"`, "'-' at offset 0"},
		},
		{
			name: "a carriage return in the cluster",
			yaml: "targets: [{name: app, cluster: \"prod\\r\", path: apps}]\n",
			want: []string{`target "app": cluster "prod\r"`},
		},
		{
			name: "a cluster with a slash",
			yaml: "targets: [{name: app, cluster: a/b, path: apps}]\n",
			want: []string{`target "app": cluster "a/b"`, "'/'"},
		},
		{
			name: "a namespace with a newline",
			yaml: "targets: [{name: app, namespace: \"x\\ny\", path: apps}]\n",
			want: []string{`target "app": namespace "x\ny"`},
		},
		{
			name: "a clusters key with a newline",
			yaml: "clusters:\n  \"prod\\n::error::x\": {context: c}\n",
			want: []string{`clusters: cluster name "prod\n::error::x"`},
		},
		{
			name: "an image policy name with a newline",
			yaml: "imagePolicies: [{name: \"app\\nx\", image: r/app, policy: {semver: {range: '1.x'}}}]\n",
			want: []string{`image policy "flux-system/app\nx"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := config.ParseFile([]byte(tc.yaml))
			if f != nil {
				t.Errorf("ParseFile returned %+v along with the error", f)
			}
			wantError(t, err, append([]string{"ferry.yaml: "}, tc.want...)...)
		})
	}
}

// ferry.yaml is YAML 1.2: only an unquoted true or false is a boolean,
// one rule for every boolean field.
func TestFerryYAMLBooleans(t *testing.T) {
	t.Parallel()
	good := []struct {
		value string
		want  bool
	}{
		{"true", true}, {"false", false}, {"True", true}, {"FALSE", false},
		{"!!bool true", true}, {"null", false}, {"", false},
	}
	for _, g := range good {
		f, err := config.ParseFile([]byte("targets:\n  - name: a\n    path: a\n    prune: " + g.value + "\n"))
		if err != nil {
			t.Errorf("prune: %s: %v", g.value, err)
			continue
		}
		if f.Targets[0].Prune != g.want {
			t.Errorf("prune: %s read as %t", g.value, f.Targets[0].Prune)
		}
	}
	bad := []struct {
		yaml string
		want []string
	}{
		{"targets:\n  - name: a\n    path: a\n    prune: \"on\"\n", []string{`line 4: targets[0].prune: want true or false, got "on" (quoted)`, "YAML 1.2"}},
		{"targets:\n  - name: a\n    path: a\n    prune: \"true\"\n", []string{`line 4: targets[0].prune: want true or false, got "true" (quoted)`}},
		{"targets:\n  - name: a\n    path: a\n    prune: 'false'\n", []string{`targets[0].prune`, `got "false" (quoted)`}},
		{"targets:\n  - name: a\n    path: a\n    prune: on\n", []string{`line 4: targets[0].prune: want true or false, got "on":`}},
		{"targets:\n  - name: a\n    path: a\n    prune: yes\n", []string{`targets[0].prune`, `got "yes"`}},
		{"targets:\n  - name: a\n    path: a\n    prune: off\n", []string{`targets[0].prune`, `got "off"`}},
		{"targets:\n  - name: a\n    path: a\n  - name: b\n    path: b\n    prune: 1\n", []string{`line 6: targets[1].prune`, `got "1"`}},
		{"x: &on \"on\"\n", []string{`unknown field "x"`}}, // the decoder's own error stays
		{"imagePolicies:\n  - name: app\n    image: r/app\n    insecure: \"true\"\n    policy: {semver: {range: '1.x'}}\n", []string{`line 4: imagePolicies[0].insecure`, `got "true" (quoted)`}},
	}
	for _, b := range bad {
		f, err := config.ParseFile([]byte(b.yaml))
		if f != nil {
			t.Errorf("%q: ParseFile returned %+v along with the error", b.yaml, f)
		}
		wantError(t, err, append([]string{"ferry.yaml: "}, b.want...)...)
	}
}

// A boolean reached through an alias is checked too.
func TestFerryYAMLBooleansThroughAliases(t *testing.T) {
	t.Parallel()
	_, err := config.ParseFile([]byte("targets:\n  - name: a\n    path: a\n    prune: &p \"on\"\n  - name: b\n    path: b\n    prune: *p\n"))
	wantError(t, err, "ferry.yaml: line 4: targets[0].prune")

}

// A source is another repository: never this one, nor a folder that holds
// it, which would let a pull request render the runner's workspace.
func TestSourcesThatHoldTheRepository(t *testing.T) {
	t.Parallel()
	workspace := t.TempDir()
	repo := filepath.Join(workspace, "fleet")
	for _, d := range []string{repo, filepath.Join(workspace, "apps"), filepath.Join(repo, "vendor", "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..", filepath.Join(repo, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(workspace, "apps"), filepath.Join(repo, "apps-link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		bad  bool
	}{
		{"..", true},
		{"../..", true},
		{".", true},
		{"./", true},
		{"/", true}, // relative to the repository: the repository itself
		{"../fleet", true},
		{"up", true},          // a symlink committed to the repository, to its parent
		{"up/fleet/..", true}, // cleaned to the repository
		{"vendor/..", true},
		{"../apps", false},
		{"apps-link", false},
		{"vendor/other", false}, // inside the repository: odd, harmless
		{"../not-checked-out", false},
	}
	for _, tc := range tests {
		if err := os.WriteFile(filepath.Join(repo, "ferry.yaml"), []byte("sources:\n  app-repo: "+quoteYAML(tc.path)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := config.ReadFile(repo)
		switch {
		case tc.bad && err == nil:
			t.Errorf("sources: {app-repo: %s} accepted", tc.path)
		case tc.bad:
			wantError(t, err, "ferry.yaml: sources: \"app-repo\": "+quoteGo(tc.path), "this repository or a folder that holds it")
		case err != nil:
			t.Errorf("sources: {app-repo: %s}: %v", tc.path, err)
		case f.Sources["app-repo"] != tc.path:
			t.Errorf("sources: {app-repo: %s} read as %q", tc.path, f.Sources["app-repo"])
		}
	}
}

// Load refuses the same through a Flux Kustomization that names the
// source, before anything is rendered from it.
func TestLoadRefusesParentSource(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"ferry.yaml":           "sources:\n  workspace: ..\n",
		"clusters/prod/a.yaml": strings.Replace(fluxKustomization("a", "apps", ""), "name: flux-system", "name: workspace", 1),
	})
	_, err := config.Load(t.Context(), dir, render.Options{})
	wantError(t, err, `ferry.yaml: sources: "workspace": ".."`)
}

// Discovered names are checked where they are made: a Kustomization's
// name and namespace, and the cluster folder's name.
func TestBadDiscoveredNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "a Kustomization name with a newline",
			files: map[string]string{
				"clusters/prod/apps.yaml": fluxKustomization(`"apps\n::error file=x::pwned"`, "apps", ""),
				"apps/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			},
			want: []string{`clusters/prod/apps.yaml:1: Kustomization name "apps\n::error file=x::pwned"`, "not a valid name"},
		},
		{
			name: "a Kustomization name that climbs out of render -o's folder",
			files: map[string]string{
				"other/apps.yaml": fluxKustomization(`../../escaped`, "apps", ""),
				"apps/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			},
			want: []string{`other/apps.yaml:1: Kustomization name "../../escaped"`},
		},
		{
			name: "a Kustomization name with a slash, which would pass for a qualified name",
			files: map[string]string{
				"other/apps.yaml": fluxKustomization(`prod/apps`, "apps", ""),
				"apps/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			},
			want: []string{`other/apps.yaml:1: Kustomization name "prod/apps"`},
		},
		{
			name: "a namespace with a tab",
			files: map[string]string{
				"other/apps.yaml": fluxKustomizationIn(`"team\ta"`, "apps", "apps", ""),
				"apps/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			},
			want: []string{`other/apps.yaml:1: Kustomization namespace "team\ta"`},
		},
		{
			name: "a skipped Kustomization is listed too, so its name is checked",
			files: map[string]string{
				"other/apps.yaml": strings.Replace(fluxKustomization(`"x\ny"`, "apps", ""), "    name: flux-system", "    name: elsewhere", 1),
			},
			want: []string{`Kustomization name "x\ny"`},
		},
		{
			name: "a cluster folder in upper case",
			files: map[string]string{
				"clusters/Prod/apps.yaml": fluxKustomization("apps", "apps", ""),
				"apps/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			},
			want: []string{`cluster folder "clusters/Prod": cluster name "Prod"`, "lowercase", "rename the folder"},
		},
		{
			name: "a cluster folder with a newline",
			files: map[string]string{
				"clusters/prod\n::warning::x/apps.yaml": fluxKustomization("apps", "apps", ""),
			},
			want: []string{`cluster name "prod\n::warning::x"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, err := config.Load(t.Context(), testtree.New(t, tc.files), render.Options{})
			if err == nil {
				t.Fatalf("Load accepted targets %q", targetNames(repo.Targets))
			}
			wantError(t, err, tc.want...)
		})
	}
}

// The names real fleet repositories use are kept as they are.
func TestDiscoveredNamesKept(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/production-eu/apps.yaml": fluxKustomization("apps", "apps", ""),
		"clusters/staging_2/apps.yaml":     fluxKustomization("apps", "apps", ""),
		"clusters/staging_2/infra.yaml":    fluxKustomization("infra.v2", "apps", ""),
		"apps/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
	}))
	want := []string{"infra.v2", "production-eu/apps", "staging_2/apps"}
	if diff := cmp.Diff(want, targetNames(repo.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}

// quoteYAML writes s as a double-quoted YAML scalar (Go's escapes, for
// the characters these tests use, are YAML's).
func quoteYAML(s string) string { return strconv.Quote(s) }

// quoteGo is %q: what error messages show of a name.
func quoteGo(s string) string { return strconv.Quote(s) }
