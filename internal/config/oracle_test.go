package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/testbin"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// The fleet fixtures under testdata/fleets reproduce layouts of today's
// Flux fleet repos (written for these tests):
//   - namespaced: apps in per-namespace trees whose kustomization.yaml
//     sets the namespace of every ks.yaml below it, dependsOn across
//     namespaces, a root that patches defaults into every child, newer
//     Flux fields (readyExpr, healthCheckExprs, deletionPolicy,
//     ignoreMissingComponents, namePrefix), paths without a kustomization;
//   - operator: a Flux Operator FluxInstance syncing an OCIRepository that
//     ferry.yaml maps to this checkout, and a ResourceSet in the root;
//   - artifacts: every app an ExternalArtifact of one ArtifactGenerator
//     over an OCIRepository that ferry.yaml maps to this checkout, one of
//     them made of two copy rules (base + overlay);
//   - fluxinstance: a cluster whose root only the values of a flux-instance
//     HelmRelease declare, patching defaults into every child's
//     HelmReleases and substituting the root's ConfigMap variables;
//   - clusterartifacts: two clusters, each with an ArtifactGenerator of
//     the same name copying its own overlay;
//   - clustervars: a target whose substituteFrom Secret is not in Git
//     (only the cluster holds it), and one whose optional ConfigMap is not.
var oracleFixtures = []string{"namespaced", "operator", "artifacts", "fluxinstance", "clusterartifacts", "clustervars", "resourcesets"}

// oracleVars names, for a fixture whose targets substitute from a
// ConfigMap of the repository, the file holding it: flux build --dry-run
// reads no substituteFrom object, so the test hands it their variables
// inline, as kustomize-controller would load them.
var oracleVars = map[string]string{
	"fluxinstance": "kubernetes/flux/cluster/cluster-config.yaml",
}

// artifactLayouts is, for each ExternalArtifact target of the artifacts
// fixture, the tree its generator's copy rules make, written by hand as
// artifact folder -> repository folder copied whole (cp -r): flux build
// runs on that tree, as it would on the fetched artifact.
var artifactLayouts = map[string]map[string]string{
	"podinfo":         {"base": "apps/base/podinfo", "overlay": "apps/prod/podinfo"},
	"redis":           {"redis": "apps/redis"},
	"staging/apps":    {"base": "deploy/base", "staging": "deploy/staging"},
	"production/apps": {"base": "deploy/base", "production": "deploy/production"},
}

// TestFixturesMatchFluxBuild renders every target of each fleet fixture
// and compares it, as a set of objects, with `flux build kustomization
// --dry-run` of the same Kustomization object (as ferry found it: patched
// by its parent, in the namespace its kustomization gave it).
func TestFixturesMatchFluxBuild(t *testing.T) {
	bin := testbin.Tool(t, "flux", "tools")
	for _, fixture := range oracleFixtures {
		repo := load(t, filepath.Join("testdata", "fleets", fixture))
		if len(repo.Targets) < 2 {
			t.Fatalf("%s: %d targets, want a fleet", fixture, len(repo.Targets))
		}
		for _, tg := range repo.Targets {
			t.Run(fixture+"/"+tg.Name, func(t *testing.T) {
				t.Parallel()
				res, err := repo.Render(t.Context(), tg)
				if err != nil {
					t.Fatal(err)
				}
				root := tg.Root
				if tg.Artifact != nil {
					layout, ok := artifactLayouts[tg.Name]
					if !ok {
						t.Fatalf("no hand-written layout of artifact %q", tg.Artifact.Name)
					}
					root = t.TempDir()
					for dst, src := range layout {
						testtree.Copy(t, filepath.Join(repo.Root, filepath.FromSlash(src)), filepath.Join(root, dst))
					}
				}
				ks := tg.Kustomization
				if file, ok := oracleVars[fixture]; ok {
					ks = inlineVars(t, filepath.Join(repo.Root, file), ks)
				}
				want := withResourceSets(t, fluxBuild(t, bin, root, tg.Path, tg.Namespace, ks))
				got := byID(res.Set.Objects)
				if len(want) == 0 {
					t.Fatal("flux built nothing")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("ferry render differs from flux build ks %s (-flux +ferry):\n%s", tg.Kustomization.GetName(), diff)
				}
			})
		}
	}
}

