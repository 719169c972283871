package render

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/kschema"
)

// kustomizeBuild runs krusty on dir with plugins off and files loadable
// from anywhere under the filesystem's root (Flux's load restrictions),
// and returns the resources in the kustomize CLI's order: the
// kustomization's sortOptions when it sets them, otherwise the legacy
// order (Namespaces and CRDs first). top is the kustomization file's
// content. A kustomize panic comes back as an error. JSON patches may copy
// at most patchCopy bytes into one object (budget.WithPatchCopyLimit).
//
// Builds run at once, sharing kustomize's OpenAPI schema (kschema). A
// kustomization that sets its own (the openapi: field) needs the schema
// alone: the top one is seen before the build; a nested one stops the
// shared build when it is read (repoFS.ownSchema), and the build runs
// again holding the schema alone.
func kustomizeBuild(fs *repoFS, dir string, top []byte, patchCopy int64) ([]*resource.Resource, error) {
	if !sets(top, "openapi") {
		done := kschema.Share()
		fs.setShared(true)
		out, err := krustyBuild(fs, dir, top, patchCopy)
		done()
		if !fs.wantsOwnSchema() {
			return out, err
		}
		fs.restart()
	}
	defer kschema.Own()()
	return krustyBuild(fs, dir, top, patchCopy)
}

// krustyBuild is kustomizeBuild's build, with the schema held.
func krustyBuild(fs *repoFS, dir string, top []byte, patchCopy int64) (out []*resource.Resource, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	// Without sortOptions, krusty would sort by re-adding every resource to
	// its resource map, which checks each against all the others: quadratic,
	// a fifth of a 1,000-object build. legacySort gives the same order
	// in O(n log n).
	own := !sets(top, "sortOptions")
	reorder := krusty.ReorderOptionUnspecified
	if own {
		reorder = krusty.ReorderOptionNone
	}
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          reorder,
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	var rm resmap.ResMap
	err = budget.WithPatchCopyLimit(patchCopy, func() error {
		var err error
		rm, err = k.Run(fs, dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	out = rm.Resources()
	if own {
		legacySort(out)
	}
	return out, nil
}

// sets reports whether a kustomization sets field (an unreadable one
// counts: kustomize says what is wrong when it builds it).
func sets(kustomization []byte, field string) bool {
	var k map[string]any
	if err := yaml.Unmarshal(kustomization, &k); err != nil {
		return true
	}
	return k[field] != nil
}

// legacyFirst and legacyLast are kustomize's default legacy order
// (api/internal/builtins SortOrderTransformer: "DO NOT CHANGE").
var (
	legacyFirst = []string{
		"Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
		"ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
		"ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service",
		"LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
		"Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
	}
	legacyLast = []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
	legacyRank = func() map[string]int {
		m := map[string]int{}
		for i, k := range legacyFirst {
			m[k] = i - len(legacyFirst)
		}
		for i, k := range legacyLast {
			m[k] = i + 1
		}
		return m
	}()
)

// legacySort orders resources as kustomize's legacy sort order does: by
// kind rank (legacyFirst, then other kinds, then legacyLast), then by
// group_version_kind (Namespaces of the core group in reverse), then by
// kind|version|group, namespace and name. Identities are unique, so the
// order is total and equals kustomize's whatever the input order.
func legacySort(rs []*resource.Resource) {
	type keyed struct {
		r   *resource.Resource
		id  resid.ResId
		gvk string // legacy group_version_kind
		key string // legacy id string
	}
	ks := make([]keyed, len(rs))
	for i, r := range rs {
		id := r.CurId()
		ks[i] = keyed{r: r, id: id, gvk: legacyGVK(id.Gvk), key: legacyID(id)}
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if !a.id.Gvk.Equals(b.id.Gvk) {
			ra, rb := legacyRank[a.id.Kind], legacyRank[b.id.Kind]
			if ra != rb {
				return ra < rb
			}
			if a.id.Kind == "Namespace" && b.id.Kind == "Namespace" && (a.id.Group == "" || b.id.Group == "") {
				return a.gvk > b.gvk
			}
			return a.gvk < b.gvk
		}
		return a.key < b.key
	})
	for i := range ks {
		rs[i] = ks[i].r
	}
}

func legacyGVK(g resid.Gvk) string {
	return orDefault(g.Group, "~G") + "_" + orDefault(g.Version, "~V") + "_" + orDefault(g.Kind, "~K")
}

func legacyID(id resid.ResId) string {
	return strings.Join([]string{id.Gvk.String(), orDefault(id.Namespace, "~X"), orDefault(id.Name, "~N")}, "|")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// NamespaceScoped reports whether objects of apiVersion and kind belong
// in a namespace, as kustomize decides when it sets one (its built-in
// Kubernetes schema); known is false for a kind the schema does not
// know (a custom resource). It shares the builds' schema (kschema).
func NamespaceScoped(apiVersion, kind string) (namespaced, known bool) {
	defer kschema.Share()()
	return openapi.IsNamespaceScoped(kyaml.TypeMeta{APIVersion: apiVersion, Kind: kind})
}
