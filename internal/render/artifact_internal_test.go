package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The copy rules of an ArtifactGenerator, as source-watcher applies them
// (cp semantics), on one source folder.
func TestArtifactCopyRules(t *testing.T) {
	src := t.TempDir()
	for name, body := range map[string]string{
		"config.yaml":                  "a: 1\n",
		"configs/app.yaml":             "app: 1\n",
		"configs/db.yaml":              "db: 1\n",
		"configs/README.md":            "docs\n",
		"configs/sub/deep.yaml":        "deep: 1\n",
		"configs/sub/testdata/x.yaml":  "test: 1\n",
		"values.yaml":                  "image: {repository: app, tag: '1.0'}\nreplicas: 1\nlist: [a, b]\n",
		"prod/values.yaml":             "image: {tag: '2.0'}\nlist: [c]\n",
		"charts/podinfo-6.7.0.tgz":     "not really a tarball",
		"outside-link-target/cm.yaml":  "x: 1\n",
		"configs/sub/testdata/y.json":  "{}\n",
		"configs/sub/testdata/z.yml":   "z: 1\n",
		"configs/sub/testdata/.hidden": "h\n",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeTarball(t, filepath.Join(src, "releases", "app-1.0.0.tgz"), map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": "kind: ConfigMap\n", "app/link": ""})
	writeTarball(t, filepath.Join(src, "releases", "nested", "db-2.0.0.tar.gz"), map[string]string{"db/cm.yaml": "kind: ConfigMap\n"})
	if err := os.WriteFile(filepath.Join(src, "releases", "notes.txt"), []byte("not a tarball\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTarball(t, filepath.Join(src, "evil.tgz"), map[string]string{"../../outside.yaml": "x: 1\n"})
	if err := os.MkdirAll(filepath.Join(src, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(src, "links", "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		rules []CopyRule
		want  map[string][]string // artifact file -> origins
		err   string
	}{
		{name: "file to a file", rules: []CopyRule{{From: "@s/config.yaml", To: "@artifact/apps/app.yaml"}},
			want: map[string][]string{"apps/app.yaml": {"src/config.yaml"}}},
		{name: "file into a folder", rules: []CopyRule{{From: "@s/config.yaml", To: "@artifact/apps/"}},
			want: map[string][]string{"apps/config.yaml": {"src/config.yaml"}}},
		{name: "glob keeps the matched path", rules: []CopyRule{{From: "@s/configs/*.yaml", To: "@artifact/apps/"}},
			want: map[string][]string{"apps/configs/app.yaml": {"src/configs/app.yaml"}, "apps/configs/db.yaml": {"src/configs/db.yaml"}}},
		{name: "folder copies as a subfolder", rules: []CopyRule{{From: "@s/configs/sub", To: "@artifact/dest"}},
			want: map[string][]string{"dest/sub/deep.yaml": {"src/configs/sub/deep.yaml"}, "dest/sub/testdata/x.yaml": {"src/configs/sub/testdata/x.yaml"}, "dest/sub/testdata/y.json": {"src/configs/sub/testdata/y.json"}, "dest/sub/testdata/z.yml": {"src/configs/sub/testdata/z.yml"}, "dest/sub/testdata/.hidden": {"src/configs/sub/testdata/.hidden"}}},
		{name: "folder/** copies its contents, with excludes", rules: []CopyRule{{From: "@s/configs/**", To: "@artifact/", Exclude: []string{"*.md", "**/testdata/**"}}},
			want: map[string][]string{"app.yaml": {"src/configs/app.yaml"}, "db.yaml": {"src/configs/db.yaml"}, "sub/deep.yaml": {"src/configs/sub/deep.yaml"}}},
		{name: "exclude relative to the selection root", rules: []CopyRule{{From: "@s/configs/**", To: "@artifact/", Exclude: []string{"sub/**", "README.md"}}},
			want: map[string][]string{"app.yaml": {"src/configs/app.yaml"}, "db.yaml": {"src/configs/db.yaml"}}},
		{name: "later rules overwrite", rules: []CopyRule{{From: "@s/values.yaml", To: "@artifact/values.yaml"}, {From: "@s/prod/values.yaml", To: "@artifact/values.yaml"}},
			want: map[string][]string{"values.yaml": {"src/prod/values.yaml"}}},
		{name: "Merge merges YAML as helm merges values", rules: []CopyRule{{From: "@s/values.yaml", To: "@artifact/values.yaml"}, {From: "@s/prod/values.yaml", To: "@artifact/values.yaml", Strategy: "Merge"}},
			want: map[string][]string{"values.yaml": {"src/values.yaml", "src/prod/values.yaml"}}},
		{name: "a destination cannot leave the artifact", rules: []CopyRule{{From: "@s/config.yaml", To: "@artifact/../../x.yaml"}},
			want: map[string][]string{"x.yaml": {"src/config.yaml"}}},
		{name: "a source path cannot leave the source", rules: []CopyRule{{From: "@s/../../etc/passwd", To: "@artifact/"}}, err: "etc/passwd does not exist"},
		{name: "nor can a glob", rules: []CopyRule{{From: "@s/../*", To: "@artifact/"}}, err: "no file matches"},
		{name: "unknown alias", rules: []CopyRule{{From: "@other/x", To: "@artifact/"}}, err: `source alias "other"`},
		{name: "missing file", rules: []CopyRule{{From: "@s/nope.yaml", To: "@artifact/"}}, err: "nope.yaml does not exist"},
		{name: "no match", rules: []CopyRule{{From: "@s/*.json", To: "@artifact/"}}, err: "no file matches"},
		{name: "all excluded", rules: []CopyRule{{From: "@s/configs/*.md", To: "@artifact/", Exclude: []string{"*.md"}}}, err: "excluded"},
		{name: "bad from", rules: []CopyRule{{From: "s/config.yaml", To: "@artifact/"}}, err: `from must be`},
		{name: "bad to", rules: []CopyRule{{From: "@s/config.yaml", To: "/tmp/x"}}, err: `to must be`},
		{name: "Extract unpacks a tarball", rules: []CopyRule{{From: "@s/releases/app-1.0.0.tgz", To: "@artifact/", Strategy: "Extract"}},
			want: map[string][]string{"app/kustomization.yaml": {"src/releases/app-1.0.0.tgz"}, "app/cm.yaml": {"src/releases/app-1.0.0.tgz"}}},
		{name: "Extract of a glob at any depth skips other files", rules: []CopyRule{{From: "@s/releases/**", To: "@artifact/x/", Strategy: "Extract"}},
			want: map[string][]string{"x/app/kustomization.yaml": {"src/releases/app-1.0.0.tgz"}, "x/app/cm.yaml": {"src/releases/app-1.0.0.tgz"}, "x/db/cm.yaml": {"src/releases/nested/db-2.0.0.tar.gz"}}},
		{name: "Extract of a file that is no tarball", rules: []CopyRule{{From: "@s/charts/podinfo-6.7.0.tgz", To: "@artifact/", Strategy: "Extract"}}, err: "gzip"},
		{name: "Extract of a folder", rules: []CopyRule{{From: "@s/releases", To: "@artifact/", Strategy: "Extract"}}, err: "not the folder releases"},
		{name: "Extract of a plain file", rules: []CopyRule{{From: "@s/config.yaml", To: "@artifact/", Strategy: "Extract"}}, err: "takes tarballs"},
		{name: "a tarball entry cannot leave the artifact", rules: []CopyRule{{From: "@s/evil.tgz", To: "@artifact/", Strategy: "Extract"}}, err: "leaves the folder"},
		{name: "unknown strategy", rules: []CopyRule{{From: "@s/config.yaml", To: "@artifact/", Strategy: "Append"}}, err: "unknown strategy"},
		{name: "a link out of the source is not followed", rules: []CopyRule{{From: "@s/links/escape/passwd", To: "@artifact/"}}, err: "escape"},
		{name: "nor is one a glob matches", rules: []CopyRule{{From: "@s/links/**", To: "@artifact/"}}, err: "escape"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &Artifact{Name: "app", Generator: "ArtifactGenerator/flux-system/gen (gen.yaml:1)", Sources: map[string]ArtifactSource{"s": {Dir: src, Prefix: "src"}}, Copy: tc.rules}
			tree, err := a.build(t.Context())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "gen.yaml:1") {
					t.Fatalf("error %v, want one naming the generator and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tree.origins); diff != "" {
				t.Errorf("artifact files and their origins (-want +got):\n%s", diff)
			}
		})
	}

	a := &Artifact{Sources: map[string]ArtifactSource{"s": {Dir: src}}, Copy: []CopyRule{{From: "@s/values.yaml", To: "@artifact/values.yaml"}, {From: "@s/prod/values.yaml", To: "@artifact/values.yaml", Strategy: "Merge"}}}
	tree, err := a.build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := "image:\n  repository: app\n  tag: \"2.0\"\nlist:\n- c\nreplicas: 1\n"
	if got := string(tree.files["values.yaml"]); got != want {
		t.Errorf("merged values:\n%s\nwant:\n%s", got, want)
	}
}

// A change under a folder a copy rule reads may change the artifact.
func TestArtifactInputs(t *testing.T) {
	a := &Artifact{
		Sources: map[string]ArtifactSource{"repo": {Prefix: ""}, "other": {Prefix: "../app-repo"}},
		Copy: []CopyRule{
			{From: "@repo/apps/base/**", To: "@artifact/base/"},
			{From: "@repo/apps/prod/*.yaml", To: "@artifact/"},
			{From: "@other/deploy/", To: "@artifact/"},
			{From: "@repo/values.yaml", To: "@artifact/"},
		},
	}
	w := Inputs(Spec{Artifact: a})
	if diff := cmp.Diff([]string{"../app-repo/deploy", "apps/base", "apps/prod", "values.yaml"}, w.Dirs); diff != "" {
		t.Errorf("watched (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		changed string
		touches bool
	}{{"apps/base/x/deploy.yaml", true}, {"apps/prod/a.yaml", true}, {"values.yaml", true}, {"apps/stage/a.yaml", false}, {"docs/README.md", false}} {
		if got := w.Touches([]string{c.changed}); got != c.touches {
			t.Errorf("Touches(%s) = %v, want %v", c.changed, got, c.touches)
		}
	}
}

// writeTarball writes a .tgz of files; an empty content makes a symlink
// entry (which extraction skips).
func writeTarball(t *testing.T, file string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}
		if files[n] == "" {
			h = &tar.Header{Name: n, Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