// withResourceSets adds to want, flux build's objects by ID, what each
// Flux Operator ResourceSet among them generates, by `flux-operator build
// rset` with the ResourceSetInputProviders among them: what the cluster
// would do (kustomize-controller applies the ResourceSet, the operator
// expands it).
func withResourceSets(t *testing.T, want map[string]any) map[string]any {
	t.Helper()
	var rsets []string
	var providers []byte
	for id, o := range want {
		switch {
		case strings.HasPrefix(id, "ResourceSet.fluxcd.controlplane.io/"):
			rsets = append(rsets, id)
		case strings.HasPrefix(id, "ResourceSetInputProvider.fluxcd.controlplane.io/"):
			b, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			providers = append(append(providers, "---\n"...), b...)
		}
	}
	if len(rsets) == 0 {
		return want
	}
	bin := testbin.Tool(t, "flux-operator", "tools")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "providers.yaml"), providers, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range rsets {
		b, err := yaml.Marshal(want[id])
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "rset.yaml")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"build", "rset", "-f", file}
		if len(providers) > 0 {
			args = append(args, "--inputs-from-provider", filepath.Join(dir, "providers.yaml"))
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("flux-operator build rset %s: %v\n%s", id, err, stderr.String())
		}
		objs := parseOutput(t, "flux-operator", stdout.String())
		if len(objs) == 0 {
			t.Fatalf("flux-operator built nothing of %s", id)
		}
		for id, o := range byID(objs) {
			want[id] = o
		}
	}
	return want
}

// inlineVars is ks with the variables of the ConfigMap in file, when its
// substituteFrom names it, moved into postBuild.substitute (the
// Kustomization's own substitute wins, as in Flux).
func inlineVars(t *testing.T, file string, ks *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &cm.Object); err != nil {
		t.Fatal(err)
	}
	from, _, _ := unstructured.NestedSlice(ks.Object, "spec", "postBuild", "substituteFrom")
	var rest []any
	vars := map[string]any{}
	for _, e := range from {
		if ref := e.(map[string]any); ref["kind"] == "ConfigMap" && ref["name"] == cm.GetName() {
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			for k, v := range data {
				vars[k] = v
			}
			continue
		}
		rest = append(rest, e)
	}
	if len(vars) == 0 {
		return ks
	}
	out := ks.DeepCopy()
	inline, _, _ := unstructured.NestedMap(out.Object, "spec", "postBuild", "substitute")
	for k, v := range inline {
		vars[k] = v
	}
	if err := unstructured.SetNestedMap(out.Object, vars, "spec", "postBuild", "substitute"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(out.Object, rest, "spec", "postBuild", "substituteFrom"); err != nil {
		t.Fatal(err)
	}
	return out
}

// fluxBuild runs `flux build ks` of the Kustomization ks (written to a
// file) over root/path and returns its objects by ID, without the two
// labels kustomize-controller sets to own what it applies (ferry records
// ownership with ApplySet labels when it applies, not in a render).
func fluxBuild(t *testing.T, bin, root, path, namespace string, ks *unstructured.Unstructured) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(ks.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ks.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "build", "kustomization", ks.GetName(),
		"--path", filepath.Join(root, filepath.FromSlash(path)), "--kustomization-file", file,
		"--namespace", namespace, "--dry-run")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flux build ks %s: %v\n%s", ks.GetName(), err, stderr.String())
	}
	objs := parseOutput(t, "flux", stdout.String())
	for _, u := range objs {
		labels := u.GetLabels()
		delete(labels, "kustomize.toolkit.fluxcd.io/name")
		delete(labels, "kustomize.toolkit.fluxcd.io/namespace")
		if len(labels) == 0 {
			unstructured.RemoveNestedField(u.Object, "metadata", "labels")
		} else {
			u.SetLabels(labels)
		}
	}
	return byID(objs)
}

// parseOutput reads the YAML stream a tool printed.
func parseOutput(t *testing.T, tool, out string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%s output: %v\n%s", tool, err, doc)
		}
		objs = append(objs, u)
	}
	return objs
}

// byID keys objects by Kind/namespace/name, their content as JSON decodes
// it (so a number compares the same whichever decoder read it).
func byID(objs []*unstructured.Unstructured) map[string]any {
	m := map[string]any{}
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			panic(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			panic(err)
		}
		m[manifest.IDOf(o).String()] = v
	}
	return m
}
