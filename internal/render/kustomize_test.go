package render

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
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
		if got := sets([]byte(in), "sortOptions"); got != want {
			t.Errorf("sets(%q, sortOptions) = %v, want %v", in, got, want)
		}
	}
}

// TestObjectJSONMatchesKustomize: decoding the node gives exactly the JSON
// of kustomize's own RNode.MarshalJSON, on every YAML scalar form a
// manifest can hold, and on every example's render.
func TestObjectJSONMatchesKustomize(t *testing.T) {
	docs := []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  yes: yes\n  on: on\n  n: null\n  t: ~\n  e: ''\n",
		"apiVersion: v1\nkind: X\nmetadata: {name: b}\nspec:\n  int: 42\n  neg: -7\n  big: 9223372036854775807\n  huge: 18446744073709551616\n  oct: 0o17\n  old: 017\n  hex: 0x1F\n  f: 1.0\n  exp: 1e3\n  inf: .inf\n  date: 2001-12-14\n  ts: 2001-12-14t21:59:43.10-05:00\n  str: \"2001-12-14\"\n  bin: !!binary aGVsbG8=\n  bool: true\n  quoted: 'true'\n",
		"apiVersion: v1\nkind: X\nmetadata:\n  name: c\n  labels: &l {app: web, tier: \"1\"}\nspec:\n  selector: *l\n  list: [1, two, 3.5, null, {k: v}]\n  block: |\n    line one\n    line two\n  folded: >-\n    a\n    b\n  unicode: \"caf\\u00e9 \\U0001F600\"\n",
		"apiVersion: v1\nkind: X\nmetadata:\n  name: e\nspec:\n  1: one\n  2.5: two\n  true: t\n",
		"apiVersion: v1\nkind: X\nmetadata:\n  name: d\nspec:\n  <<: {merged: 1}\n  own: 2\n  empty_map: {}\n  empty_list: []\n  nested: [[1, 2], [3]]\n",
	}
	var nodes []*kyaml.RNode
	for _, d := range docs {
		n, err := kyaml.Parse(d)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	for _, ex := range []string{"gpu-cluster/apps/stage", "gpu-cluster/infrastructure/stage", "single-app/shop/overlays/production", "fleet/apps/staging"} {
		rm, err := krusty.MakeKustomizer(&krusty.Options{Reorder: krusty.ReorderOptionNone, LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}).
			Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "examples", ex))
		if err != nil {
			t.Fatalf("%s: %v", ex, err)
		}
		if rm.Size() == 0 {
			t.Fatalf("%s renders nothing", ex)
		}
		for _, r := range rm.Resources() {
			nodes = append(nodes, &r.RNode)
		}
	}
	for _, n := range nodes {
		want, werr := n.MarshalJSON()
		got, gerr := objectJSON(n)
		if (werr != nil) != (gerr != nil) || string(want) != string(got) {
			t.Errorf("%s:\nkustomize %s (%v)\nferry     %s (%v)", n.GetName(), want, werr, got, gerr)
		}
	}
}
