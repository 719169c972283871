package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// MassPruneError stops a prune that would delete too much of a target.
type MassPruneError struct {
	Target        string
	Delete, Total int
	Ratio         float64
}

func (e *MassPruneError) Error() string {
	return fmt.Sprintf("target %q: prune would delete %d of the %d objects in its inventory (more than %.0f%%); nothing was applied or deleted (pass --allow-mass-prune if this is intended)",
		e.Target, e.Delete, e.Total, e.Ratio*100)
}

// listMembers lists the live members of the ApplySet: every object with
// its part-of label, for every kind the inventory or the render has.
//
// With a snapshot, the kinds it listed are taken from it: their members'
// metadata, which is all that planning an apply reads of them.
func (c *Client) listMembers(ctx context.Context, inv *Inventory, desired []*object, snap *snapshot) (map[string]*unstructured.Unstructured, error) {
	gks, namespaces := union(inv, desired)
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	selector := metav1.ListOptions{LabelSelector: LabelPartOf + "=" + inv.ID}
	live := map[string]*unstructured.Unstructured{}
	for _, gk := range gks {
		if members, ok := snap.membersOf(gk, inv.ID); ok {
			for _, u := range members {
				live[manifest.IDOf(u).String()] = u
			}
			continue
		}
		m, err := c.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue // its CRD is gone, or comes with this run: no members to find
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: mapping %s: %w", c.Host, gk, err)
		}
		var items []unstructured.Unstructured
		if m.Scope.Name() == meta.RESTScopeNameRoot {
			l, err := c.dynamic.Resource(m.Resource).List(ctx, selector)
			if err != nil {
				return nil, fmt.Errorf("cluster %s: listing %s: %w", c.Host, gk, err)
			}
			items = l.Items
		} else {
			l, err := c.dynamic.Resource(m.Resource).List(ctx, selector)
			if apierrors.IsForbidden(err) {
				// No cluster-wide list right: ask namespace by namespace.
				for _, ns := range namespaces {
					nl, err := c.dynamic.Resource(m.Resource).Namespace(ns).List(ctx, selector)
					if err != nil {
						return nil, fmt.Errorf("cluster %s: listing %s in %s: %w", c.Host, gk, ns, err)
					}
					items = append(items, nl.Items...)
				}
			} else if err != nil {
				return nil, fmt.Errorf("cluster %s: listing %s: %w", c.Host, gk, err)
			} else {
				items = l.Items
			}
		}
		for i := range items {
			u := &items[i]
			live[manifest.IDOf(u).String()] = u
		}
	}
	return live, nil
}

// prunable splits the live members that are no longer rendered into those
// to delete and those an annotation protects, and applies the mass-prune
// guard before anything is written.
func prunable(live map[string]*unstructured.Unstructured, desired []*object, opts PlanOptions) (prune, kept []*unstructured.Unstructured, err error) {
	want := map[string]bool{}
	for _, o := range desired {
		want[o.key] = true
	}
	for key, u := range live {
		if want[key] {
			continue
		}
		a := u.GetAnnotations()
		if a[AnnotationPrune] == PruneDisabled || a[AnnotationFluxPrune] == PruneDisabled {
			kept = append(kept, u)
			continue
		}
		prune = append(prune, u)
	}
	byID := func(list []*unstructured.Unstructured) {
		sort.Slice(list, func(i, j int) bool { return manifest.Less(manifest.IDOf(list[i]), manifest.IDOf(list[j])) })
	}
	byID(prune)
	byID(kept)
	if opts.Prune && !opts.AllowMassPrune && len(live) > 0 && float64(len(prune)) > opts.MassPruneRatio*float64(len(live)) {
		return nil, nil, &MassPruneError{Target: opts.Target, Delete: len(prune), Total: len(live), Ratio: opts.MassPruneRatio}
	}
	return prune, kept, nil
}

// pruneChanges reports members no longer rendered: pruned (in a dry run),
// skipped (protected) or orphaned (pruning off).
func pruneChanges(prune, kept []*unstructured.Unstructured, opts PlanOptions) []Change {
	var out []Change
	for _, u := range prune {
		if opts.Prune {
			out = append(out, Change{Object: manifest.IDOf(u), Action: Pruned})
		} else {
			out = append(out, Change{Object: manifest.IDOf(u), Action: Orphaned, Reason: "no longer rendered; pruning is off"})
		}
	}
	for _, u := range kept {
		out = append(out, Change{Object: manifest.IDOf(u), Action: Skipped, Reason: "no longer rendered; pruning disabled by annotation"})
	}
	return out
}

// prune deletes objects in reverse wave order (namespaced objects first,
// CRDs last), concurrently within a wave; a wave that fails stops the
// waves after it.
func (c *Client) prune(ctx context.Context, objs []*unstructured.Unstructured, cs *ChangeSet, concurrency int) error {
	policy := metav1.DeletePropagationBackground
	var mu sync.Mutex
	for wave := manifest.Waves - 1; wave >= 0; wave-- {
		var batch []*object
		var errs []error
		for _, u := range objs {
			if manifest.Wave(u) != wave {
				continue
			}
			o := &object{u: u, id: manifest.IDOf(u), wave: wave}
			gvk := u.GroupVersionKind()
			m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				errs = append(errs, fmt.Errorf("pruning %s: %w", o.id, err))
				continue
			}
			o.mapping = m
			batch = append(batch, o)
		}
		sort.Slice(batch, func(i, j int) bool { return manifest.Less(batch[i].id, batch[j].id) })
		err := c.each(ctx, batch, concurrency, func(ctx context.Context, o *object) error {
			uid := o.u.GetUID()
			err := c.resource(o).Delete(ctx, o.u.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("pruning %s: %w", o.id, err)
			}
			mu.Lock()
			cs.Changes = append(cs.Changes, Change{Object: o.id, Action: Pruned})
			mu.Unlock()
			return nil
		})
		if err := errors.Join(append(errs, err)...); err != nil {
			return err
		}
	}
	return nil
}
