package kube_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/kube"
)

// fleetLog records, through a transport wrapping the run's client, the
// order in which targets take their Lease and write their inventory, and
// holds every Lease creation until `barrier` targets are taking theirs at
// once: a run that applied independent targets one by one would never get
// there (the test would time out), so passing proves they run
// concurrently, with no timing assertion.
type fleetLog struct {
	mu      sync.Mutex
	events  []string
	writes  []string
	waiting map[string]bool
	barrier int
	release chan struct{}
	once    sync.Once
}

func (l *fleetLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		// A server-side dry-run (the preflight's) is a PATCH that writes
		// nothing.
		write := r.Method != http.MethodGet && r.URL.Query().Get("dryRun") == ""
		if write {
			l.mu.Lock()
			l.writes = append(l.writes, r.Method+" "+r.URL.Path)
			l.mu.Unlock()
		}
		isLease := strings.Contains(r.URL.Path, "/leases") && r.Method == http.MethodPost
		target := ""
		if isLease {
			target = leaseTarget(r)
		}
		if isLease && l.barrier > 0 {
			l.mu.Lock()
			if l.waiting[target] {
				l.mu.Unlock()
			} else {
				l.waiting[target] = true
				if len(l.waiting) >= l.barrier {
					l.once.Do(func() { close(l.release) })
				}
				l.mu.Unlock()
				select {
				case <-l.release:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
		}
		resp, err := rt.RoundTrip(r)
		if err == nil && write {
			switch {
			case isLease:
				l.log("lease " + target)
			case strings.Contains(r.URL.Path, "/secrets"):
				l.log("inventory " + r.Method + " " + r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
			}
		}
		return resp, err
	})
}

func (l *fleetLog) log(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// leaseTarget reads the Lease name (ferry-<target>-lock) from a create,
// leaving the request's body as it was.
func leaseTarget(r *http.Request) string {
	if r.Body == nil {
		return "?"
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return "?"
	}
	// JSON or protobuf: the name is in the body as is.
	s := string(b)
	i := strings.Index(s, "ferry-")
	j := strings.Index(s, "-lock")
	if i < 0 || j < i {
		return "?"
	}
	return s[i+len("ferry-") : j]
}

// index is the position of the first event with the prefix, -1 if none.
func (l *fleetLog) index(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.events {
		if strings.HasPrefix(e, prefix) {
			return i
		}
	}
	return -1
}

// A fleet of 20 targets in one run: a chain (CRDs, custom resources of
// them, a target depending on those) applied in order, 17 independent
// targets applied concurrently, then a re-apply that writes nothing at all.
func TestApplyFleet(t *testing.T) {
	p := cp.Require(t)
	base := p.Namespace(t)
	invNS := p.Namespace(t)
	group := strings.ReplaceAll(base, "-", "") + ".example.com"
	log := &fleetLog{waiting: map[string]bool{}, barrier: 3, release: make(chan struct{})}
	cfg := rest.CopyConfig(p.RESTConfig())
	cfg.WrapTransport = log.wrap
	c, err := kube.NewClientFromConfig(cfg, "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(docs ...string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, d := range docs {
			out = append(out, mustObject(t, strings.ReplaceAll(strings.ReplaceAll(d, "NS", base), "GROUP", group)))
		}
		return out
	}
	opts := kube.DefaultApplyOptions()
	opts.InventoryNamespace = invNS
	opts.Revision = "3333333333333333333333333333333333333333"
	opts.Lock.Wait = 30 * time.Second
	opts.Timeout = 60 * time.Second
	fleet := []kube.FleetTarget{
		{Name: "crds", Client: c, Options: opts, Objects: parse(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.GROUP}
spec:
  group: GROUP
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
`)},
		{Name: "gadgets", DependsOn: []string{"crds"}, Client: c, Options: opts, Objects: parse(
			"apiVersion: GROUP/v1\nkind: Gadget\nmetadata: {name: g1, namespace: NS}\nspec: {size: 1}\n")},
		{Name: "app", DependsOn: []string{"gadgets"}, Client: c, Options: opts, Objects: parse(
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: NS}\ndata: {k: v}\n")},
	}
	for i := 0; i < 17; i++ {
		ns := fmt.Sprintf("%s-t%d", base, i)
		fleet = append(fleet, kube.FleetTarget{Name: fmt.Sprintf("team-%02d", i), Client: c, Options: opts, Objects: parse(
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "+ns+"}\ndata: {k: v}\n",
			"apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: "+ns+"}\ndata: {k: dg==}\n",
		)})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plan, err := kube.PreflightFleet(ctx, fleet, 4)
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	if len(log.writes) > 0 {
		t.Fatalf("the preflight wrote: %v", log.writes)
	}
	sets, err := kube.ApplyFleet(ctx, fleet, plan, 4)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	for i, cs := range sets {
		if cs.Target != fleet[i].Name || cs.Error != "" || cs.NotAttempted != "" || cs.Count(kube.Created) != len(fleet[i].Objects) {
			t.Errorf("target %s: %+v", fleet[i].Name, cs)
		}
	}
	// The chain, in order: each target takes its Lease only after the one
	// it depends on has written its final inventory.
	for _, link := range [][2]string{{"crds", "gadgets"}, {"gadgets", "app"}} {
		done, start := lastIndex(log, "inventory", link[0]), log.index("lease "+link[1])
		if done < 0 || start < 0 || start < done {
			t.Errorf("%s took its Lease (event %d) before %s was done (event %d):\n%s", link[1], start, link[0], done, strings.Join(log.events, "\n"))
		}
	}
	t.Logf("%d events; Lease creations held until %d targets took theirs at once", len(log.events), log.barrier)

	// Re-apply of the same revision: nothing is written, anywhere.
	log.mu.Lock()
	log.writes, log.barrier = nil, 0
	log.mu.Unlock()
	plan, err = kube.PreflightFleet(ctx, fleet, 4)
	if err != nil {
		t.Fatalf("preflight of the re-apply: %v", err)
	}
	again, err := kube.ApplyFleet(ctx, fleet, plan, 4)
	if err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	for i, cs := range again {
		if cs.Count(kube.Unchanged) != len(fleet[i].Objects) {
			t.Errorf("re-apply of %s: %+v, want everything unchanged", fleet[i].Name, cs.Changes)
		}
	}
	if len(log.writes) > 0 {
		t.Errorf("the re-apply of 20 unchanged targets wrote %d times, want none: %v", len(log.writes), log.writes)
	}
}

// lastIndex is the position of the last write of kind (inventory) that
// names the target's inventory, -1 if none.
func lastIndex(l *fleetLog, kind, target string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := -1
	for i, e := range l.events {
		if strings.HasPrefix(e, kind) && strings.HasSuffix(e, " "+kube.ParentName(target)) {
			last = i
		}
	}
	return last
}

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// A fleet's plans read each cluster once (inventories, Leases, one list
// per kind), not target by target: a re-apply of 20 unchanged targets
// makes fewer reads than there are targets and no write; a new revision
// with the same objects writes each target's Lease (take, release) and
// inventory, and reads nothing per target.
func TestFleetReadsOncePerCluster(t *testing.T) {
	p := cp.Require(t)
	base, invNS := p.Namespace(t), p.Namespace(t)
	log := &requestLog{}
	cfg := rest.CopyConfig(p.RESTConfig())
	cfg.WrapTransport = log.wrap
	c, err := kube.NewClientFromConfig(cfg, "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := kube.DefaultApplyOptions()
	opts.InventoryNamespace = invNS
	opts.Revision = "4444444444444444444444444444444444444444"
	var fleet []kube.FleetTarget
	for i := 0; i < 20; i++ {
		fleet = append(fleet, kube.FleetTarget{Name: fmt.Sprintf("svc-%02d", i), Client: c, Options: opts, Objects: []*unstructured.Unstructured{
			mustObject(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d, namespace: %s}\ndata: {k: v}\n", i, base)),
			mustObject(t, fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa%d, namespace: %s}\n", i, base)),
		}})
	}
	ctx := context.Background()
	run := func(what string) []*kube.ChangeSet {
		t.Helper()
		plan, err := kube.PreflightFleet(ctx, fleet, 4)
		if err != nil {
			t.Fatalf("%s: preflight: %v", what, err)
		}
		sets, err := kube.ApplyFleet(ctx, fleet, plan, 4)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return sets
	}
	run("first apply")
	log.take()

	for _, cs := range run("re-apply") {
		if cs.Count(kube.Unchanged) != 2 {
			t.Errorf("re-apply of %s: %+v, want 2 unchanged", cs.Target, cs.Changes)
		}
	}
	writes, reads := log.take()
	if len(writes) > 0 || reads >= len(fleet) {
		t.Errorf("re-apply of %d unchanged targets: %d reads, writes %v; want fewer reads than targets and no write", len(fleet), reads, writes)
	}
	t.Logf("re-apply of %d targets: %d reads, no writes", len(fleet), reads)

	for i := range fleet {
		fleet[i].Options.Revision = "5555555555555555555555555555555555555555"
	}
	for _, cs := range run("new revision") {
		if cs.Count(kube.Unchanged) != 2 {
			t.Errorf("new revision of %s: %+v, want 2 unchanged", cs.Target, cs.Changes)
		}
	}
	writes, reads = log.take()
	var lease, inventory int
	for _, w := range writes {
		switch {
		case strings.Contains(w, "/leases/"):
			lease++
		case strings.Contains(w, "/secrets/"):
			inventory++
		default:
			t.Errorf("new revision, same objects: unexpected write %s", w)
		}
	}
	if lease != 2*len(fleet) || inventory != len(fleet) || reads >= len(fleet) {
		t.Errorf("new revision of %d targets, same objects: %d Lease writes, %d inventory writes, %d reads; want %d, %d and fewer reads than targets",
			len(fleet), lease, inventory, reads, 2*len(fleet), len(fleet))
	}
	t.Logf("new revision of %d targets, same objects: %d reads, %d writes", len(fleet), reads, len(writes))
}

// anotherRunWrote preflights a fleet of two targets at revision 7777 that
// render what revision 6666 applied (so target one's plan writes its
// inventory only), then has another run apply target one at 8888 with
// another value before the fleet applies. isAncestor is the fleet's.
func anotherRunWrote(t *testing.T, isAncestor func(a, b string) (bool, error)) (c *kube.Client, fleet []kube.FleetTarget, plan *kube.FleetPlan, base, invNS string) {
	t.Helper()
	p := cp.Require(t)
	base, invNS = p.Namespace(t), p.Namespace(t)
	c, err := kube.NewClientFromConfig(p.RESTConfig(), "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := kube.DefaultApplyOptions()
	opts.InventoryNamespace = invNS
	opts.Revision = "6666666666666666666666666666666666666666"
	cm := func(value string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{mustObject(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: %s}\ndata: {k: %s}\n", base, value))}
	}
	fleet = []kube.FleetTarget{
		{Name: "one", Client: c, Options: opts, Objects: cm("ours")},
		{Name: "two", Client: c, Options: opts, Objects: []*unstructured.Unstructured{mustObject(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: two, namespace: "+base+"}\n")}},
	}
	ctx := context.Background()
	if plan, err = kube.PreflightFleet(ctx, fleet, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.ApplyFleet(ctx, fleet, plan, 2); err != nil {
		t.Fatal(err)
	}

	// The next revision renders the same objects; its preflight plans an
	// inventory update only.
	for i := range fleet {
		fleet[i].Options.Revision = "7777777777777777777777777777777777777777"
		fleet[i].Options.IsAncestor = isAncestor
	}
	if plan, err = kube.PreflightFleet(ctx, fleet, 2); err != nil {
		t.Fatal(err)
	}
	// Meanwhile another run applies target one with another value.
	other := opts
	other.Target, other.Revision = "one", "8888888888888888888888888888888888888888"
	other.AllowRollback = true
	if _, err := c.Apply(ctx, cm("theirs"), other); err != nil {
		t.Fatal(err)
	}
	return c, fleet, plan, base, invNS
}

// sharedValue is the value of the ConfigMap the targets of anotherRunWrote
// share, and target one's recorded revision.
func sharedValue(t *testing.T, c *kube.Client, base, invNS string) (value, revision string) {
	t.Helper()
	ctx := context.Background()
	live, err := kubernetes.NewForConfigOrDie(cp.RESTConfig()).CoreV1().ConfigMaps(base).Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := c.ReadInventory(ctx, "one", invNS)
	if err != nil {
		t.Fatal(err)
	}
	return live.Data["k"], inv.Revision
}

// A plan whose one write is the inventory (a new revision, objects
// unchanged) is not read again under the Lease: its inventory write is
// conditional. When another run writes the target between the preflight
// and the apply, the write fails, the target is planned again, and what
// the other run changed is put back to this revision's objects. (The other
// run also took and released the Lease, so the Lease the preflight listed
// is stale too: the first attempt to take it fails, and it is read.)
func TestFleetReplansWhenAnotherRunWrote(t *testing.T) {
	c, fleet, plan, base, invNS := anotherRunWrote(t, nil)
	sets, err := kube.ApplyFleet(context.Background(), fleet, plan, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sets[0].Count(kube.Configured) != 1 {
		t.Errorf("target one: %+v, want the ConfigMap configured back", sets[0].Changes)
	}
	if value, rev := sharedValue(t, c, base, invNS); value != "ours" || rev != "7777777777777777777777777777777777777777" {
		t.Errorf("after the apply: ConfigMap shared holds %q, the inventory records %s; want ours at 7777…", value, rev)
	}
}

// When the other run applied a newer revision, planning again under the
// Lease refuses to roll it back: target one fails with the rollback
// guard's error, naming the revision the other run recorded, and nothing
// of it is written.
func TestFleetReplanRefusesRollback(t *testing.T) {
	newer := func(a, b string) (bool, error) { return a[0] == '7' && b[0] == '8', nil }
	c, fleet, plan, base, invNS := anotherRunWrote(t, newer)
	sets, err := kube.ApplyFleet(context.Background(), fleet, plan, 2)
	var re *kube.RevisionError
	if !errors.As(err, &re) {
		t.Fatalf("error %v, want a RevisionError", err)
	}
	if sets[0].Error == "" || sets[0].PreviousRevision != "8888888888888888888888888888888888888888" || len(sets[0].Changes) != 0 {
		t.Errorf("target one: %+v, want an error, no change, and 8888… as the previous revision", sets[0])
	}
	if value, rev := sharedValue(t, c, base, invNS); value != "theirs" || rev != "8888888888888888888888888888888888888888" {
		t.Errorf("after the refused apply: ConfigMap shared holds %q, the inventory records %s; want theirs at 8888…", value, rev)
	}
}
