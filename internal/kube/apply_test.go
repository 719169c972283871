package kube_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
)

// fixture is one test's namespace pair (one for the target's objects, one
// for its inventory) and clients.
type fixture struct {
	t      *testing.T
	ns     string
	invNS  string
	client *kube.Client
	cs     kubernetes.Interface
	dyn    dynamic.Interface
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	p := cp.Require(t)
	c, err := kube.NewClientFromConfig(p.RESTConfig(), "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(p.RESTConfig())
	return &fixture{t: t, ns: p.Namespace(t), invNS: p.Namespace(t), client: c, cs: cs, dyn: dyn}
}

func (f *fixture) opts() kube.ApplyOptions {
	o := kube.DefaultApplyOptions()
	o.Target = "test"
	o.InventoryNamespace = f.invNS
	o.Lock.Wait = 10 * time.Second
	o.Timeout = 30 * time.Second
	return o
}

// objects parses YAML documents, with NS replaced by the fixture's namespace.
func (f *fixture) objects(docs ...string) []*unstructured.Unstructured {
	f.t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(strings.ReplaceAll(d, "NS", f.ns)), &m); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

func (f *fixture) apply(objs []*unstructured.Unstructured, opts kube.ApplyOptions) *kube.ChangeSet {
	f.t.Helper()
	cs, err := f.client.Apply(context.Background(), objs, opts)
	if err != nil {
		f.t.Fatalf("apply: %v", err)
	}
	return cs
}

// actions renders a change set as "action Kind/ns/name" lines, sorted.
func actions(cs *kube.ChangeSet) []string {
	var out []string
	for _, c := range cs.Changes {
		out = append(out, string(c.Action)+" "+c.Object.String())
	}
	sort.Strings(out)
	return out
}

// snapshot lists the ConfigMaps, Services and Deployments of the test
// namespace with their resource versions: equal snapshots mean nothing was
// written or deleted.
func (f *fixture) snapshot() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "services"}, {Group: "apps", Version: "v1", Resource: "deployments"},
	} {
		l, err := f.dyn.Resource(gvr).Namespace(f.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, u := range l.Items {
			if u.GetName() == "kube-root-ca.crt" {
				continue
			}
			out[manifest.IDOf(&u).String()] = u.GetResourceVersion()
		}
	}
	return out
}

