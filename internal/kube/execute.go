package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// Execute carries out a plan: the inventory widened to track everything
// the plan may create, the objects wave by wave (see manifest.Wave), with
// Wait their health, the Helm post hooks, pruning, and the inventory
// settled to what the cluster then holds. It takes no Lease: Apply and
// ApplyPlan do. A plan whose one write is its inventory writes it on
// condition that it is still as the plan read it (a Conflict error
// otherwise, and nothing written).
//
// With DryRun it writes nothing and reports what the plan would do.
func (c *Client) Execute(ctx context.Context, p *Plan, opts ExecuteOptions) (*ChangeSet, error) {
	opts = ApplyOptions{ExecuteOptions: opts}.withDefaults().ExecuteOptions
	x := &execution{c: c, p: p, opts: opts, records: map[string]Record{}, cs: p.untouched()}
	x.cs.DryRun = opts.DryRun
	if opts.DryRun {
		for _, o := range p.toApply {
			x.cs.Changes = append(x.cs.Changes, classify(o, nil))
		}
		x.cs.Changes = append(x.cs.Changes, pruneChanges(p.Prune, p.Kept, p.opts)...)
		sortChanges(x.cs.Changes)
		return x.cs, nil
	}
	return x.cs, x.run(ctx)
}

// unchanged is the change set of a plan with nothing to do (Plan.Noop):
// every object unchanged and, with Wait, their health.
func (c *Client) unchanged(ctx context.Context, p *Plan, opts ExecuteOptions) (*ChangeSet, error) {
	cs := p.untouched()
	sortChanges(cs.Changes)
	if !opts.Wait {
		return cs, nil
	}
	var err error
	cs.NotReady, err = c.wait(ctx, p.desired, opts.Timeout)
	return cs, err
}

// untouched is the change set of a plan before it is carried out, with
// what carrying it out leaves alone: the objects left out, and those
// unchanged.
func (p *Plan) untouched() *ChangeSet {
	cs := p.changeSet()
	cs.Changes = append(cs.Changes, p.LeftOut...)
	for _, o := range p.unchanged {
		cs.Changes = append(cs.Changes, Change{Object: o.id, Action: Unchanged})
	}
	return cs
}

// execution is one plan being carried out: what it did so far, and the
// inventory records of the objects it applied.
type execution struct {
	c       *Client
	p       *Plan
	opts    ExecuteOptions
	cs      *ChangeSet
	records map[string]Record
}

// run writes what the plan says, in this order: the widened inventory,
// the waves up to the namespaced objects, health, the post hooks, the
// prune, the settled inventory. A failure stops the writes after it and
// leaves the widened inventory (with the records of what did apply), so
// the next run still knows every object this one may have created.
func (x *execution) run(ctx context.Context) error {
	c, p := x.c, x.p
	wide, grows := widened(p.Inventory, p.desired)
	if grows {
		if err := c.writeInventory(ctx, p.Target, &wide, ""); err != nil {
			return err
		}
	}
	for _, o := range p.unchanged {
		x.records[o.key] = p.Inventory.Records[o.key]
	}
	err := x.applyWaves(ctx, manifest.WaveCRDs, manifest.WaveNamespaced)
	if err == nil && x.opts.Wait {
		x.cs.NotReady, err = c.wait(ctx, p.desired, x.opts.Timeout)
	}
	if err == nil {
		err = x.applyWaves(ctx, manifest.WavePostHooks, manifest.WavePostHooks)
	}
	if err == nil && p.opts.Prune {
		err = c.prune(ctx, p.Prune, x.cs, p.opts.Concurrency)
	}
	x.cs.Changes = append(x.cs.Changes, pruneChanges(nil, p.Kept, p.opts)...)
	if !p.opts.Prune {
		x.cs.Changes = append(x.cs.Changes, pruneChanges(p.Prune, nil, p.opts)...)
	}
	sortChanges(x.cs.Changes)
	if err != nil {
		wide.Records = x.records
		_ = c.writeInventory(context.WithoutCancel(ctx), p.Target, &wide, "")
		return err
	}
	final := settled(p, x.records)
	ifVersion := ""
	if p.inventoryOnly() {
		ifVersion = p.Inventory.ResourceVersion
	}
	return c.writeInventory(ctx, p.Target, &final, ifVersion)
}

