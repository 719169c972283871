package risk

import (
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// immutableFields are the fields the API server refuses to change in
// place, by group/kind: the apply fails until the object is deleted and
// created again.
var immutableFields = map[string][][]string{
	"apps/Deployment": {{"spec", "selector"}},
	"apps/ReplicaSet": {{"spec", "selector"}},
	"apps/DaemonSet":  {{"spec", "selector"}},
	"batch/Job":       {{"spec", "selector"}, {"spec", "template"}, {"spec", "completionMode"}},
	"storage.k8s.io/StorageClass": {
		{"provisioner"}, {"parameters"}, {"reclaimPolicy"}, {"volumeBindingMode"},
	},
	"rbac.authorization.k8s.io/RoleBinding":        {{"roleRef"}},
	"rbac.authorization.k8s.io/ClusterRoleBinding": {{"roleRef"}},
	// Once established, as a CRD in Git is.
	"apiextensions.k8s.io/CustomResourceDefinition": {{"spec", "scope"}, {"spec", "names", "kind"}},
}

// statefulSetMutable are the StatefulSet spec fields Kubernetes lets
// change; a change to any other is refused.
var statefulSetMutable = []string{"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"}

// Refuses says whether the API server refuses the change from base to
// head of one object in place (an immutable field): such a change is
// never folded out of a report's sight.
func Refuses(base, head *unstructured.Unstructured) bool {
	return len(immutable("", base, head)) > 0
}

// immutable are the changes from base to head the API server refuses.
func immutable(target string, base, head *unstructured.Unstructured) []Risk {
	gvk := head.GroupVersionKind()
	key := gvk.Group + "/" + gvk.Kind
	var out []Risk
	refuse := func(path []string, why, fix string, show bool) {
		r := newRisk(target, "immutable-field", Refused, head, strings.Join(path, "."))
		if show {
			r.Base, r.Head = field(base, path), field(head, path)
		}
		r.Why, r.Fix = why, fix
		out = append(out, r)
	}
	recreate := "delete and recreate the " + gvk.Kind + " (or give it a new name), or keep the old value"
	for _, path := range immutableFields[key] {
		if changed(base, head, path) {
			refuse(path, "the API server refuses to change "+strings.Join(path, ".")+" of a "+gvk.Kind+" in place: the apply fails after the merge", recreate, true)
		}
	}
	switch key {
	case "apps/StatefulSet":
		bs, _, _ := unstructured.NestedMap(base.Object, "spec")
		hs, _, _ := unstructured.NestedMap(head.Object, "spec")
		for _, f := range sortedKeys(bs, hs) {
			if slices.Contains(statefulSetMutable, f) || reflect.DeepEqual(bs[f], hs[f]) {
				continue
			}
			refuse([]string{"spec", f}, "a StatefulSet's spec."+f+" cannot change (only "+strings.Join(statefulSetMutable, ", ")+" can): the apply fails after the merge",
				"delete the StatefulSet with --cascade=orphan so its Pods and volumes stay, then let the apply create it again", true)
		}
	case "/Service":
		for _, f := range []string{"clusterIP", "clusterIPs"} {
			bv, _, _ := unstructured.NestedFieldNoCopy(base.Object, "spec", f)
			hv, hok, _ := unstructured.NestedFieldNoCopy(head.Object, "spec", f)
			if hok && !empty(bv) && !empty(hv) && !reflect.DeepEqual(bv, hv) {
				refuse([]string{"spec", f}, "a Service's "+f+" cannot change once set: the apply fails after the merge", recreate, true)
			}
		}
	case "/PersistentVolumeClaim":
		out = append(out, claim(target, base, head)...)
	case "/ConfigMap", "/Secret":
		if on, _, _ := unstructured.NestedBool(base.Object, "immutable"); on {
			secret := gvk.Kind == "Secret"
			// stringData is written into data: the server names data.
			fields := map[string][][]string{"data": {{"data"}, {"stringData"}}, "binaryData": {{"binaryData"}}, "immutable": {{"immutable"}}}
			for _, f := range []string{"data", "binaryData", "immutable"} {
				if slices.ContainsFunc(fields[f], func(p []string) bool { return changed(base, head, p) }) {
					refuse([]string{f}, "the "+gvk.Kind+" is marked immutable: the API server refuses any change to its "+f,
						"give the "+gvk.Kind+" a new name (a generator's hash suffix does) and point its users at it", !secret)
				}
			}
		}
	case "apiextensions.k8s.io/CustomResourceDefinition":
		out = append(out, crdVersions(target, base, head)...)
	}
	return out
}

// claim is the PersistentVolumeClaim rule: only a larger storage request
// (and the volume attributes class) may change.
func claim(target string, base, head *unstructured.Unstructured) []Risk {
	var out []Risk
	bs, _, _ := unstructured.NestedMap(base.Object, "spec")
	hs, _, _ := unstructured.NestedMap(head.Object, "spec")
	for _, f := range sortedKeys(bs, hs) {
		if f == "resources" || f == "volumeAttributesClassName" || reflect.DeepEqual(bs[f], hs[f]) {
			continue
		}
		if f == "volumeName" && empty(bs[f]) {
			continue // binding fills it in
		}
		r := newRisk(target, "immutable-field", Refused, head, "spec."+f)
		r.Base, r.Head = value(bs[f], bs[f] != nil), value(hs[f], hs[f] != nil)
		r.Why = "a PersistentVolumeClaim's spec is immutable but for a larger storage request: the apply fails after the merge"
		r.Fix = "keep spec." + f + "; to move the data, make a new claim and copy it"
		out = append(out, r)
	}
	bq, _, _ := unstructured.NestedString(base.Object, "spec", "resources", "requests", "storage")
	hq, _, _ := unstructured.NestedString(head.Object, "spec", "resources", "requests", "storage")
	if b, err := resource.ParseQuantity(bq); err == nil {
		if h, err := resource.ParseQuantity(hq); err == nil && h.Cmp(b) < 0 {
			r := newRisk(target, "immutable-field", Refused, head, "spec.resources.requests.storage")
			r.Base, r.Head = bq, hq
			r.Why = "a PersistentVolumeClaim cannot shrink: the API server refuses a smaller storage request"
			r.Fix = "keep " + bq + " or more"
			out = append(out, r)
		}
	}
	return out
}

// crdVersions flags the versions a CRD drops: one that was the storage
// version at base is in status.storedVersions, and the API server
// refuses a spec.versions without it.
func crdVersions(target string, base, head *unstructured.Unstructured) []Risk {
	hv := map[string]bool{}
	heads, _, _ := unstructured.NestedSlice(head.Object, "spec", "versions")
	for _, v := range heads {
		if m, ok := v.(map[string]any); ok {
			name, _ := m["name"].(string)
			hv[name] = true
		}
	}
	var out []Risk
	bases, _, _ := unstructured.NestedSlice(base.Object, "spec", "versions")
	for _, v := range bases {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if hv[name] {
			continue
		}
		if storage, _ := m["storage"].(bool); storage {
			r := newRisk(target, "crd-version-removed", Refused, head, "spec.versions")
			r.Base, r.Head = name, ""
			r.Why = "version " + name + " was the storage version, so it is in status.storedVersions: the API server refuses a CRD that drops it"
			r.Fix = "keep " + name + " served: false for one release, migrate the stored objects, then remove it from status.storedVersions"
			out = append(out, r)
			continue
		}
		r := newRisk(target, "crd-version-removed", Warning, head, "spec.versions")
		r.Base = name
		r.Why = "clients and manifests that still use " + name + " stop working"
		r.Fix = "check that nothing applies or reads " + name + " any more"
		out = append(out, r)
	}
	return out
}

// changed says whether the field at path differs (set on one side only
// counts).
func changed(base, head *unstructured.Unstructured, path []string) bool {
	bv, bok, _ := unstructured.NestedFieldNoCopy(base.Object, path...)
	hv, hok, _ := unstructured.NestedFieldNoCopy(head.Object, path...)
	return bok != hok || !reflect.DeepEqual(bv, hv)
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	}
	return false
}

// sortedKeys are the keys of both maps, sorted.
func sortedKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// field is the value at path of o, as value gives it.
func field(o *unstructured.Unstructured, path []string) string {
	v, ok, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return value(v, ok)
}