func configMap(name string, data string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: NS\ndata:\n  key: %q\n", name, data)
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: NS
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
`

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: NS
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

func TestApplyReapplyPrune(t *testing.T) {
	f := newFixture(t)
	protected := strings.Replace(configMap("protected", "p"), "metadata:\n", "metadata:\n  annotations:\n    ferry.dev/prune: disabled\n", 1)
	fluxProtected := strings.Replace(configMap("flux-protected", "p"), "metadata:\n", "metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)
	all := f.objects(configMap("a", "1"), configMap("b", "2"), protected, fluxProtected, deploymentYAML, serviceYAML)
	opts := f.opts()
	opts.Prune = true
	opts.Revision = "1111111111111111111111111111111111111111"

	first := f.apply(all, opts)
	want := []string{
		"created ConfigMap/NS/a", "created ConfigMap/NS/b", "created ConfigMap/NS/flux-protected", "created ConfigMap/NS/protected",
		"created Deployment.apps/NS/web", "created Service/NS/web",
	}
	if diff := cmp.Diff(f.sub(want), actions(first)); diff != "" {
		t.Fatalf("first apply (-want +got):\n%s", diff)
	}

	before := f.snapshot()
	second := f.apply(all, opts)
	for _, c := range second.Changes {
		if c.Action != kube.Unchanged {
			t.Errorf("re-apply: %s %s, want unchanged", c.Action, c.Object)
		}
	}
	if len(second.Changes) != len(all) {
		t.Errorf("re-apply reported %d objects, want %d", len(second.Changes), len(all))
	}
	if diff := cmp.Diff(before, f.snapshot()); diff != "" {
		t.Errorf("re-apply wrote objects (-before +after):\n%s", diff)
	}

	// Someone changes a field ferry owns: the next apply puts it back.
	_, err := f.cs.AppsV1().Deployments(f.ns).Patch(context.Background(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	// ferry does not take it silently: the edit's manager owns the field now.
	_, err = f.client.Apply(context.Background(), all, opts)
	if err == nil || !strings.Contains(err.Error(), `.spec.replicas (conflict with "kubectl-edit"`) {
		t.Fatalf("apply over an edited field: err = %v, want a conflict naming field and manager", err)
	}
	forced := opts
	forced.ForceConflicts = true
	third := f.apply(all, forced)
	if diff := cmp.Diff(f.sub([]string{"configured Deployment.apps/NS/web"}), filter(actions(third), "unchanged")); diff != "" {
		t.Errorf("apply after an edit (-want +got):\n%s", diff)
	}
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas after re-apply = %v (%v), want 2", d.Spec.Replicas, err)
	}

	// a, and both protected ConfigMaps, leave the render.
	rest := f.objects(configMap("b", "2"), deploymentYAML, serviceYAML)
	fourth := f.apply(rest, opts)
	want = []string{
		"pruned ConfigMap/NS/a",
		"skipped ConfigMap/NS/flux-protected", "skipped ConfigMap/NS/protected",
		"unchanged ConfigMap/NS/b", "unchanged Deployment.apps/NS/web", "unchanged Service/NS/web",
	}
	if diff := cmp.Diff(f.sub(want), actions(fourth)); diff != "" {
		t.Errorf("apply after removal (-want +got):\n%s", diff)
	}
	if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "a", metav1.GetOptions{}); err == nil {
		t.Error("ConfigMap a still exists after prune")
	}
	for _, name := range []string{"protected", "flux-protected"} {
		if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("protected ConfigMap %s was deleted: %v", name, err)
		}
	}

	inv, err := f.client.ReadInventory(context.Background(), "test", f.invNS)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Revision != opts.Revision {
		t.Errorf("inventory revision %q, want %q", inv.Revision, opts.Revision)
	}
	var gks []string
	for _, gk := range inv.GroupKinds {
		gks = append(gks, gk.String())
	}
	sort.Strings(gks)
	if diff := cmp.Diff([]string{"ConfigMap", "Deployment.apps", "Service"}, gks); diff != "" {
		t.Errorf("inventory group kinds (-want +got):\n%s", diff)
	}
	if !contains(inv.Namespaces, f.ns) {
		t.Errorf("inventory namespaces %v lack %s", inv.Namespaces, f.ns)
	}
}

// sub replaces NS in expectations with the fixture's namespace.
func (f *fixture) sub(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.ReplaceAll(l, "NS", f.ns)
	}
	sort.Strings(out)
	return out
}

func filter(lines []string, dropPrefix string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, dropPrefix) {
			out = append(out, l)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// kubectl, reading ferry's ApplySet parent, agrees on which objects are
// members: its server-side dry-run prune of the set, given all but two
// members, names exactly those two, one of them in an additional namespace.
func TestKubectlAgreesWithInventory(t *testing.T) {
	f := newFixture(t)
	// kubectl needs a namespaced parent's namespace in -n, and then refuses
	// objects of other namespaces in its input: the members it is given live
	// beside the parent; the one elsewhere is found through the parent's
	// additional-namespaces annotation.
	f.ns = f.invNS
	other := cp.Namespace(t)
	elsewhere := strings.ReplaceAll(configMap("elsewhere", "3"), "namespace: NS", "namespace: "+other)
	f.apply(f.objects(configMap("keep", "1"), configMap("drop", "2"), deploymentYAML, elsewhere), f.opts())

	inv, err := f.client.ReadInventory(context.Background(), "test", f.invNS)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(inv.Namespaces, other) {
		t.Fatalf("inventory namespaces %v lack %s", inv.Namespaces, other)
	}
	// kubectl only touches ApplySets whose tooling annotation names it; the
	// membership it computes comes from the labels and annotations ferry
	// wrote, which is what this test checks.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"kubectl/v1.37.2"}}}`, kube.AnnotationTooling)
	if _, err := f.cs.CoreV1().Secrets(f.invNS).Patch(context.Background(), inv.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, o := range f.objects(configMap("keep", "1"), deploymentYAML) {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	file := filepath.Join(t.TempDir(), "keep.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cp.KubectlPath(), "--kubeconfig", cp.KubeconfigPath(), "apply", "--server-side", "--force-conflicts",
		"-n", f.invNS, "--applyset=secrets/"+inv.Name, "--prune", "--dry-run=server", "-f", file)
	cmd.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	var pruned []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "pruned") {
			pruned = append(pruned, strings.Fields(line)[0])
		}
	}
	sort.Strings(pruned)
	if diff := cmp.Diff([]string{"configmap/drop", "configmap/elsewhere"}, pruned); diff != "" {
		t.Errorf("kubectl's prune set (-want +got):\n%s\nkubectl said:\n%s", diff, out)
	}
}

