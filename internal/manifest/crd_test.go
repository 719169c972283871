package manifest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
)

func TestCRDs(t *testing.T) {
	parse := func(s string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	widgets := parse(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1}, {name: v1beta1}, {served: true}]
`)
	gadgets := parse(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v2}]
`)
	other := parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
	lookalike := parse("apiVersion: example.com/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {group: g}\n")

	got := manifest.CRDs([]*unstructured.Unstructured{other, widgets}, []*unstructured.Unstructured{lookalike, gadgets})
	want := []manifest.CRD{
		{Group: "example.com", Kind: "Widget", Scope: "Cluster", Versions: []string{"v1", "v1beta1"}},
		{Group: "example.com", Kind: "Gadget", Scope: "Namespaced", Versions: []string{"v2"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("CRDs (-want +got):\n%s", d)
	}
	if got[0].Namespaced() || !got[1].Namespaced() || !(manifest.CRD{}).Namespaced() {
		t.Errorf("Namespaced: Cluster scope %v, Namespaced %v, none %v; want false, true, true", got[0].Namespaced(), got[1].Namespaced(), (manifest.CRD{}).Namespaced())
	}
	if d := cmp.Diff([]string{"example.com/v1", "example.com/v1/Widget", "example.com/v1beta1", "example.com/v1beta1/Widget"}, got[0].APIVersions()); d != "" {
		t.Errorf("APIVersions (-want +got):\n%s", d)
	}
	if v := (manifest.CRD{Kind: "X", Versions: []string{"v1"}}).APIVersions(); v != nil {
		t.Errorf("APIVersions without a group = %v, want none", v)
	}
	if _, ok := manifest.CRDOf(other); ok {
		t.Error("a ConfigMap read as a CRD")
	}
}
