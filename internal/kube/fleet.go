package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// FleetTarget is one target of a run over several.
type FleetTarget struct {
	Name    string
	Cluster string
	// DependsOn names the targets of the run this one applies after.
	DependsOn []string
	Client    *Client
	Objects   []*unstructured.Unstructured
	// Options are the target's; Target and Provided are set by the fleet.
	Options ApplyOptions
}

// fleetGraph is a run's targets with what each must wait for: its
// dependsOn, and the earlier targets of its cluster whose Namespaces or
// CRDs its objects use (so a target never waits for nothing nor runs
// before what it needs, whether or not the repository says dependsOn).
type fleetGraph struct {
	targets []FleetTarget
	after   [][]int // indexes each target waits for
}

func newFleetGraph(targets []FleetTarget) (*fleetGraph, error) {
	g := &fleetGraph{targets: targets, after: make([][]int, len(targets))}
	index := map[string]int{}
	for i, t := range targets {
		index[t.Name] = i
	}
	type place struct{ cluster, namespace string }
	type kind struct {
		cluster string
		gk      schema.GroupKind
	}
	namespaceBy := map[place]int{} // the first target to create each Namespace
	kindBy := map[kind]int{}       // the first target to define each kind (its CRD)
	for i, t := range targets {
		seen := map[int]bool{}
		wait := func(j int) {
			if j != i && !seen[j] {
				seen[j] = true
				g.after[i] = append(g.after[i], j)
			}
		}
		for _, d := range t.DependsOn {
			j, ok := index[d]
			if !ok {
				continue // not selected: assumed applied before
			}
			if j > i {
				return nil, fmt.Errorf("target %q depends on %q, which comes after it", t.Name, d)
			}
			wait(j)
		}
		for _, u := range t.Objects {
			if j, ok := namespaceBy[place{t.Cluster, u.GetNamespace()}]; ok {
				wait(j)
			}
			if j, ok := kindBy[kind{t.Cluster, u.GroupVersionKind().GroupKind()}]; ok {
				wait(j)
			}
		}
		for _, u := range t.Objects {
			if gvk := u.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Namespace" {
				if _, ok := namespaceBy[place{t.Cluster, u.GetName()}]; !ok {
					namespaceBy[place{t.Cluster, u.GetName()}] = i
				}
			}
		}
		for gk := range renderedCRDs(t.Objects) {
			if _, ok := kindBy[kind{t.Cluster, gk}]; !ok {
				kindBy[kind{t.Cluster, gk}] = i
			}
		}
	}
	return g, nil
}

// provided are the Namespaces and CRDs of everything target i waits for,
// directly or not: what exists by the time it applies.
func (g *fleetGraph) provided(i int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	seen := map[int]bool{}
	var walk func(j int)
	walk = func(j int) {
		for _, k := range g.after[j] {
			if !seen[k] {
				seen[k] = true
				walk(k)
				if g.targets[k].Cluster == g.targets[i].Cluster {
					out = append(out, runObjects(g.targets[k].Objects)...)
				}
			}
		}
	}
	walk(i)
	return out
}

// FleetPlan is what PreflightFleet found: each target's plan, by the
// targets' index, for ApplyFleet to carry out.
type FleetPlan struct {
	Plans []*Plan
}