// crdYAML is a namespaced CRD of kind in group, served and stored as v1,
// with schema (a YAML flow mapping) as its openAPIV3Schema.
func crdYAML(group, kind, schema string) string {
	lower := strings.ToLower(kind)
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]ss.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[3]ss, singular: %[3]s, kind: %[2]s, listKind: %[2]sList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: %[4]s
`, group, kind, lower, schema)
}

func TestCRDAndCustomResourceInOneRun(t *testing.T) {
	f := newFixture(t)
	group := strings.ReplaceAll(f.ns, "-", "") + ".example.com"
	crd := crdYAML(group, "Widget", "{type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}")
	cr := fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: NS\nspec:\n  size: 3\n", group)
	cs := f.apply(f.objects(crd, cr), f.opts())
	want := f.sub([]string{"created CustomResourceDefinition.apiextensions.k8s.io/widgets." + group, "created Widget." + group + "/NS/w1"})
	if diff := cmp.Diff(want, actions(cs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	again := f.apply(f.objects(crd, cr), f.opts())
	if n := again.Count(kube.Unchanged); n != 2 {
		t.Errorf("re-apply: %v, want 2 unchanged", actions(again))
	}

	// A custom resource failing its CRD's schema stops the run in preflight.
	bad := strings.Replace(cr, "size: 3", "size: not-a-number", 1)
	before := f.snapshot()
	_, err := f.client.Apply(context.Background(), f.objects(crd, bad, configMap("late", "x")), f.opts())
	if err == nil || !strings.Contains(err.Error(), "Widget."+group+"/"+f.ns+"/w1") {
		t.Errorf("schema failure: err = %v, want it to name the Widget", err)
	}
	if diff := cmp.Diff(before, f.snapshot()); diff != "" {
		t.Errorf("objects written despite the failure (-before +after):\n%s", diff)
	}

	// The same with a CRD the cluster does not have yet: the custom
	// resource is checked against the rendered CRD's schema, before the CRD
	// or anything else is written.
	group2 := "new" + group
	crd2 := strings.ReplaceAll(crd, group, group2)
	bad2 := strings.ReplaceAll(bad, group, group2)
	_, err = f.client.Apply(context.Background(), f.objects(crd2, bad2, configMap("late", "x")), f.opts())
	if err == nil || !strings.Contains(err.Error(), "Widget."+group2+"/"+f.ns+"/w1: invalid against its CRD's schema") {
		t.Errorf("schema failure of a new CRD: err = %v", err)
	}
	crdClient := f.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crdClient.Get(context.Background(), "widgets."+group2, metav1.GetOptions{}); err == nil {
		t.Error("the new CRD was written although its custom resource is invalid")
	}
}

func TestBadInputsWriteNothing(t *testing.T) {
	f := newFixture(t)
	base := f.objects(configMap("a", "1"), configMap("b", "2"), deploymentYAML)
	opts := f.opts()
	opts.Revision = "2222222222222222222222222222222222222222"
	f.apply(base, opts)

	// Another field manager owns replicas now.
	_, err := f.cs.AppsV1().Deployments(f.ns).Patch(context.Background(), "web", types.ApplyPatchType,
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":7}}`),
		metav1.PatchOptions{FieldManager: "hpa-like", Force: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		objs   []*unstructured.Unstructured
		mutate func(o *kube.ApplyOptions)
		want   []string
	}{
		{
			name: "kind the cluster does not know",
			objs: append(f.objects("apiVersion: nowhere.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: NS\n"), base...),
			want: []string{"Gadget.nowhere.example.com/" + f.ns + "/g", "not known to the cluster"},
		},
		{
			name: "object failing schema validation",
			objs: append(f.objects(strings.Replace(serviceYAML, "port: 80", "port: eighty", 1)), base...),
			want: []string{"Service/" + f.ns + "/web"},
		},
		{
			name:   "empty render over a non-empty inventory",
			objs:   nil,
			mutate: func(o *kube.ApplyOptions) { o.Prune = true },
			want:   []string{"prune would delete 3 of the 3 objects", "--allow-mass-prune"},
		},
		{
			name: "field conflict without force",
			objs: f.objects(configMap("a", "1"), configMap("b", "2"), strings.Replace(deploymentYAML, "replicas: 2", "replicas: 3", 1)),
			want: []string{"Deployment.apps/" + f.ns + "/web", "field conflict", "hpa-like", ".spec.replicas", "--force-conflicts"},
		},
		{
			name: "older revision over a newer one",
			objs: base,
			mutate: func(o *kube.ApplyOptions) {
				o.Revision = "1111111111111111111111111111111111111111"
				o.IsAncestor = func(a, b string) (bool, error) { return a == "1111111111111111111111111111111111111111", nil }
			},
			want: []string{"older than 222222222222", "--allow-rollback"},
		},
		{
			name: "namespace that neither exists nor is rendered",
			objs: append(f.objects(strings.ReplaceAll(configMap("x", "1"), "namespace: NS", "namespace: no-such-ns-"+f.ns)), base...),
			want: []string{"no-such-ns-" + f.ns, "does not exist"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.mutate != nil {
				tc.mutate(&o)
			}
			before := f.snapshot()
			invBefore, _ := f.client.ReadInventory(context.Background(), "test", f.invNS)
			_, err := f.client.Apply(context.Background(), tc.objs, o)
			if err == nil {
				t.Fatal("apply succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if diff := cmp.Diff(before, f.snapshot()); diff != "" {
				t.Errorf("objects written or deleted (-before +after):\n%s", diff)
			}
			invAfter, _ := f.client.ReadInventory(context.Background(), "test", f.invNS)
			if invAfter.Revision != invBefore.Revision {
				t.Errorf("inventory revision changed: %s -> %s", invBefore.Revision, invAfter.Revision)
			}
		})
	}
}

