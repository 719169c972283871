package kube_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-ci/ferry/internal/kube"
)

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: NS
stringData:
  token: canary-live-token-4e21
`

func (f *fixture) compareOpts() kube.CompareOptions {
	o := kube.DefaultCompareOptions()
	o.Target = "test"
	o.InventoryNamespace = f.invNS
	return o
}

func (f *fixture) compare(objs []*unstructured.Unstructured, opts kube.CompareOptions) *kube.Comparison {
	f.t.Helper()
	c, err := f.client.Compare(context.Background(), objs, opts)
	if err != nil {
		f.t.Fatalf("compare: %v", err)
	}
	return c
}

// state summarizes a LiveObject as the flags a caller branches on.
type state struct {
	Live, Member, Recorded, ConfigChanged, FieldsChanged, Unchanged, DryRun bool
	PartOf                                                                  string
}

func states(c *kube.Comparison) map[string]state {
	out := map[string]state{}
	for _, o := range c.Objects {
		if o.Err != nil {
			out[o.ID.String()] = state{PartOf: "error: " + o.Err.Error()}
			continue
		}
		out[o.ID.String()] = state{
			Live: o.Live != nil, Member: o.Member, Recorded: o.Recorded, ConfigChanged: o.ConfigChanged,
			FieldsChanged: o.FieldsChanged, Unchanged: o.Unchanged, DryRun: o.DryRun != nil, PartOf: o.PartOf,
		}
	}
	return out
}

func orphans(c *kube.Comparison) []string {
	var out []string
	for _, u := range c.Orphans {
		out = append(out, u.GetKind()+"/"+u.GetName())
	}
	return out
}

// Compare after a clean apply costs no dry-run except for the Secret with
// stringData; after edits it says, per object, what changed and what is
// missing, someone else's or orphaned.
func TestCompare(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	applied := f.objects(configMap("a", "1"), configMap("b", "2"), deploymentYAML, serviceYAML, secretYAML)
	opts := f.opts()
	opts.Revision = "1111111111111111111111111111111111111111"
	f.apply(applied, opts)

	inSync := state{Live: true, Member: true, Recorded: true, Unchanged: true}
	got := f.compare(applied, f.compareOpts())
	want := map[string]state{
		"ConfigMap/NS/a":         inSync,
		"ConfigMap/NS/b":         inSync,
		"Deployment.apps/NS/web": inSync,
		"Service/NS/web":         inSync,
		"Secret/NS/creds":        {Live: true, Member: true, Recorded: true, DryRun: true},
	}
	if diff := cmp.Diff(f.subMap(want), states(got)); diff != "" {
		t.Errorf("after apply (-want +got):\n%s", diff)
	}
	if got.Inventory.Revision != opts.Revision || len(got.Orphans) != 0 || got.Cluster != cp.URL() {
		t.Errorf("inventory revision %q, orphans %v, cluster %q", got.Inventory.Revision, orphans(got), got.Cluster)
	}

	// Someone scales the Deployment, deletes the Service, creates c by
	// hand; Git drops b and adds c and d, and changes a.
	if _, err := f.cs.AppsV1().Deployments(f.ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if err := f.cs.CoreV1().Services(f.ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"key": "by hand"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	render := f.objects(configMap("a", "changed"), configMap("c", "3"), configMap("d", "4"), deploymentYAML, serviceYAML, secretYAML)
	got = f.compare(render, f.compareOpts())
	want = map[string]state{
		"ConfigMap/NS/a":         {Live: true, Member: true, Recorded: true, ConfigChanged: true, DryRun: true},
		"ConfigMap/NS/c":         {Live: true, ConfigChanged: true, FieldsChanged: true, DryRun: true},
		"ConfigMap/NS/d":         {ConfigChanged: true, FieldsChanged: true},
		"Deployment.apps/NS/web": {Live: true, Member: true, Recorded: true, FieldsChanged: true, DryRun: true},
		"Service/NS/web":         {Recorded: true, FieldsChanged: true},
		"Secret/NS/creds":        {Live: true, Member: true, Recorded: true, DryRun: true},
	}
	if diff := cmp.Diff(f.subMap(want), states(got)); diff != "" {
		t.Errorf("after edits (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ConfigMap/b"}, orphans(got)); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
	for _, o := range got.Objects {
		if o.ID.Name == "web" && o.ID.Kind == "Deployment" {
			live, _, _ := unstructured.NestedInt64(o.Live.Object, "spec", "replicas")
			dry, _, _ := unstructured.NestedInt64(o.DryRun.Object, "spec", "replicas")
			if live != 5 || dry != 2 {
				t.Errorf("Deployment replicas: live %d, dry-run %d; want 5 and 2", live, dry)
			}
		}
	}
	// Nothing was written: the dry-runs left the edits in place.
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 5 {
		t.Errorf("Deployment after compare: %v, %v; want replicas still 5", d.Spec.Replicas, err)
	}

	// DryRunAll dry-runs the missing objects too (a create).
	all := f.compareOpts()
	all.DryRunAll = true
	got = f.compare(render, all)
	for _, o := range got.Objects {
		if o.DryRun == nil || o.Err != nil {
			t.Errorf("%s: DryRunAll left no dry-run (err %v)", o.ID, o.Err)
		}
	}
	if _, err := f.cs.CoreV1().Services(f.ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the dry-run created the Service")
	}
}

func (f *fixture) subMap(m map[string]state) map[string]state {
	out := map[string]state{}
	for k, v := range m {
		out[strings.ReplaceAll(k, "NS", f.ns)] = v
	}
	return out
}

// An object that belongs to another target's ApplySet is not a member, and
// its PartOf names the other set; a dry-run the server rejects stays on
// its object.
func TestCompareForeignAndRejected(t *testing.T) {
	f := newFixture(t)
	other := f.opts()
	other.Target = "other"
	f.apply(f.objects(configMap("shared", "1")), other)

	bad := f.objects(`apiVersion: v1
