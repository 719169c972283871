package manifest

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CRD is what a CustomResourceDefinition declares, as the readers of a
// render need it: the group and kind of its resources, their scope, and
// the versions it defines. Every package reads CRDs through it.
type CRD struct {
	Group, Kind string
	// Scope is spec.scope: Namespaced or Cluster.
	Scope    string
	Versions []string
}

// IsCRD reports a CustomResourceDefinition.
func IsCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// CRDOf reads u as a CRD; false when it is none.
func CRDOf(u *unstructured.Unstructured) (CRD, bool) {
	if !IsCRD(u) {
		return CRD{}, false
	}
	var c CRD
	c.Group, _, _ = unstructured.NestedString(u.Object, "spec", "group")
	c.Kind, _, _ = unstructured.NestedString(u.Object, "spec", "names", "kind")
	c.Scope, _, _ = unstructured.NestedString(u.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" {
			c.Versions = append(c.Versions, name)
		}
	}
	return c, true
}

// CRDs reads the CRDs among the object lists, in order.
func CRDs(lists ...[]*unstructured.Unstructured) []CRD {
	var out []CRD
	for _, objs := range lists {
		for _, o := range objs {
			if c, ok := CRDOf(o); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// Namespaced reports whether the CRD's resources belong in a namespace:
// any scope but Cluster (apiextensions v1beta1 defaulted a missing scope
// to Namespaced; v1 requires it).
func (c CRD) Namespaced() bool { return c.Scope != "Cluster" }

// APIVersions are the group/versions the CRD serves and the
// group/version/Kind of each, sorted: the APIs Helm's Capabilities see
// (a chart's .Capabilities.APIVersions.Has).
func (c CRD) APIVersions() []string {
	if c.Group == "" {
		return nil
	}
	var out []string
	for _, v := range c.Versions {
		out = append(out, c.Group+"/"+v, c.Group+"/"+v+"/"+c.Kind)
	}
	slices.Sort(out)
	return out
}
