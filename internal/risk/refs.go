package risk

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reference is an object a Pod template needs: kind (ConfigMap, Secret,
// ServiceAccount, PersistentVolumeClaim), name, and where it is named.
type reference struct {
	kind, name, field string
}

// podSpecPath is where a workload kind holds its Pod spec.
var podSpecPath = map[string][]string{
	"/Pod":             {"spec"},
	"apps/Deployment":  {"spec", "template", "spec"},
	"apps/StatefulSet": {"spec", "template", "spec"},
	"apps/DaemonSet":   {"spec", "template", "spec"},
	"apps/ReplicaSet":  {"spec", "template", "spec"},
	"batch/Job":        {"spec", "template", "spec"},
	"batch/CronJob":    {"spec", "jobTemplate", "spec", "template", "spec"},
}

// podSpec is o's Pod spec, nil when o is no workload.
func podSpec(o *unstructured.Unstructured) map[string]any {
	gvk := o.GroupVersionKind()
	path, ok := podSpecPath[gvk.Group+"/"+gvk.Kind]
	if !ok {
		return nil
	}
	spec, _, _ := unstructured.NestedMap(o.Object, path...)
	return spec
}

// references are the required objects o's Pod spec names (optional
// ones, and the default ServiceAccount, left out).
func references(o *unstructured.Unstructured) []reference {
	spec := podSpec(o)
	if spec == nil {
		return nil
	}
	var out []reference
	add := func(kind, name, field string, optional any) {
		if name == "" || optional == true {
			return
		}
		out = append(out, reference{kind, name, field})
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	if sa := str(spec, "serviceAccountName"); sa != "" && sa != "default" {
		add("ServiceAccount", sa, "serviceAccountName", nil)
	}
	for _, s := range maps(spec["imagePullSecrets"]) {
		add("Secret", str(s, "name"), "imagePullSecrets", nil)
	}
	for _, v := range maps(spec["volumes"]) {
		if c, ok := v["configMap"].(map[string]any); ok {
			add("ConfigMap", str(c, "name"), "volumes."+str(v, "name"), c["optional"])
		}
		if s, ok := v["secret"].(map[string]any); ok {
			add("Secret", str(s, "secretName"), "volumes."+str(v, "name"), s["optional"])
		}
		if c, ok := v["persistentVolumeClaim"].(map[string]any); ok {
			add("PersistentVolumeClaim", str(c, "claimName"), "volumes."+str(v, "name"), nil)
		}
		if p, ok := v["projected"].(map[string]any); ok {
			for _, src := range maps(p["sources"]) {
				if c, ok := src["configMap"].(map[string]any); ok {
					add("ConfigMap", str(c, "name"), "volumes."+str(v, "name"), c["optional"])
				}
				if s, ok := src["secret"].(map[string]any); ok {
					add("Secret", str(s, "name"), "volumes."+str(v, "name"), s["optional"])
				}
			}
		}
	}
	for _, list := range []string{"initContainers", "containers"} {
		for _, c := range maps(spec[list]) {
			where := list + "." + str(c, "name")
			for _, e := range maps(c["envFrom"]) {
				if r, ok := e["configMapRef"].(map[string]any); ok {
					add("ConfigMap", str(r, "name"), where+".envFrom", r["optional"])
				}
				if r, ok := e["secretRef"].(map[string]any); ok {
					add("Secret", str(r, "name"), where+".envFrom", r["optional"])
				}
			}
			for _, e := range maps(c["env"]) {
				vf, _ := e["valueFrom"].(map[string]any)
				if r, ok := vf["configMapKeyRef"].(map[string]any); ok {
					add("ConfigMap", str(r, "name"), where+".env."+str(e, "name"), r["optional"])
				}
				if r, ok := vf["secretKeyRef"].(map[string]any); ok {
					add("Secret", str(r, "name"), where+".env."+str(e, "name"), r["optional"])
				}
			}
		}
	}
	return out
}

func maps(v any) []map[string]any {
	list, _ := v.([]any)
	var out []map[string]any
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// dangling flags the references of head's Pod spec to objects nothing
// provides at head, when the change makes them dangle: the reference is
// new (base did not have it), or the target held the object at base
// and no longer does. The Pods do not start. A reference that dangled
// before the change is not the change's risk.
func dangling(target string, base, head *unstructured.Unstructured, provided, hadOwn func(kind, namespace, name string) bool) []Risk {
	ns := head.GetNamespace()
	if ns == "" {
		return nil
	}
	var had []reference
	if base != nil {
		had = references(base)
	}
	var out []Risk
	seen := map[reference]bool{}
	for _, ref := range references(head) {
		key := reference{kind: ref.kind, name: ref.name}
		isNew := !slices.ContainsFunc(had, func(h reference) bool { return h.kind == ref.kind && h.name == ref.name })
		if seen[key] || provided(ref.kind, ns, ref.name) || !isNew && !hadOwn(ref.kind, ns, ref.name) {
			continue
		}
		seen[key] = true
		r := newRisk(target, "dangling-reference", Warning, head, ref.field)
		r.Head = ref.kind + "/" + ns + "/" + ref.name
		r.ID = "dangling-reference:" + r.Object + ":" + ref.kind + "/" + ref.name
		r.Why = "no render of the cluster holds " + r.Head + ": the Pods will not start until something creates it"
		if !isNew {
			r.Why = "the change removes " + r.Head + ", which it still references: new Pods will not start"
		}
		r.Fix = "add it to Git, make it optional, or check that the cluster has it (ferry diff --live)"
		out = append(out, r)
	}
	return out
}

// Index says whether objs hold an object, or what makes it: a Secret is
// also provided by an ExternalSecret (its target name), a SealedSecret or
// a cert-manager Certificate (its secretName).
func Index(objs []*unstructured.Unstructured) func(kind, namespace, name string) bool {
	has := map[reference]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		has[reference{kind: o.GetKind(), name: ns + "/" + o.GetName()}] = true
		switch o.GetKind() {
		case "ExternalSecret":
			name, _, _ := unstructured.NestedString(o.Object, "spec", "target", "name")
			if name == "" {
				name = o.GetName()
			}
			has[reference{kind: "Secret", name: ns + "/" + name}] = true
		case "SealedSecret":
			has[reference{kind: "Secret", name: ns + "/" + o.GetName()}] = true
		case "Certificate":
			if name, _, _ := unstructured.NestedString(o.Object, "spec", "secretName"); name != "" {
				has[reference{kind: "Secret", name: ns + "/" + name}] = true
			}
		}
	}
	return func(kind, namespace, name string) bool {
		return has[reference{kind: kind, name: namespace + "/" + name}]
	}
}

// ImageUse is an image a Pod spec runs, and the container that runs it.
type ImageUse struct {
	Field, Ref string
}

// NewImages are the images head's Pod spec runs that base's (nil: an
// added object) did not.
func NewImages(base, head *unstructured.Unstructured) []ImageUse {
	had := map[string]bool{}
	if base != nil {
		for _, u := range images(base) {
			had[u.Ref] = true
		}
	}
	var out []ImageUse
	for _, u := range images(head) {
		if !had[u.Ref] {
			had[u.Ref] = true
			out = append(out, u)
		}
	}
	return out
}

// images are the images of o's Pod spec, by container.
func images(o *unstructured.Unstructured) []ImageUse {
	spec := podSpec(o)
	if spec == nil {
		return nil
	}
	var out []ImageUse
	for _, list := range []string{"initContainers", "containers"} {
		for _, c := range maps(spec[list]) {
			name, _ := c["name"].(string)
			if img, _ := c["image"].(string); img != "" {
				out = append(out, ImageUse{Field: list + "." + name + ".image", Ref: img})
			}
		}
	}
	return out
}

// MissingImage is the risk of an image its registry does not have.
func MissingImage(target string, head *unstructured.Unstructured, use ImageUse) Risk {
	r := newRisk(target, "image-missing", Warning, head, use.Field)
	r.Head = use.Ref
	r.ID = "image-missing:" + r.Object + ":" + use.Ref
	r.Why = "the registry has no " + use.Ref + " (its manifest answered 404): the Pods will not start (ImagePullBackOff)"
	r.Fix = "push the image first, or fix the tag"
	r.From = "registry"
	return r
}