kind: Service
metadata:
  name: bad
  namespace: NS
spec:
  ports: [{port: 99999}]
`)
	got := f.compare(append(f.objects(configMap("shared", "1")), bad...), f.compareOpts())
	shared := got.Objects[0]
	if shared.Member || shared.Recorded || shared.PartOf == "" || shared.Live == nil {
		t.Errorf("object of another ApplySet: member %v, recorded %v, partOf %q", shared.Member, shared.Recorded, shared.PartOf)
	}
	if got.Inventory.Exists {
		t.Error("target test has an inventory, want none")
	}
	// Missing objects are not dry-run by default; with DryRunAll the
	// invalid Service's rejection is kept on it.
	all := f.compareOpts()
	all.DryRunAll = true
	got = f.compare(append(f.objects(configMap("shared", "1")), bad...), all)
	rejected := got.Objects[1]
	if rejected.Err == nil || !strings.Contains(rejected.Err.Error(), "Service/"+f.ns+"/bad") || rejected.DryRun != nil {
		t.Errorf("invalid Service: err %v, want the server's rejection naming it", rejected.Err)
	}
}

func TestCompareUnreachable(t *testing.T) {
	p := cp.Require(t)
	cfg := p.RESTConfig()
	cfg.Host = "https://127.0.0.1:1"
	c, err := kube.NewClientFromConfig(cfg, "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Compare(context.Background(), nil, kube.DefaultCompareOptions())
	if err == nil || !strings.Contains(err.Error(), "cluster https://127.0.0.1:1") {
		t.Errorf("unreachable: err = %v", err)
	}
}

// The server records ferry as the owner of a Secret's stringData, not of
// the data it becomes, so an edit of the data leaves ferry's fields as they
// were. A re-apply must still put the value back.
func TestApplyRestoresEditedStringDataSecret(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	objs := f.objects(secretYAML)
	f.apply(objs, f.opts())
	patch := `{"data":{"token":"` + "ZWRpdGVk" + `"}}` // "edited"
	if _, err := f.cs.CoreV1().Secrets(f.ns).Patch(ctx, "creds", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	again := f.apply(objs, f.opts())
	if diff := cmp.Diff(f.sub([]string{"configured Secret/NS/creds"}), actions(again)); diff != "" {
		t.Errorf("re-apply over an edited Secret (-want +got):\n%s", diff)
	}
	s, err := f.cs.CoreV1().Secrets(f.ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil || string(s.Data["token"]) != "canary-live-token-4e21" {
		t.Errorf("Secret after re-apply: %v, data restored = %v", err, err == nil && string(s.Data["token"]) == "canary-live-token-4e21")
	}
	// Unedited, it is applied but unchanged.
	third := f.apply(objs, f.opts())
	if diff := cmp.Diff(f.sub([]string{"unchanged Secret/NS/creds"}), actions(third)); diff != "" {
		t.Errorf("re-apply of an unedited Secret (-want +got):\n%s", diff)
	}
}

func TestNormalize(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": int64(3),
			"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []any{map[string]any{"manager": "ferry"}},
			"labels":      map[string]any{"app": "web"},
			"annotations": map[string]any{"deployment.kubernetes.io/revision": "2"},
		},
		"spec":   map[string]any{"replicas": int64(2)},
		"status": map[string]any{"replicas": int64(2)},
	}}
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "ns", "labels": map[string]any{"app": "web"}},
		"spec":       map[string]any{"replicas": int64(2)},
	}
	if diff := cmp.Diff(want, kube.Normalize(u).Object); diff != "" {
		t.Errorf("Normalize (-want +got):\n%s", diff)
	}
	if u.GetUID() != "u" {
		t.Error("Normalize changed its input")
	}
	if kube.Normalize(nil) != nil {
		t.Error("Normalize(nil) != nil")
	}
}
