package render

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestLegacySortMatchesKustomize: ferry's legacy sort gives kustomize's
// own order (krusty with its default reordering) on shuffled renders of
// every kind of the legacy list, others, core and non-core Namespaces,
// one kind in several groups and versions, names in several namespaces.
func TestLegacySortMatchesKustomize(t *testing.T) {
	kinds := []struct{ apiVersion, kind string }{
		{"v1", "Namespace"}, {"example.com/v1", "Namespace"}, {"v1", "ConfigMap"}, {"v1", "Secret"},
		{"v1", "Service"}, {"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"batch/v1", "CronJob"},
		{"batch/v1", "Job"}, {"rbac.authorization.k8s.io/v1", "Role"}, {"rbac.authorization.k8s.io/v1", "ClusterRole"},
		{"rbac.authorization.k8s.io/v1", "RoleBinding"}, {"apiextensions.k8s.io/v1", "CustomResourceDefinition"},
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"},
		{"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"},
		{"v1", "ServiceAccount"}, {"v1", "PersistentVolumeClaim"}, {"policy/v1", "PodDisruptionBudget"},
		{"example.com/v1", "Widget"}, {"example.com/v2", "Widget"}, {"other.io/v1", "Widget"}, {"v1", "Widget"},
		{"networking.k8s.io/v1", "Ingress"}, {"autoscaling/v2", "HorizontalPodAutoscaler"},
	}
	// kustomize ignores the namespace of the cluster-scoped kinds it knows.
	cluster := map[string]bool{"Namespace": true, "ClusterRole": true, "CustomResourceDefinition": true,
		"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true}
	var docs []string
	for _, k := range kinds {
		namespaces := []string{"", "a", "b"}
		if cluster[k.kind] {
			namespaces = []string{""}
		}
		for _, ns := range namespaces {
			for _, name := range []string{"x", "y-1", "Z"} {
				meta := "  name: " + name + "\n"
				if ns != "" {
					meta += "  namespace: " + ns + "\n"
				}
				docs = append(docs, fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n%s", k.apiVersion, k.kind, meta))
			}
		}
	}
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 1))
		r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		fs := filesys.MakeFsInMemory()
		if err := fs.WriteFile("/app/all.yaml", []byte(strings.Join(docs, "---\n"))); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile("/app/kustomization.yaml", []byte("resources:\n- all.yaml\n")); err != nil {
			t.Fatal(err)
		}
		build := func(o krusty.ReorderOption) []*resource.Resource {
			t.Helper()
			rm, err := krusty.MakeKustomizer(&krusty.Options{Reorder: o, LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}).Run(fs, "/app")
			if err != nil {
				t.Fatal(err)
			}
			return rm.Resources()
		}
		want := ids(build(krusty.ReorderOptionUnspecified))
		mine := build(krusty.ReorderOptionNone)
		if cmp.Equal(want, ids(mine)) {
			t.Fatalf("seed %d: the input is already in kustomize's order; the test shows nothing", seed)
		}
		legacySort(mine)
		if d := cmp.Diff(want, ids(mine)); d != "" {
			t.Errorf("seed %d: order (-kustomize +ferry):\n%s", seed, d)
		}
	}
}

func ids(rs []*resource.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.CurId().String()
	}
	return out
}

func TestSetsSortOptions(t *testing.T) {
	for in, want := range map[string]bool{
		"resources: [a.yaml]\n":                    false,
		"sortOptions:\n  order: fifo\n":            true,
		"sortOptions:\n  order: legacy\n":          true,
		"resources: [\n":                           true, // unreadable: kustomize's turn
		"apiVersion: kustomize.config.k8s.io/v1\n": false,
	} {
		if got := setsSortOptions([]byte(in)); got != want {
			t.Errorf("setsSortOptions(%q) = %v, want %v", in, got, want)
		}
	}
}
