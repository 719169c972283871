package kube_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
	"github.com/ferry-ci/ferry/internal/manifest"
)

// faultNamespaces are the namespaces the interrupted render creates. The
// plane is private to the test, so fixed names cannot collide.
var faultNamespaces = []string{"fault-a", "fault-b", "fault-c"}

const (
	faultTarget       = "fault"
	faultInventoryNS  = "ferry-fault"
	faultConfigMapsNS = 160 // per namespace
	faultServicesNS   = 8
	faultDeploysNS    = 4
)

// memberResources are the namespaced kinds of the render, listed
// cluster-wide to find every member of the set.
var memberResources = []struct {
	gk  schema.GroupKind
	gvr schema.GroupVersionResource
}{
	{schema.GroupKind{Kind: "ConfigMap"}, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
	{schema.GroupKind{Kind: "Service"}, schema.GroupVersionResource{Version: "v1", Resource: "services"}},
	{schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
	{schema.GroupKind{Kind: "Namespace"}, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}},
}

// faultRender builds the Namespaces and, in each, ConfigMaps, Services and
// Deployments: 3 + 3*(160+8+4) = 519 objects.
func faultRender() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, ns := range faultNamespaces {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns},
		}})
		for i := range faultConfigMapsNS {
			out = append(out, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("cm-%03d", i), "namespace": ns},
				"data":     map[string]any{"index": fmt.Sprint(i), "payload": strings.Repeat("x", 256)},
			}})
		}
		for i := range faultServicesNS {
			name := fmt.Sprintf("svc-%d", i)
			out = append(out, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"selector": map[string]any{"app": name},
					"ports":    []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}},
				},
			}})
		}
		for i := range faultDeploysNS {
			name := fmt.Sprintf("deploy-%d", i)
			labels := map[string]any{"app": name}
			out = append(out, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"replicas": int64(1),
					"selector": map[string]any{"matchLabels": labels},
					"template": map[string]any{
						"metadata": map[string]any{"labels": labels},
						"spec": map[string]any{"containers": []any{
							map[string]any{"name": "app", "image": "nginx:1.27"},
						}},
					},
				},
			}})
		}
	}
	return out
}

func faultOptions() kube.ApplyOptions {
	o := kube.DefaultApplyOptions()
	o.Target = faultTarget
	o.InventoryNamespace = faultInventoryNS
	// A run killed mid-apply cannot release its lease: the next run waits
	// until it expires. A short lease keeps that wait short; the wait limit
	// is far above it so that only a lease that never frees fails the test.
	o.Lock = kube.LockOptions{Duration: 5 * time.Second, Wait: 60 * time.Second}
	o.Timeout = 30 * time.Second
	return o
}

// members lists every object carrying the set's part-of label, by ID.
func members(t *testing.T, dyn dynamic.Interface, setID string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, r := range memberResources {
		l, err := dyn.Resource(r.gvr).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelPartOf + "=" + setID})
		if err != nil {
			t.Fatalf("listing %s: %v", r.gk, err)
		}
		for i := range l.Items {
			u := &l.Items[i]
			out[manifest.IDOf(u).String()] = u
		}
	}
	return out
}

