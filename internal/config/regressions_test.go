package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// Regression tests for bugs the config tests found (each once stated as a
// known bug, now fixed).

// loadNoPanic is Load that turns a panic into a test failure.
func loadNoPanic(t *testing.T, dir string) (repo *config.Repo, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Load panicked: %v", p)
		}
	}()
	return config.Load(t.Context(), dir, render.Options{})
}

// A cluster "staging" and a namespace "staging" make nameTargets give two
// targets the name "staging/apps": the one of cluster staging, and the
// cluster-less one in namespace staging (qualified by namespace because
// another cluster-less "apps" exists). Load then panics in cycleError.
func TestRegressionTargetNamesCollide(t *testing.T) {
	t.Parallel()
	repo, err := loadNoPanic(t, testtree.New(t, map[string]string{
		"clusters/staging/apps.yaml": fluxKustomization("apps", "apps", ""),
		"other/a.yaml":               fluxKustomizationIn("staging", "apps", "apps", ""),
		"other/b.yaml":               fluxKustomizationIn("prod", "apps", "apps", ""),
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(repo.Targets) != 3 {
		t.Fatalf("targets = %v, want 3", targetNames(repo.Targets))
	}
	seen := map[string]bool{}
	for _, tg := range repo.Targets {
		if seen[tg.Name] {
			t.Errorf("two targets are named %q: %v", tg.Name, targetNames(repo.Targets))
		}
		seen[tg.Name] = true
		got, err := repo.Target(tg.Name)
		if err != nil || got != tg {
			t.Errorf("Target(%q) = %v, %v; want the target of that name", tg.Name, got, err)
		}
	}
}

// A cluster root that renames its Kustomizations (namePrefix, a patch of
// metadata.name, a namespace: that differs from the file's) yields the
// renamed target, as Flux applies it; the file's own object is not reached
// by name, so the file-scan fallback adds it again as a second target of
// the same path.
func TestRegressionRenamedByClusterRootIsAlsoAFallbackTarget(t *testing.T) {
	t.Parallel()
	apps := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\nspec:\n  path: ./apps\n"
	tests := []struct {
		name          string
		kustomization string
		want          []target
	}{
		{
			name:          "namePrefix",
			kustomization: "namePrefix: staging-\nresources: [apps.yaml]\n",
			want: []target{{
				Name: "staging-apps", Cluster: "staging", Namespace: "flux-system", Path: "apps", Root: ".",
			}},
		},
		{
			name:          "namespace",
			kustomization: "namespace: team-a\nresources: [apps.yaml]\n",
			want: []target{{
				Name: "apps", Cluster: "staging", Namespace: "team-a", Path: "apps", Root: ".",
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := load(t, testtree.New(t, map[string]string{
				"clusters/staging/kustomization.yaml": tc.kustomization,
				"clusters/staging/apps.yaml":          apps,
				"apps/cm.yaml":                        configMap("default", "a"),
			}))
			// Which origin the renamed target reports is not the point here.
			if diff := cmp.Diff(tc.want, targets(t, repo), cmpopts.EquateEmpty(), cmpopts.IgnoreFields(target{}, "Origin")); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

// Kustomization files often leave metadata.namespace out and let the
// cluster's kustomization.yaml set it. The target is right, but its Origin
// is "rendered from clusters/staging" instead of the file and line.
func TestRegressionOriginWhenNamespaceComesFromKustomizationFile(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/staging/kustomization.yaml": "namespace: flux-system\nresources: [apps.yaml]\n",
		"clusters/staging/apps.yaml":          "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\nspec:\n  path: ./apps\n",
		"apps/cm.yaml":                        configMap("default", "a"),
	}))
	if got := mustTarget(t, repo, "apps").Origin; got != "clusters/staging/apps.yaml:1" {
		t.Errorf("Origin = %q, want clusters/staging/apps.yaml:1", got)
	}
}

// A second YAML document in ferry.yaml is ignored without a word, so
// targets declared after a stray "---" silently do not exist.
func TestRegressionParseFileIgnoresLaterDocuments(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"targets: [{name: a, path: a}]\n---\ntargets: [{name: b, path: b}]\n",
		"targets: [{name: a, path: a}]\n---\ntargets: [{name: b}]\n", // and never validated
	} {
		if f, err := config.ParseFile([]byte(in)); err == nil {
			t.Errorf("ParseFile(%q) = %d targets, no error; want an error about the second document", in, len(f.Targets))
		}
	}
}

// sources: {app-repo: ""} (or null) is accepted and resolves to the
// repository itself, so the other repository's path is rendered from this
// one instead of being reported.
func TestRegressionEmptySourcePath(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"sources: {app-repo: \"\"}\n", "sources: {app-repo: null}\n", "sources: {app-repo: }\n"} {
		if _, err := config.ParseFile([]byte(in)); err == nil {
			t.Errorf("ParseFile(%q) accepted an empty source path", in)
		}
	}
}