// PreflightFleet dry-runs every target (mapping, server dry-run, rollback
// and mass-prune guards), each seeing the Namespaces and CRDs of the
// targets it waits for, and reports every failure of every target, each
// naming its target. It writes nothing: no Lease, no inventory.
//
// It reads each cluster once for all its targets (see snapshot) and plans
// every target from that read; ApplyFleet carries the plans out. The
// plans do not depend on each other, so up to parallel are made at once.
func PreflightFleet(ctx context.Context, targets []FleetTarget, parallel int) (*FleetPlan, error) {
	g, err := newFleetGraph(targets)
	if err != nil {
		return nil, err
	}
	plan := &FleetPlan{Plans: make([]*Plan, len(targets))}
	if parallel < 1 {
		parallel = 1
	}
	snaps := readSnapshots(ctx, targets)
	errs := make([]error, len(targets))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, t := range targets {
		if t.Client == nil {
			continue // the caller reports why it has none
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			opts := t.Options.withDefaults()
			opts.Target, opts.Provided = t.Name, g.provided(i)
			if err := t.Client.reachable(ctx); err != nil {
				errs[i] = fmt.Errorf("target %q: %w", t.Name, err)
				return
			}
			// What a re-run of an unchanged fleet costs is each target's
			// reads, once: ApplyFleet carries out these plans.
			p, err := t.Client.plan(ctx, t.Objects, opts.PlanOptions, snaps[t.Client])
			if err != nil {
				errs[i] = fmt.Errorf("target %q: %w", t.Name, err)
				return
			}
			plan.Plans[i] = p
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return plan, errors.Join(errs...)
}

// readSnapshots reads, for each cluster at once, what planning its
// targets reads (see snapshot). A cluster that cannot be reached gets
// none; its targets say so.
func readSnapshots(ctx context.Context, targets []FleetTarget) map[*Client]*snapshot {
	byClient := map[*Client][]snapTarget{}
	for _, t := range targets {
		if t.Client != nil {
			opts := t.Options.withDefaults()
			byClient[t.Client] = append(byClient[t.Client], snapTarget{name: t.Name, inventoryNamespace: opts.InventoryNamespace, objects: t.Objects})
		}
	}
	out := make(map[*Client]*snapshot, len(byClient))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c, ts := range byClient {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.reachable(ctx) != nil {
				return
			}
			s := c.readSnapshot(ctx, ts)
			mu.Lock()
			out[c] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// ApplyFleet applies the targets, in the given (dependency) order where
// they wait for each other and concurrently where they do not, at most
// parallel at a time. A target starts once everything it waits for has
// applied; one that fails stops the targets waiting for it (a ChangeSet
// with NotAttempted says why), while the others go on. The change sets
// come back in the targets' order; the error joins every failure.
//
// plan, from PreflightFleet (nil without one), has each target's plan:
// ApplyFleet carries them out (ApplyPlan) instead of planning again, and
// a target whose plan has nothing to do costs no write.
func ApplyFleet(ctx context.Context, targets []FleetTarget, plan *FleetPlan, parallel int) ([]*ChangeSet, error) {
	g, err := newFleetGraph(targets)
	if err != nil {
		return nil, err
	}
	r := &fleetRun{g: g, plan: plan, sets: make([]*ChangeSet, len(targets)), errs: make([]error, len(targets)),
		done: make([]chan struct{}, len(targets)), sem: make(chan struct{}, max(parallel, 1))}
	for i := range r.done {
		r.done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i := range targets {
		wg.Go(func() {
			defer close(r.done[i])
			r.sets[i], r.errs[i] = r.apply(ctx, i)
		})
	}
	wg.Wait()
	return r.sets, errors.Join(r.errs...)
}

// fleetRun is one ApplyFleet: each target's outcome, and a channel per
// target closed once it has one.
type fleetRun struct {
	g    *fleetGraph
	plan *FleetPlan
	sets []*ChangeSet
	errs []error
	done []chan struct{}
	sem  chan struct{}
}

// apply applies target i once everything it waits for has applied, or
// says why it is not attempted.
func (r *fleetRun) apply(ctx context.Context, i int) (*ChangeSet, error) {
	targets := r.g.targets
	t := targets[i]
	for _, j := range r.g.after[i] {
		<-r.done[j]
		if r.errs[j] == nil && r.sets[j].NotAttempted == "" {
			continue
		}
		why := "failed"
		if r.sets[j].NotAttempted != "" {
			why = "was not attempted"
		}
		reason := fmt.Sprintf("depends on target %s, which %s", targets[j].Name, why)
		if !slices.Contains(t.DependsOn, targets[j].Name) {
			reason = fmt.Sprintf("needs the Namespaces or CRDs of target %s, which %s", targets[j].Name, why)
		}
		return &ChangeSet{Target: t.Name, Revision: t.Options.Revision, NotAttempted: reason}, nil
	}
	var p *Plan
	if r.plan != nil {
		p = r.plan.Plans[i]
	}
	// A target with nothing to do costs reads only: it takes no turn.
	if p == nil || !p.Noop() {
		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			return &ChangeSet{Target: t.Name, Revision: t.Options.Revision, NotAttempted: "the run was stopped"}, fmt.Errorf("target %q: %w", t.Name, ctx.Err())
		}
		defer func() { <-r.sem }()
	}
	opts := t.Options
	opts.Target, opts.Provided = t.Name, r.g.provided(i)
	var cs *ChangeSet
	var err error
	if p != nil {
		cs, err = t.Client.ApplyPlan(ctx, p, opts)
	} else {
		cs, err = t.Client.Apply(ctx, t.Objects, opts)
	}
	if cs == nil {
		cs = &ChangeSet{Target: t.Name, Revision: opts.Revision}
	}
	if err != nil {
		cs.Error = err.Error()
		err = fmt.Errorf("target %q: %w", t.Name, err)
	}
	return cs, err
}

// runObjects are the objects of a render that later targets may need: its
// Namespaces and CRDs.
func runObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		if gvk.Group == "" && gvk.Kind == "Namespace" || manifest.IsCRD(u) {
			out = append(out, u)
		}
	}
	return out
}