func idSet(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		out[manifest.IDOf(o).String()] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestApplyInterruptedByAPIServerStop kills the API server while a large
// apply is writing, then checks that the failure is reported, that the next
// run (after the dead run's lease expires) converges, that the inventory
// covers everything the interrupted run may have created, and that a later
// prune leaves nothing of the set behind.
func TestApplyInterruptedByAPIServerStop(t *testing.T) {
	p := kubetest.Start(t) // private: this test stops its API server
	dyn := dynamic.NewForConfigOrDie(p.RESTConfig())
	setID := kube.ApplySetID(kube.ParentName(faultTarget), faultInventoryNS, "Secret", "")
	objs := faultRender()
	desired := idSet(objs)
	opts := faultOptions()

	// 1. Interrupted run.
	c1, err := kube.NewClientFromConfig(p.RESTConfig(), "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		cs  *kube.ChangeSet
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := c1.Apply(context.Background(), objs, opts)
		done <- result{cs, err}
	}()

	totalCM := len(faultNamespaces) * faultConfigMapsNS
	cmList := metav1.ListOptions{LabelSelector: kube.LabelPartOf + "=" + setID}
	cmGVR := memberResources[0].gvr
	var atStop int
	var seen []int // ConfigMap counts observed, for the failure message
poll:
	for {
		select {
		case r := <-done:
			t.Fatalf("apply finished (err = %v) before it could be interrupted; ConfigMap counts seen: %v; lower ApplyOptions.Concurrency or raise the object count", r.err, seen)
		default:
		}
		l, err := dyn.Resource(cmGVR).List(context.Background(), cmList)
		if err != nil {
			t.Fatalf("polling ConfigMaps: %v", err)
		}
		n := len(l.Items)
		if len(seen) == 0 || seen[len(seen)-1] != n {
			seen = append(seen, n)
		}
		switch {
		case n > 50 && n < totalCM-50:
			p.StopAPIServer()
			atStop = n
			break poll
		case n >= totalCM-50:
			t.Fatalf("apply passed %d of %d ConfigMaps before the poll saw the middle (counts seen: %v); lower ApplyOptions.Concurrency or raise the object count", n, totalCM, seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("stopped the API server with %d of %d ConfigMaps applied", atStop, totalCM)

	var first result
	select {
	case first = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Apply did not return within 2m of the API server being killed")
	}
	if first.err == nil {
		t.Fatalf("interrupted apply returned no error (changes: %d)", len(first.cs.Changes))
	}
	msg := first.err.Error()
	excerpt := msg
	if len(excerpt) > 600 {
		excerpt = excerpt[:600] + fmt.Sprintf("... (%d bytes, %d lines)", len(msg), strings.Count(msg, "\n")+1)
	}
	t.Logf("interrupted apply: %s", excerpt)
	var le *kube.LockedError
	if errors.As(first.err, &le) {
		t.Fatalf("interrupted apply failed on its lease, not on the stopped server: %v", first.err)
	}

	p.StartAPIServer(t)
	afterCrash := members(t, dyn, setID)
	// What the interrupted run reports as done is really there.
	for _, ch := range first.cs.Changes {
		if afterCrash[ch.Object.String()] == nil {
			t.Errorf("interrupted apply reported %s %s, but it does not exist", ch.Action, ch.Object)
		}
	}
	// The killed run could not release its lease: the next run must wait
	// for it to expire, which is what this test exercises.
	lease, err := kubernetes.NewForConfigOrDie(p.RESTConfig()).CoordinationV1().Leases(faultInventoryNS).Get(context.Background(), kube.ParentName(faultTarget)+"-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the interrupted run's lease: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h == "" {
		t.Errorf("the interrupted run's lease was released although the API server was down")
	} else {
		t.Logf("the interrupted run's lease is still held by %s", *h)
	}
	for id := range afterCrash {
		if !desired[id] {
			t.Errorf("after the interrupted run, %s carries the set's label but is not rendered", id)
		}
	}
	// The error must say what failed: it names an object of the render that
	// the run did not manage to apply, and the cluster it could not reach.
	var missing []string
	for id := range desired {
		if afterCrash[id] == nil {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing) == 0 {
		t.Fatalf("every object exists after the interrupted run: the stop came too late")
	}
	// The requests in flight when the server went away failed on the
	// client, but the server may have committed some of them first: a
	// failed object's state is unknown, so it may exist now. What the error
	// must do is name failed objects of the render (none of them one the
	// run reported as done) and account for every missing object as failed
	// or not attempted.
	named := map[string]bool{}
	for id := range desired {
		if strings.Contains(msg, id+":") {
			named[id] = true
		}
	}
	if len(named) == 0 {
		t.Errorf("the error names no object of the render:\n%s", excerpt)
	}
	for _, ch := range first.cs.Changes {
		if named[ch.Object.String()] {
			t.Errorf("the interrupted run reports %s both as %s and as failed", ch.Object, ch.Action)
		}
	}
	counts := regexp.MustCompile(`(\d+) objects failed, (\d+) were not attempted`).FindStringSubmatch(msg)
	if counts == nil {
		t.Fatalf("the error does not count the failed and unattempted objects:\n%s", excerpt)
	}
	failedN, _ := strconv.Atoi(counts[1])
	notAttempted, _ := strconv.Atoi(counts[2])
	if failedN < len(named) {
		t.Errorf("the error counts %d failed objects but names %d", failedN, len(named))
	}
	if failedN+notAttempted < len(missing) {
		t.Errorf("%d objects are missing, but the error counts only %d failed and %d not attempted:\n%s", len(missing), failedN, notAttempted, excerpt)
	}
	if !strings.Contains(msg, strings.TrimPrefix(p.URL(), "https://")) {
		t.Errorf("the error does not name the cluster %s:\n%s", p.URL(), excerpt)
	}
	// One line per object would bury the cause: the message says the
	// cluster stopped answering and lists a bounded number of objects.
	if !strings.Contains(msg, "cluster "+p.URL()+" stopped answering") {
		t.Errorf("the error does not say the cluster stopped answering:\n%s", excerpt)
	}
	if lines := strings.Count(msg, "\n"); lines > 15 {
		t.Errorf("the error has %d lines, want a summary of at most 15:\n%s", lines, excerpt)
	}
	t.Logf("%d objects existed after the interrupted run, %d missing; the error names %d failed objects and counts %d failed, %d not attempted", len(afterCrash), len(missing), len(named), failedN, notAttempted)

	// The interrupted run had written a superset inventory before its first
	// object: the next run finds every member it made.
	c2, err := kube.NewClientFromConfig(p.RESTConfig(), "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := c2.ReadInventory(context.Background(), faultTarget, faultInventoryNS)
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, "inventory after the interrupted run", inv, afterCrash)

	// 2. The same render again, on a fresh client: waits out the dead run's
	// lease, then converges.
	begin := time.Now()
	second, err := c2.Apply(context.Background(), objs, opts)
	if err != nil {
		t.Fatalf("apply after restart: %v", err)
	}
	t.Logf("apply after restart took %v (including the wait for the dead run's lease)", time.Since(begin).Round(time.Millisecond))
	if n := len(second.Changes); n != len(objs) {
		t.Errorf("apply after restart reported %d objects, want %d", n, len(objs))
	}
	if got, want := second.Count(kube.Created), len(missing); got != want {
		t.Errorf("apply after restart reported %d created, want %d (the objects the interrupted run did not apply)", got, want)
	}
	for _, ch := range second.Changes {
		id := ch.Object.String()
		if ch.Action == kube.Created && afterCrash[id] != nil {
			t.Errorf("apply after restart: %s reported created, but the interrupted run had created it", id)
		}
		if ch.Action != kube.Created && afterCrash[id] == nil {
			t.Errorf("apply after restart: %s reported %s, but it did not exist", id, ch.Action)
		}
	}

	live := members(t, dyn, setID)
	if diff := cmp.Diff(sortedKeys(desired), sortedKeys(live)); diff != "" {
		t.Errorf("members after the apply after restart (-rendered +labelled):\n%s", diff)
	}
	inv, err = c2.ReadInventory(context.Background(), faultTarget, faultInventoryNS)
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, "inventory after the apply after restart", inv, live)
	if len(inv.Records) != len(objs) {
		t.Errorf("inventory records %d objects, want %d", len(inv.Records), len(objs))
	}

	// 3. A third run changes nothing.
	versions := func(m map[string]*unstructured.Unstructured) map[string]string {
		out := map[string]string{}
		for id, u := range m {
			out[id] = u.GetResourceVersion()
		}
		return out
	}
	third, err := c2.Apply(context.Background(), objs, opts)
	if err != nil {
		t.Fatalf("third apply: %v", err)
	}
	if n, u := len(third.Changes), third.Count(kube.Unchanged); n != len(objs) || u != len(objs) {
		t.Errorf("third apply: %d changes, %d unchanged; want %d unchanged", n, u, len(objs))
		for _, ch := range third.Changes {
			if ch.Action != kube.Unchanged {
				t.Logf("  %s %s", ch.Action, ch.Object)
			}
		}
	}
	if diff := cmp.Diff(versions(live), versions(members(t, dyn, setID))); diff != "" {
		t.Errorf("third apply wrote objects (-before +after):\n%s", diff)
	}

	// 4. A smaller render, pruned: every Service, every fourth ConfigMap and
	// one Deployment per namespace leave it. Exactly those go; the inventory
	// shrinks to the kinds left.
	var smaller []*unstructured.Unstructured
	removed := map[string]bool{}
	for _, o := range objs {
		id := manifest.IDOf(o)
		var i int
		drop := id.Kind == "Service" ||
			id.Kind == "ConfigMap" && must(fmt.Sscanf(id.Name, "cm-%d", &i)) == 1 && i%4 == 0 ||
			id.Kind == "Deployment" && id.Name == "deploy-0"
		if drop {
			removed[id.String()] = true
			continue
		}
		smaller = append(smaller, o)
	}
	pruneOpts := opts
	pruneOpts.Prune = true
	pruneOpts.AllowMassPrune = true
	fourth, err := c2.Apply(context.Background(), smaller, pruneOpts)
	if err != nil {
		t.Fatalf("pruning apply: %v", err)
	}
	var pruned []string
	for _, ch := range fourth.Changes {
		switch ch.Action {
		case kube.Pruned:
			pruned = append(pruned, ch.Object.String())
		case kube.Unchanged:
		default:
			t.Errorf("pruning apply: %s %s, want unchanged or pruned", ch.Action, ch.Object)
		}
	}
	sort.Strings(pruned)
	if diff := cmp.Diff(sortedKeys(removed), pruned); diff != "" {
		t.Errorf("pruned (-removed from the render +reported pruned):\n%s", diff)
	}
	for id := range removed {
		u := live[id]
		gvr := gvrOf(t, u)
		_, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Get(context.Background(), u.GetName(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists after the prune (err = %v)", id, err)
		}
	}
	after := members(t, dyn, setID)
	if diff := cmp.Diff(sortedKeys(idSet(smaller)), sortedKeys(after)); diff != "" {
		t.Errorf("members after the prune (-rendered +labelled):\n%s", diff)
	}
	inv, err = c2.ReadInventory(context.Background(), faultTarget, faultInventoryNS)
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, "inventory after the prune", inv, after)
	var gks []string
	for _, gk := range inv.GroupKinds {
		gks = append(gks, gk.String())
	}
	sort.Strings(gks)
	if diff := cmp.Diff([]string{"ConfigMap", "Deployment.apps", "Namespace"}, gks); diff != "" {
		t.Errorf("inventory group kinds after pruning every Service (-want +got):\n%s", diff)
	}
}

// checkCovers fails unless the inventory lists the group-kind and the
// namespace of every object given: what the next run would look for.
func checkCovers(t *testing.T, what string, inv *kube.Inventory, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	if !inv.Exists {
		t.Errorf("%s: no inventory Secret", what)
		return
	}
	gks := map[schema.GroupKind]bool{}
	for _, gk := range inv.GroupKinds {
		gks[gk] = true
	}
	nss := map[string]bool{}
	for _, ns := range inv.Namespaces {
		nss[ns] = true
	}
	for _, id := range sortedKeys(objs) {
		u := objs[id]
		if gk := u.GroupVersionKind().GroupKind(); !gks[gk] {
			t.Errorf("%s: %s is a member but the inventory's group kinds %v lack %s", what, id, inv.GroupKinds, gk)
		}
		if ns := u.GetNamespace(); ns != "" && !nss[ns] {
			t.Errorf("%s: %s is a member but the inventory's namespaces %v lack %s", what, id, inv.Namespaces, ns)
		}
	}
	for _, ns := range faultNamespaces {
		if !nss[ns] {
			t.Errorf("%s: namespaces %v lack %s", what, inv.Namespaces, ns)
		}
	}
}

func gvrOf(t *testing.T, u *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	gk := u.GroupVersionKind().GroupKind()
	for _, r := range memberResources {
		if r.gk == gk {
			return r.gvr
		}
	}
	t.Fatalf("no resource for %s", gk)
	return schema.GroupVersionResource{}
}

func must(n int, err error) int {
	if err != nil {
		panic(err)
	}
	return n
}
