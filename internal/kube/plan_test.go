package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
)

// A plan reads and checks and writes nothing; it says what it would apply,
// leave alone and prune; it goes stale when another run writes the
// inventory; and Execute carries it out as Apply would.
func TestPlanThenExecute(t *testing.T) {
	f := newFixture(t)
	c, log := loggedClient(t)
	ctx := context.Background()
	opts := f.opts()
	opts.Prune = true
	opts.MassPruneRatio = 1
	f.apply(f.objects(configMap("a", "1"), configMap("b", "1")), opts)
	log.take()

	opts.Revision = "2222222222222222222222222222222222222222"
	p, err := c.Plan(ctx, f.objects(configMap("a", "1"), configMap("c", "1")), opts.PlanOptions)
	if err != nil {
		t.Fatal(err)
	}
	if writes, _ := log.take(); len(writes) != 0 {
		t.Errorf("Plan wrote: %v", writes)
	}
	names := func(ids []manifest.ID) []string {
		var out []string
		for _, id := range ids {
			out = append(out, id.Name)
		}
		return out
	}
	var pruned []string
	for _, u := range p.Prune {
		pruned = append(pruned, u.GetName())
	}
	got := map[string][]string{"apply": names(p.ToApply()), "unchanged": names(p.Unchanged()), "prune": pruned}
	want := map[string][]string{"apply": {"c"}, "unchanged": {"a"}, "prune": {"b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if p.Noop() {
		t.Error("a plan with a change reports Noop")
	}
	inv, err := c.ReadInventory(ctx, opts.Target, opts.InventoryNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if p.Stale(inv) {
		t.Error("a plan is stale with nothing written since")
	}

	// A dry-run execution reports the plan and writes nothing.
	dry, err := c.Execute(ctx, p, kube.ExecuteOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if writes, _ := log.take(); len(writes) != 0 {
		t.Errorf("a dry-run Execute wrote: %v", writes)
	}
	wantActions := []string{"created ConfigMap/" + f.ns + "/c", "pruned ConfigMap/" + f.ns + "/b", "unchanged ConfigMap/" + f.ns + "/a"}
	if diff := cmp.Diff(wantActions, actions(dry)); diff != "" {
		t.Errorf("dry-run execution (-want +got):\n%s", diff)
	}

	// Another run writes the inventory: the plan is stale, and ApplyPlan
	// plans again under the Lease before it writes.
	other := f.opts()
	other.Revision = "3333333333333333333333333333333333333333"
	other.Prune, other.MassPruneRatio = true, 1
	f.apply(f.objects(configMap("a", "1"), configMap("b", "1"), configMap("d", "1")), other)
	inv, err = c.ReadInventory(ctx, opts.Target, opts.InventoryNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Stale(inv) {
		t.Fatal("the plan is not stale after another run wrote the inventory")
	}
	cs, err := c.ApplyPlan(ctx, p, kube.ApplyOptions{ExecuteOptions: opts.ExecuteOptions, Lock: opts.Lock})
	if err != nil {
		t.Fatal(err)
	}
	wantActions = []string{"created ConfigMap/" + f.ns + "/c", "pruned ConfigMap/" + f.ns + "/b", "pruned ConfigMap/" + f.ns + "/d", "unchanged ConfigMap/" + f.ns + "/a"}
	if diff := cmp.Diff(wantActions, actions(cs)); diff != "" {
		t.Errorf("the stale plan, carried out (-want +got):\n%s", diff)
	}
	if cs.PreviousRevision != other.Revision {
		t.Errorf("previous revision %q, want %q (the one the new plan read)", cs.PreviousRevision, other.Revision)
	}
}

// Every error about an object names it, and a field conflict names the
// fields and how to take them.
func TestObjectErrorNamesTheObject(t *testing.T) {
	f := newFixture(t)
	objs := f.objects(
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: NS}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice, namespace: NS}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice, namespace: NS}\n",
	)
	_, err := f.client.Plan(context.Background(), objs, f.opts().PlanOptions)
	var oe *kube.ObjectError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an ObjectError", err)
	}
	for _, want := range []string{"Widget.example.com/" + f.ns + "/w: kind Widget", "ConfigMap/" + f.ns + "/twice: rendered twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
