package helm_test

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/helm"
)

// parseRelease reads a HelmRelease named name in namespace whose spec is
// the YAML spec.
func parseRelease(t *testing.T, name, namespace, spec string) *helm.Release {
	t.Helper()
	r, err := helm.ParseRelease(releaseObject(t, "v2", name, namespace, spec))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func releaseObject(t *testing.T, version, name, namespace, spec string) *unstructured.Unstructured {
	t.Helper()
	s := map[string]any{}
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/" + version,
		"kind":       "HelmRelease",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       s,
	}}
}

func chartDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "charts", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