// widened is the inventory a plan writes before its first object: what
// the inventory tracks already and what the plan may create. grows
// reports whether that is more than the inventory there.
func widened(inv *Inventory, desired []*object) (wide Inventory, grows bool) {
	wide = *inv
	wide.GroupKinds, wide.Namespaces = union(inv, desired)
	grows = !inv.Exists || !sameSet(wide.GroupKinds, inv.GroupKinds) || !sameSet(wide.Namespaces, inv.Namespaces)
	return wide, grows
}

// settled is the inventory a plan writes once it has been carried out:
// the rendered objects' kinds and namespaces, and those of the members
// left in place (kept, or orphaned without pruning), at the plan's
// revision.
func settled(p *Plan, records map[string]Record) Inventory {
	final := *p.Inventory
	final.Records = records
	final.GroupKinds, final.Namespaces = union(&Inventory{Namespace: p.Inventory.Namespace}, p.desired)
	remaining := p.Kept
	if !p.opts.Prune {
		remaining = append(slices.Clip(remaining), p.Prune...)
	}
	for _, o := range remaining {
		final.GroupKinds = addGK(final.GroupKinds, o.GroupVersionKind().GroupKind())
		if ns := o.GetNamespace(); ns != "" {
			final.Namespaces = addString(final.Namespaces, ns)
		}
	}
	final.Revision = p.opts.Revision
	final.Verify = p.opts.Verify
	final.AppliedAt = time.Now()
	return final
}

// classify names what applying o did (res, the server's answer) or, in
// a dry run (res nil), would do.
func classify(o *object, res *unstructured.Unstructured) Change {
	ch := Change{Object: o.id, Action: Configured}
	switch {
	case o.replace:
		ch.Action, ch.Reason = Replaced, "hook-delete-policy "+HookBeforeCreation
	case o.live == nil:
		ch.Action = Created
	case res != nil && res.GetResourceVersion() == o.live.GetResourceVersion():
		ch.Action = Unchanged
	}
	return ch
}

// dryRun server-side dry-runs objects concurrently and reports every
// failure, each naming its object.
func (c *Client) dryRun(ctx context.Context, objs []*object, concurrency int, force bool) error {
	return c.each(ctx, objs, concurrency, func(ctx context.Context, o *object) error {
		var err error
		if o.replace {
			err = c.dryRunReplace(ctx, o)
		} else {
			_, err = c.patch(ctx, o, force, true)
		}
		o.checked = true
		if err != nil {
			return &ObjectError{ID: o.id, Err: err}
		}
		return nil
	})
}

func (c *Client) resource(o *object) dynamic.ResourceInterface {
	r := c.dynamic.Resource(o.mapping.Resource)
	if o.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Namespace(o.u.GetNamespace())
	}
	return r
}

func (c *Client) patch(ctx context.Context, o *object, force, dryRun bool) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(o.u.Object)
	if err != nil {
		return nil, err
	}
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	if dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	return c.resource(o).Patch(ctx, o.u.GetName(), types.ApplyPatchType, body, po)
}

