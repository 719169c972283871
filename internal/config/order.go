package config

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"
)

// resolveDependencies turns each target's dependsOn into target names,
// refuses unknown dependencies and cycles, and orders Targets so that
// every target comes after the ones it depends on (names break ties).
func (r *Repo) resolveDependencies() error {
	byKsName := map[nameInCluster][]*Target{} // in Targets order
	for _, t := range r.Targets {
		key := nameInCluster{t.Kustomization.GetName(), t.Cluster}
		byKsName[key] = append(byKsName[key], t)
	}
	for _, t := range r.Targets {
		t.DependsOn = nil
		for _, d := range t.deps {
			dep := findDependency(byKsName, t, d)
			if dep == nil {
				return fmt.Errorf("target %q (%s): dependsOn %q, which is not a target of this repository", t.Name, t.Origin, d.Name)
			}
			t.DependsOn = append(t.DependsOn, dep.Name)
		}
		sort.Strings(t.DependsOn)
	}
	// Kahn's algorithm, always taking the smallest ready name, so a
	// target comes after its dependencies and otherwise in name order.
	byName := map[string]*Target{}
	pending := map[string]int{}
	dependents := map[string][]string{}
	for _, t := range r.Targets {
		byName[t.Name] = t
		pending[t.Name] = len(t.DependsOn)
		for _, d := range t.DependsOn {
			dependents[d] = append(dependents[d], t.Name)
		}
	}
	ready := &nameHeap{}
	for n, c := range pending {
		if c == 0 {
			heap.Push(ready, n)
		}
	}
	sorted := make([]*Target, 0, len(r.Targets))
	for ready.Len() > 0 {
		n := heap.Pop(ready).(string)
		sorted = append(sorted, byName[n])
		for _, dep := range dependents[n] {
			if pending[dep]--; pending[dep] == 0 {
				heap.Push(ready, dep)
			}
		}
	}
	if len(sorted) < len(r.Targets) {
		return cycleError(r.Targets, byName, pending)
	}
	r.Targets = sorted
	return nil
}

// cycleError names one dependsOn cycle among the targets left unsorted.
func cycleError(targets []*Target, byName map[string]*Target, pending map[string]int) error {
	var start *Target
	for _, t := range targets {
		if pending[t.Name] > 0 && (start == nil || t.Name < start.Name) {
			start = t
		}
	}
	if start == nil {
		return fmt.Errorf("dependsOn: the targets could not be ordered")
	}
	// Walk unsorted dependencies until a target repeats.
	seen := map[string]int{}
	var path []string
	for t := start; ; {
		if i, ok := seen[t.Name]; ok {
			cycle := append(append([]string{}, path[i:]...), t.Name)
			return fmt.Errorf("dependsOn cycle: %s (%s)", strings.Join(cycle, " -> "), byName[cycle[0]].Origin)
		}
		seen[t.Name] = len(path)
		path = append(path, t.Name)
		var next *Target
		for _, d := range t.DependsOn {
			if pending[d] > 0 {
				next = byName[d]
				break
			}
		}
		if next == nil {
			return fmt.Errorf("dependsOn: target %q could not be ordered (%s)", t.Name, t.Origin)
		}
		t = next
	}
}

// findDependency resolves a dependsOn entry: a target of the same cluster
// with that name (and namespace, when the entry gives one), the first in
// Targets order. byKsName holds the targets by Kustomization name and
// cluster.
func findDependency(byKsName map[nameInCluster][]*Target, from *Target, d Dependency) *Target {
	for _, t := range byKsName[nameInCluster{d.Name, from.Cluster}] {
		if t == from {
			continue
		}
		if d.Namespace != "" && t.Namespace != d.Namespace {
			continue
		}
		return t
	}
	return nil
}

// nameHeap is a min-heap of target names: Kahn's algorithm takes the
// smallest ready one in O(log n), where sorting the ready list again for
// every target made a wide fleet (hundreds ready at once) quadratic.
type nameHeap []string

func (h nameHeap) Len() int           { return len(h) }
func (h nameHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h nameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nameHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *nameHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