func TestUnreachableAndBadKubeconfig(t *testing.T) {
	p := cp.Require(t)
	cfg := p.RESTConfig()
	cfg.Host = "https://127.0.0.1:1"
	c, err := kube.NewClientFromConfig(cfg, "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := kube.DefaultApplyOptions()
	opts.Target = "test"
	_, err = c.Apply(context.Background(), nil, opts)
	if err == nil || !strings.Contains(err.Error(), "cluster https://127.0.0.1:1") {
		t.Errorf("unreachable: err = %v", err)
	}
	_, err = kube.NewClient(kube.ClientOptions{KubeconfigData: []byte("this: [is not a kubeconfig")})
	if err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("bad kubeconfig content: err = %v", err)
	}
	_, err = kube.NewClient(kube.ClientOptions{Kubeconfig: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing kubeconfig file: err = %v", err)
	}
	_, err = kube.NewClient(kube.ClientOptions{KubeconfigData: p.Kubeconfig(), Context: "nope"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown context: err = %v", err)
	}
}

func TestLeaseSerializesRuns(t *testing.T) {
	f := newFixture(t)
	opts := f.opts()
	lock, err := f.client.Acquire(context.Background(), "test", f.invNS, kube.LockOptions{Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	held := opts
	held.Lock.Wait = 500 * time.Millisecond
	_, err = f.client.Apply(context.Background(), f.objects(configMap("a", "1")), held)
	var le *kube.LockedError
	if !errors.As(err, &le) || le.Target != "test" {
		t.Fatalf("apply while the lease is held: err = %v, want a LockedError", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Two runs at once both finish, one after the other.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.client.Apply(context.Background(), f.objects(configMap("a", fmt.Sprint(i)), configMap("b", "x")), opts)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	cm, err := f.cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil || (cm.Data["key"] != "0" && cm.Data["key"] != "1") {
		t.Errorf("ConfigMap a = %v (%v)", cm, err)
	}
}

func TestWaitNamesWhatIsNotReady(t *testing.T) {
	f := newFixture(t)
	opts := f.opts()
	opts.Wait = true
	opts.Timeout = 2 * time.Second
	_, err := f.client.Apply(context.Background(), f.objects(configMap("a", "1"), deploymentYAML), opts)
	var nr *kube.NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("err = %v, want NotReadyError (no controllers run, so the Deployment never becomes ready)", err)
	}
	if len(nr.Objects) != 1 || nr.Objects[0].Object.String() != "Deployment.apps/"+f.ns+"/web" {
		t.Errorf("not ready: %+v, want only the Deployment", nr.Objects)
	}
	// Only ConfigMaps: ready at once.
	opts.Timeout = 10 * time.Second
	if _, err := f.client.Apply(context.Background(), f.objects(configMap("a", "1"), configMap("b", "1")), func() kube.ApplyOptions { o := opts; o.Target = "ready"; return o }()); err != nil {
		t.Errorf("ConfigMaps only: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	objs := f.objects(configMap("a", "1"), deploymentYAML)
	opts := f.opts()
	opts.DryRun = true
	cs := f.apply(objs, opts)
	if diff := cmp.Diff(f.sub([]string{"created ConfigMap/NS/a", "created Deployment.apps/NS/web"}), actions(cs)); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if !cs.DryRun {
		t.Error("change set not marked as a dry run")
	}
	if got := f.snapshot(); len(got) != 0 {
		t.Errorf("dry run wrote %v", got)
	}
	inv, err := f.client.ReadInventory(context.Background(), "test", f.invNS)
	if err != nil || inv.Exists {
		t.Errorf("dry run wrote the inventory (%v)", err)
	}

	// After a real apply, a dry run with one change reports just that.
	opts.DryRun = false
	f.apply(objs, opts)
	opts.DryRun = true
	before := f.snapshot()
	cs = f.apply(f.objects(configMap("a", "2"), deploymentYAML), opts)
	if diff := cmp.Diff(f.sub([]string{"configured ConfigMap/NS/a", "unchanged Deployment.apps/NS/web"}), actions(cs)); diff != "" {
		t.Errorf("dry run of a change (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, f.snapshot()); diff != "" {
		t.Errorf("dry run wrote (-before +after):\n%s", diff)
	}
}

// An API error about one object (a conflict, a rejection) must not stop the
// others: only a broken connection does. Every failing object is reported.
func TestEveryRejectedObjectIsReported(t *testing.T) {
	f := newFixture(t)
	opts := f.opts()
	opts.Concurrency = 1
	f.apply(f.objects(deploymentYAML), opts)
	_, err := f.cs.AppsV1().Deployments(f.ns).Patch(context.Background(), "web", types.ApplyPatchType,
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":7}}`),
		metav1.PatchOptions{FieldManager: "other", Force: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	// The conflicting Deployment sorts before the invalid Service.
	_, err = f.client.Apply(context.Background(), f.objects(strings.Replace(deploymentYAML, "replicas: 2", "replicas: 3", 1),
		strings.Replace(serviceYAML, "port: 80", "port: eighty", 1)), opts)
	if err == nil {
		t.Fatal("apply succeeded")
	}
	for _, want := range []string{"Deployment.apps/" + f.ns + "/web: field conflict", "Service/" + f.ns + "/web"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("an API answer was taken for a broken connection:\n%v", err)
	}
}

// TestLeaveOut: an object of a kind the cluster does not know stops the
// run, unless LeaveOut gives a reason to leave it out: then it is
// reported as skipped with that reason, the rest is applied, and the
// object is neither written nor recorded. Compare leaves it out the same
// way. A kind the render's own CRD defines is never asked about.
func TestLeaveOut(t *testing.T) {
	f := newFixture(t)
	group := strings.ReplaceAll(f.ns, "-", "") + ".leaveout.example.com"
	gadget := fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: NS\n", group)
	objs := f.objects(configMap("kept", "1"), gadget)
	var asked []string
	leaveOut := func(u *unstructured.Unstructured) string {
		asked = append(asked, manifest.IDOf(u).String())
		if u.GetKind() == "Gadget" {
			return "a gadget, done elsewhere"
		}
		return ""
	}

	before := f.snapshot()
	if _, err := f.client.Apply(context.Background(), objs, f.opts()); err == nil || !strings.Contains(err.Error(), "Gadget."+group+"/"+f.ns+"/g") {
		t.Fatalf("without LeaveOut: err = %v, want the unknown Gadget named", err)
	}
	if diff := cmp.Diff(before, f.snapshot()); diff != "" {
		t.Fatalf("written without LeaveOut (-before +after):\n%s", diff)
	}

	opts := f.opts()
	opts.LeaveOut = leaveOut
	cs := f.apply(objs, opts)
	want := f.sub([]string{"created ConfigMap/NS/kept", "skipped Gadget." + group + "/NS/g"})
	if diff := cmp.Diff(want, actions(cs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, c := range cs.Changes {
		if c.Action == kube.Skipped && c.Reason != "a gadget, done elsewhere" {
			t.Errorf("skipped %s with reason %q", c.Object, c.Reason)
		}
	}
	if diff := cmp.Diff(f.sub([]string{"Gadget." + group + "/NS/g"}), asked); diff != "" {
		t.Errorf("LeaveOut asked about (-want +got):\n%s", diff)
	}
	inv, err := f.client.ReadInventory(context.Background(), "test", f.invNS)
	if err != nil {
		t.Fatal(err)
	}
	for key := range inv.Records {
		if strings.Contains(key, "Gadget") {
			t.Errorf("inventory records the left-out %s", key)
		}
	}

	again := f.apply(objs, opts)
	if diff := cmp.Diff(f.sub([]string{"skipped Gadget." + group + "/NS/g", "unchanged ConfigMap/NS/kept"}), actions(again)); diff != "" {
		t.Errorf("re-apply (-want +got):\n%s", diff)
	}

	cmpOpts := kube.DefaultCompareOptions()
	cmpOpts.Target, cmpOpts.InventoryNamespace, cmpOpts.LeaveOut = "test", f.invNS, leaveOut
	c, err := f.client.Compare(context.Background(), objs, cmpOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Objects) != 1 || c.Objects[0].ID.Kind != "ConfigMap" || !c.Objects[0].Unchanged {
		t.Errorf("compared objects: %+v, want only the unchanged ConfigMap", c.Objects)
	}
	if len(c.LeftOut) != 1 || c.LeftOut[0].Object.Kind != "Gadget" || c.LeftOut[0].Reason != "a gadget, done elsewhere" {
		t.Errorf("left out: %+v", c.LeftOut)
	}

	// With its CRD in the render the Gadget is applied, not left out.
	asked = nil
	crd := crdYAML(group, "Gadget", "{type: object, x-kubernetes-preserve-unknown-fields: true}")
	withCRD := f.apply(f.objects(crd, configMap("kept", "1"), gadget), opts)
	if !contains(actions(withCRD), f.sub([]string{"created Gadget." + group + "/NS/g"})[0]) || len(asked) != 0 {
		t.Errorf("with the CRD rendered: %v (LeaveOut asked about %v)", actions(withCRD), asked)
	}
}