// applyWaves applies the objects that need it, waves from to to, each
// wave in steps (see steps: one for ordinary objects, by weight for
// hooks). A step's objects not yet dry-run (their Namespace or CRD came
// with this run) are dry-run first, and a failure stops before the step
// writes anything. A step of CRDs is awaited until they are Established;
// with Wait, a step of hooks until they ran (see finishHooks). The post
// hook wave also holds the hooks of both phases, applied a second time:
// replaced when their delete policy says so and they are still there.
func (x *execution) applyWaves(ctx context.Context, from, to int) error {
	for wave := from; wave <= to; wave++ {
		var objs []*object
		for _, o := range x.p.toApply {
			switch {
			case o.wave == wave:
				objs = append(objs, o)
			case wave == manifest.WavePostHooks && o.hook.again:
				o.replace = o.replaces()
				objs = append(objs, o)
			}
		}
		for _, step := range steps(objs) {
			if err := x.applyStep(ctx, step); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyStep applies objs concurrently: hooks that before-hook-creation
// replaces are deleted first (and their deletion awaited).
func (x *execution) applyStep(ctx context.Context, objs []*object) error {
	c, opts, concurrency, force := x.c, x.opts, x.p.opts.Concurrency, x.p.opts.ForceConflicts
	if err := c.resolveDeferred(ctx, objs, opts.Timeout); err != nil {
		return err
	}
	var unchecked, replace []*object
	for _, o := range objs {
		if !o.checked {
			unchecked = append(unchecked, o)
		}
		if o.replace {
			replace = append(replace, o)
		}
	}
	if err := c.dryRun(ctx, unchecked, concurrency, force); err != nil {
		return err
	}
	deadline := time.Now().Add(opts.Timeout)
	if err := c.each(ctx, replace, concurrency, func(ctx context.Context, o *object) error {
		return c.deleteHook(ctx, o, string(o.live.GetUID()), deadline)
	}); err != nil {
		return err
	}
	var mu sync.Mutex
	err := c.each(ctx, objs, concurrency, func(ctx context.Context, o *object) error {
		res, err := c.patch(ctx, o, force, false)
		if err != nil {
			return &ObjectError{ID: o.id, Err: err}
		}
		mu.Lock()
		x.cs.Changes = append(x.cs.Changes, classify(o, res))
		x.records[o.key] = Record{Config: o.config, Fields: ownedFieldsHash(res)}
		mu.Unlock()
		if o.hook.again {
			o.live = res // what its second phase finds
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var crds []*object
	for _, o := range objs {
		if manifest.IsCRD(o.u) {
			crds = append(crds, o)
		}
	}
	if len(crds) > 0 {
		if err := c.waitEstablished(ctx, crds, opts.Timeout); err != nil {
			return err
		}
	}
	if opts.Wait && objs[0].hook.phase != "" {
		return c.finishHooks(ctx, objs, opts.Timeout, x.cs, x.records)
	}
	return nil
}

// resolveDeferred maps the objects whose CRD this run created. A CRD is
// Established a moment before the API server's discovery serves its kind,
// so a kind that is not served yet is asked again until the timeout.
func (c *Client) resolveDeferred(ctx context.Context, objs []*object, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if !slices.ContainsFunc(objs, func(o *object) bool { return o.mapping == nil }) {
		return nil // every kind was known when the run began
	}
	for {
		c.mapper.Reset()
		var errs []error
		unknown := false
		for _, o := range objs {
			if o.mapping != nil {
				continue
			}
			gvk := o.u.GroupVersionKind()
			m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				unknown = unknown || meta.IsNoMatchError(err)
				errs = append(errs, &ObjectError{ID: o.id, Err: fmt.Errorf("kind %s is still unknown after its CRD was applied: %w", gvk, err)})
				continue
			}
			o.mapping = m
		}
		if len(errs) == 0 || !unknown || time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func union(inv *Inventory, desired []*object) ([]schema.GroupKind, []string) {
	gks := append([]schema.GroupKind(nil), inv.GroupKinds...)
	nss := append([]string(nil), inv.Namespaces...)
	nss = addString(nss, inv.Namespace)
	for _, o := range desired {
		gks = addGK(gks, o.u.GroupVersionKind().GroupKind())
		if ns := o.u.GetNamespace(); ns != "" {
			nss = addString(nss, ns)
		}
	}
	return gks, nss
}

func addGK(list []schema.GroupKind, gk schema.GroupKind) []schema.GroupKind {
	for _, x := range list {
		if x == gk {
			return list
		}
	}
	return append(list, gk)
}

func sortChanges(ch []Change) {
	order := map[Action]int{Created: 0, Configured: 1, Replaced: 2, Unchanged: 3, Deleted: 4, Pruned: 5, Skipped: 6, Orphaned: 7}
	sort.SliceStable(ch, func(i, j int) bool {
		if ch[i].Action != ch[j].Action {
			return order[ch[i].Action] < order[ch[j].Action]
		}
		return manifest.Less(ch[i].Object, ch[j].Object)
	})
}
