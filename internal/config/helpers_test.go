package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
)

// load loads a repository and fails the test on error or when two
// targets have the same name.
func load(t *testing.T, dir string) *config.Repo {
	t.Helper()
	repo, err := config.Load(t.Context(), dir, render.Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	seen := map[string]bool{}
	for _, tg := range repo.Targets {
		if seen[tg.Name] {
			t.Errorf("two targets are named %q", tg.Name)
		}
		seen[tg.Name] = true
	}
	return repo
}

// target is the part of a config.Target a test compares: everything but
// the Kustomization object, with Root relative to the repository.
type target struct {
	Name            string
	Cluster         string
	Namespace       string
	Path            string
	Prune           bool
	TargetNamespace string
	DependsOn       []string
	Kubeconfig      string
	KubeconfigEnv   string
	Context         string
	Origin          string
	Root            string // relative to repo.Root: "." for the repository itself
}

func targets(t *testing.T, repo *config.Repo) []target {
	t.Helper()
	var out []target
	for _, tg := range repo.Targets {
		rel, err := filepath.Rel(repo.Root, tg.Root)
		if err != nil {
			t.Fatalf("target %q: Root %q is not relative to %q: %v", tg.Name, tg.Root, repo.Root, err)
		}
		out = append(out, target{
			Name:            tg.Name,
			Cluster:         tg.Cluster,
			Namespace:       tg.Namespace,
			Path:            tg.Path,
			Prune:           tg.Prune,
			TargetNamespace: tg.TargetNamespace,
			DependsOn:       tg.DependsOn,
			Kubeconfig:      tg.Kubeconfig,
			KubeconfigEnv:   tg.KubeconfigEnv,
			Context:         tg.Context,
			Origin:          tg.Origin,
			Root:            filepath.ToSlash(rel),
		})
	}
	return out
}

func targetNames(ts []*config.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// mustTarget finds a target by name and fails the test when there is none.
func mustTarget(t *testing.T, repo *config.Repo, name string) *config.Target {
	t.Helper()
	tg, err := repo.Target(name)
	if err != nil {
		t.Fatalf("Target(%q): %v", name, err)
	}
	return tg
}

// renderIDs renders a target and returns the IDs of its objects.
func renderIDs(t *testing.T, repo *config.Repo, tg *config.Target) []string {
	t.Helper()
	res, err := repo.Render(t.Context(), tg)
	if err != nil {
		t.Fatalf("Render(%q): %v", tg.Name, err)
	}
	var out []string
	for _, id := range res.Set.IDs() {
		out = append(out, id.String())
	}
	return out
}

// renderedData renders a target and returns the data of one ConfigMap.
func renderedData(t *testing.T, repo *config.Repo, tg *config.Target, namespace, name string) map[string]string {
	t.Helper()
	res, err := repo.Render(t.Context(), tg)
	if err != nil {
		t.Fatalf("Render(%q): %v", tg.Name, err)
	}
	o := res.Set.Get(manifest.ID{Kind: "ConfigMap", Namespace: namespace, Name: name})
	if o == nil {
		t.Fatalf("Render(%q) has no ConfigMap/%s/%s; it has %v", tg.Name, namespace, name, res.Set.IDs())
	}
	data := map[string]string{}
	if m, ok := o.Object["data"].(map[string]any); ok {
		for k, v := range m {
			s, _ := v.(string)
			data[k] = s
		}
	}
	return data
}

// wantError fails the test unless err is non-nil and contains every part.
func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// gitRepository is a flux-system GitRepository: 10 lines, so a document
// that follows it after "---" starts on line 12.
const gitRepository = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: ssh://git@example.com/fleet
  ref:
    branch: main
`

// gotkSync is what `flux bootstrap` commits in <path>/flux-system: the
// GitRepository for this repository and the sync Kustomization pointing at
// the cluster's folder (starting on line 12).
func gotkSync(path string) string {
	return gitRepository + `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./` + path + `
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`
}

// fluxKustomization is a Flux Kustomization of this repository in
// flux-system; spec holds further spec fields, indented by two spaces.
func fluxKustomization(name, path, spec string) string {
	return fluxKustomizationIn("flux-system", name, path, spec)
}

// fluxKustomizationIn is fluxKustomization in another namespace.
func fluxKustomizationIn(namespace, name, path, spec string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: ` + namespace + `
spec:
  interval: 10m
  path: ./` + path + `
  sourceRef:
    kind: GitRepository
    name: flux-system
` + spec
}

// configMap is a ConfigMap with data given as key, value pairs.
func configMap(namespace, name string, kv ...string) string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	if len(kv) > 0 {
		s += "data:\n"
		for i := 0; i+1 < len(kv); i += 2 {
			s += "  " + kv[i] + ": " + kv[i+1] + "\n"
		}
	}
	return s
}
