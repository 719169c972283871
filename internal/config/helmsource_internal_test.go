package config

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/render"
)

// A chart source is reached over plain HTTP when its spec.insecure says
// so or its host is named in render.Options.InsecureHosts (ferry's
// --insecure-registry), and only then. (A loopback registry is reached
// over plain HTTP either way, as go-containerregistry decides, so this
// is shown here rather than against a registry on 127.0.0.1.)
func TestRemoteSourceInsecure(t *testing.T) {
	r := &Repo{opts: render.Options{InsecureHosts: []string{"charts.internal:5000"}}}
	for _, tc := range []struct {
		url      string
		insecure bool
		want     bool
	}{
		{"oci://charts.internal:5000/charts", false, true},
		{"oci://charts.internal/charts", false, false},
		{"oci://ghcr.io/org/charts", false, false},
		{"oci://ghcr.io/org/charts", true, true},
		{"https://charts.internal:5000", false, true},
	} {
		spec := map[string]any{"url": tc.url, "insecure": tc.insecure}
		if strings.HasPrefix(tc.url, "oci://") {
			spec["type"] = "oci"
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1",
			"kind":       "HelmRepository",
			"metadata":   map[string]any{"name": "charts", "namespace": "flux-system"},
			"spec":       spec,
		}}
		src, err := r.remoteSource(t.Context(), nil, nil, obj, "HelmRepository/flux-system/charts", sourceKind(obj))
		if err != nil {
			t.Fatal(err)
		}
		if src.Insecure != tc.want {
			t.Errorf("%s (spec.insecure %v): Insecure = %v, want %v", tc.url, tc.insecure, src.Insecure, tc.want)
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"url": "charts.example.com"}}}
	if _, err := r.remoteSource(t.Context(), nil, nil, obj, "HelmRepository/flux-system/charts", helm.HTTPRepository); err == nil {
		t.Error("a spec.url without a scheme and host was accepted")
	}
}
