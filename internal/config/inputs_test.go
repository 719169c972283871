package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// TestInputsCoverEveryFileRead: the inputs found without rendering must
// include every file a render reads, or diff and plan would miss a
// change. Checked on every target of every example and on layouts that
// reach files through generators, components and patches.
func TestInputsCoverEveryFileRead(t *testing.T) {
	roots := map[string]string{}
	for _, ex := range []string{"gpu-cluster", "single-app", "fleet"} {
		roots[ex] = filepath.Join("..", "..", "examples", ex)
	}
	roots["generators"] = testtree.New(t, map[string]string{
		"ferry.yaml": "targets:\n  - name: app\n    path: overlays/app\n  - name: plain\n    path: plain\n",
		"overlays/app/kustomization.yaml": `resources: [../../base]
components: [../../components/extra]
patches:
  - path: patches/replicas.yaml
configMapGenerator:
  - name: settings
    files: [conf=files/app.conf]
    envs: [files/app.env]
`,
		"overlays/app/patches/replicas.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n",
		"overlays/app/files/app.conf":         "a=1\n",
		"overlays/app/files/app.env":          "B=2\n",
		"base/kustomization.yml":              "resources: [deploy.yaml]\n",
		"base/deploy.yaml":                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: c, image: x}]}}}\n",
		"components/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n",
		"components/extra/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n",
		"plain/a.yaml":                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"plain/nested/b.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
	})
	key := exampleKeyDecryptor(t)
	for name, root := range roots {
		repo, err := config.Load(t.Context(), root, render.Options{Decryptor: key})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tg := range repo.Targets {
			res, err := repo.Render(t.Context(), tg)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, tg.Name, err)
			}
			w := repo.Inputs(tg)
			if len(res.Files) == 0 {
				t.Fatalf("%s/%s: the render recorded no files", name, tg.Name)
			}
			for _, f := range res.Files {
				if !w.Touches([]string{f}) {
					t.Errorf("%s/%s: the render reads %s but the inputs %+v do not include it", name, tg.Name, f, w)
				}
			}
		}
	}
}

// TestInputsExcludeUnrelatedFiles: a change elsewhere does not reach a
// target, so unaffected targets are never rendered.
func TestInputsExcludeUnrelatedFiles(t *testing.T) {
	repo := load(t, filepath.Join("..", "..", "examples", "single-app"))
	staging, err := repo.Target("staging")
	if err != nil {
		t.Fatal(err)
	}
	w := repo.Inputs(staging)
	for _, path := range []string{"shop/overlays/production/kustomization.yaml", "README.md", "ferry.yaml", "shop/overlays/production/secrets.enc.env"} {
		if w.Touches([]string{path}) {
			t.Errorf("staging's inputs include %s", path)
		}
	}
	for _, path := range []string{"shop/base/deployment.yaml", "shop/overlays/staging/secrets.enc.env", "shop/overlays/staging/kustomization.yaml", "shop/base/config.properties", "shop/overlays/staging/new-file-named-nowhere.yaml"} {
		want := path != "shop/overlays/staging/new-file-named-nowhere.yaml"
		if got := w.Touches([]string{path}); got != want {
			t.Errorf("Touches(%s) = %v, want %v", path, got, want)
		}
	}
	// A deleted file that a kustomization still names stays watched.
	dir := testtree.New(t, map[string]string{
		"ferry.yaml":           "targets:\n  - name: a\n    path: a\n",
		"a/kustomization.yaml": "resources: [gone.yaml]\n",
	})
	r2 := load(t, dir)
	a, _ := r2.Target("a")
	if !r2.Inputs(a).Touches([]string{"a/gone.yaml"}) {
		t.Error("a file named by the kustomization but absent is not watched")
	}
}

func exampleKeyDecryptor(t *testing.T) *secrets.Decryptor {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "age-test-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := secrets.ParseIdentities(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewDecryptor(ids)
}
