package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// cacheFleet is a repository whose one target reads through most of what
// kustomize can read: a base in another folder, a component, a strategic
// merge patch and a JSON patch from files, inline patches, generators
// from files and env files, a folder with no kustomization file (Flux's
// generator makes one), and YAML of every scalar style.
func cacheFleet() map[string]string {
	return map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml, ../shared/config.yaml]\nlabels:\n  - pairs: {app: web}\n    includeSelectors: true\n",
		"base/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {when: 2024-01-01, ratio: "1.0", yes: "yes", big: "12345678901234567890"}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: web
          image: registry.example.com/web:1.0.0
          args: [--port=8080, 0o17, 1e+06, "${NOT_A_VAR}"]
          command:
            - |
              multi
                line
`,
		"shared/config.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {a: \"1\"}\n",
		"component/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - target: {kind: Deployment}\n    patch: |\n      - {op: add, path: /spec/template/metadata, value: {labels: {component: \"yes\"}}}\n",
		"overlay/kustomization.yaml":   "namespace: apps\nresources: [../base]\ncomponents: [../component]\npatches:\n  - path: replicas.yaml\n  - path: json.yaml\n    target: {kind: ConfigMap, name: shared}\nconfigMapGenerator:\n  - name: files\n    files: [settings.ini]\n    envs: [app.env]\n",
		"overlay/replicas.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
		"overlay/json.yaml":            "- {op: add, path: /data/b, value: \"2\"}\n",
		"overlay/settings.ini":         "[main]\nkey = value\n",
		"overlay/app.env":              "LEVEL=debug\n",
		"plain/one.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {x: \"1\"}\n",
		"plain/two.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\ndata: {x: \"2\"}\n",
		"plain/not-a-manifest.txt":     "ignored\n",
	}
}

func cacheSpec(root, path string) Spec {
	return Spec{Name: "apps", Root: root, Kustomization: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": "flux-system"},
		"spec": map[string]any{"path": path, "postBuild": map[string]any{"substitute": map[string]any{"NAME": "x"}},
			"commonMetadata": map[string]any{"labels": map[string]any{"team": "a"}}},
	}}}
}

// cachedBuild builds path under root with a cache of dir, as a new run
// would (a new BuildCache), and says whether the build was kept from
// before.
func cachedBuild(t *testing.T, dir, root, path string, opts Options) (*Result, error, bool) {
	t.Helper()
	opts.BuildCache = NewBuildCache(dir)
	res, err := Build(t.Context(), cacheSpec(root, path), opts)
	return res, err, opts.BuildCache.hits.Load() > 0
}

// sameBuild fails when two results differ in objects (as JSON) or files.
func sameBuild(t *testing.T, what string, want, got *Result) {
	t.Helper()
	js := func(r *Result) []string {
		var out []string
		for _, o := range r.Set.Objects {
			b, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		return out
	}
	if d := cmp.Diff(js(want), js(got)); d != "" {
		t.Errorf("%s: objects differ from the build's (-built +kept):\n%s", what, d)
	}
	if d := cmp.Diff(want.Files, got.Files); d != "" {
		t.Errorf("%s: files differ (-built +kept):\n%s", what, d)
	}
}

// TestBuildCache: a later run takes a kept build only when every file it
// read is the same, and what it takes equals the build.
func TestBuildCache(t *testing.T) {
	dir := t.TempDir()
	root := testtree.New(t, cacheFleet())
	for _, path := range []string{"./overlay", "./plain"} {
		t.Run(path, func(t *testing.T) {
			built, err, hit := cachedBuild(t, dir, root, path, Options{})
			if err != nil || hit {
				t.Fatalf("first build: %v, kept %v", err, hit)
			}
			if len(built.Set.Objects) == 0 {
				t.Fatal("no objects")
			}
			kept, err, hit := cachedBuild(t, dir, root, path, Options{})
			if err != nil || !hit {
				t.Fatalf("second build: %v, kept %v; want the kept one", err, hit)
			}
			sameBuild(t, "the same files", built, kept)

			// The same files elsewhere (a diff's export): kept too.
			other := filepath.Join(t.TempDir(), "repo")
			if err := os.CopyFS(other, os.DirFS(root)); err != nil {
				t.Fatal(err)
			}
			moved, err, hit := cachedBuild(t, dir, other, path, Options{})
			if err != nil || !hit {
				t.Fatalf("the same files in another folder: %v, kept %v", err, hit)
			}
			sameBuild(t, "another folder", built, moved)

			// Other budgets or options: built again.
			if _, _, hit := cachedBuild(t, dir, root, path, Options{NoDecrypt: true}); hit {
				t.Error("NoDecrypt took a build made without it")
			}
		})
	}
}

// TestBuildCacheChanges: every change to what the build read, or to what
// it found missing, builds again; putting a file back takes its build
// again.
func TestBuildCacheChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		path   string
		change map[string]string // file: content ("" removes it)
		check  func(t *testing.T, res *Result, err error)
	}{
		{name: "a resource of the base", path: "./overlay", change: map[string]string{"base/deploy.yaml": strings.Replace(cacheFleet()["base/deploy.yaml"], "web:1.0.0", "web:2.0.0", 1)},
			check: wantIn("web:2.0.0")},
		{name: "a file of another folder", path: "./overlay", change: map[string]string{"shared/config.yaml": strings.Replace(cacheFleet()["shared/config.yaml"], `a: "1"`, `a: "9"`, 1)},
			check: wantIn(`"a":"9"`)},
		{name: "a component", path: "./overlay", change: map[string]string{"component/kustomization.yaml": strings.Replace(cacheFleet()["component/kustomization.yaml"], `"yes"`, `"no"`, 1)},
			check: wantIn(`"component":"no"`)},
		{name: "a generator's file", path: "./overlay", change: map[string]string{"overlay/app.env": "LEVEL=info\n"},
			check: wantIn(`"LEVEL":"info"`)},
		{name: "a second kustomization file", path: "./overlay", change: map[string]string{"base/kustomization.yml": "resources: []\n"},
			check: func(t *testing.T, _ *Result, err error) {
				if err == nil {
					t.Error("two kustomization files built")
				}
			}},
		{name: "a new file in a folder without a kustomization", path: "./plain", change: map[string]string{"plain/three.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: three}\n"},
			check: wantIn(`"name":"three"`)},
		{name: "a file removed", path: "./plain", change: map[string]string{"plain/two.yaml": ""},
			check: func(t *testing.T, res *Result, err error) {
				if err != nil || len(res.Set.Objects) != 1 {
					t.Errorf("after removing a file: %v, %d objects", err, len(res.Set.Objects))
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := testtree.New(t, cacheFleet())
			before, err, _ := cachedBuild(t, dir, root, tc.path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			old := setFiles(t, root, tc.change)
			res, err, hit := cachedBuild(t, dir, root, tc.path, Options{})
			if hit {
				t.Fatal("took the build of the old files")
			}
			tc.check(t, res, err)
			if err == nil {
				// As built with no cache at all.
				fresh, ferr := Build(t.Context(), cacheSpec(root, tc.path), Options{})
				if ferr != nil {
					t.Fatal(ferr)
				}
				sameBuild(t, "after the change", fresh, res)
			}
			setFiles(t, root, old)
			back, err, hit := cachedBuild(t, dir, root, tc.path, Options{})
			if err != nil || !hit {
				t.Fatalf("files put back: %v, kept %v; want the first build", err, hit)
			}
			sameBuild(t, "files put back", before, back)
		})
	}
}

// setFiles writes files below root ("" removes one) and returns what
// they held before, in the same form.
func setFiles(t *testing.T, root string, files map[string]string) map[string]string {
	t.Helper()
	old := map[string]string{}
	for f, content := range files {
		p := filepath.Join(root, f)
		b, _ := os.ReadFile(p)
		old[f] = string(b)
		var err error
		if content == "" {
			err = os.Remove(p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return old
}

func wantIn(s string) func(t *testing.T, res *Result, err error) {
	return func(t *testing.T, res *Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		for _, o := range res.Set.Objects {
			b, _ := o.MarshalJSON()
			all.Write(b)
		}
		if !strings.Contains(all.String(), s) {
			t.Errorf("the build does not hold %s:\n%s", s, all.String())
		}
	}
}

// TestBuildCacheKeepsNoSecret: a build that read an encrypted file, that
// holds a Secret (in plain text too), or whose output names the folder it
// was built in, is not kept; remote bases allowed keep nothing.
func TestBuildCacheKeepsNoSecret(t *testing.T) {
	key := secretstest.NewKey(t)
	files := cacheFleet()
	files["secret/kustomization.yaml"] = "resources: [secret.yaml]\n"
	files["secret/secret.yaml"] = string(secretstest.Encrypt(t, "secret.yaml",
		[]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2-but-longer\n"), "^(data|stringData)$", key.Recipient))
	root := testtree.New(t, files)
	ids, err := secrets.ParseIdentities(key.Identity)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, opts := range []Options{{Decryptor: secrets.NewDecryptor(ids)}, {NoDecrypt: true}} {
		for range 2 {
			if _, err, hit := cachedBuild(t, dir, root, "./secret", opts); err != nil || hit {
				t.Fatalf("encrypted: %v, kept %v", err, hit)
			}
		}
	}
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("kept %s", p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}

	testtree.Write(t, root, map[string]string{"plainsecret/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: plain}\nstringData: {token: committed-in-plain-text}\n"})
	for range 2 {
		if _, err, hit := cachedBuild(t, dir, root, "./plainsecret", Options{}); err != nil || hit {
			t.Fatalf("a Secret in plain text: %v, kept %v", err, hit)
		}
	}
	testtree.Write(t, root, map[string]string{"named/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: here}\ndata: {dir: " + root + "}\n"})
	for range 2 {
		if _, err, hit := cachedBuild(t, dir, root, "./named", Options{}); err != nil || hit {
			t.Fatalf("output naming the folder: %v, kept %v", err, hit)
		}
	}
	for range 2 {
		if _, err, hit := cachedBuild(t, dir, root, "./plain", Options{AllowRemoteBases: true}); err != nil || hit {
			t.Fatalf("remote bases allowed: %v, kept %v", err, hit)
		}
	}
}
