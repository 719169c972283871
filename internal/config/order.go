package config

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// resolveDependencies turns each target's dependsOn into target names and
// orders Targets so that every target comes after the ones it depends on
// (names break ties). An unknown dependency or a cycle is an error of the
// targets concerned (Target.Err), not of the repository: the others are
// still listed, rendered and diffed. Targets in or after a cycle come last,
// in name order.
func (r *Repo) resolveDependencies() {
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
				t.fail(fmt.Errorf("target %q (%s): dependsOn %s, which is not a target of this repository", t.Name, t.Origin, d.describe(t)))
				continue
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
		sorted = append(sorted, markCycles(r.Targets, byName, pending)...)
	}
	r.Targets = sorted
}

// fail records err as the target's own error; the first one is kept.
func (t *Target) fail(err error) {
	if t.Err == nil {
		t.Err = err
	}
}

// describe names a dependency as the dependent sees it: its name, and the
// namespace it is looked up in.
func (d Dependency) describe(from *Target) string {
	ns := d.Namespace
	if ns == "" {
		ns = from.Namespace
	}
	return fmt.Sprintf("%q (namespace %s)", d.Name, ns)
}

// markCycles takes the targets Kahn's algorithm could not order (those in
// a dependsOn cycle and those that depend on one), gives each target of a
// cycle the cycle as its error, and returns them all in name order.
func markCycles(targets []*Target, byName map[string]*Target, pending map[string]int) []*Target {
	var left []*Target
	for _, t := range targets {
		if pending[t.Name] > 0 {
			left = append(left, t)
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i].Name < left[j].Name })
	for _, scc := range components(left, byName, pending) {
		if len(scc) == 1 && !slices.Contains(scc[0].DependsOn, scc[0].Name) {
			continue // depends on a cycle, is not in one
		}
		cycle := cyclePath(scc, byName)
		err := fmt.Errorf("dependsOn cycle: %s (%s)", strings.Join(cycle, " -> "), byName[cycle[0]].Origin)
		for _, t := range scc {
			t.fail(err)
		}
	}
	return left
}

// components returns the strongly connected components of the unordered
// targets (Tarjan's algorithm over their unordered dependencies).
func components(left []*Target, byName map[string]*Target, pending map[string]int) [][]*Target {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []*Target
	var out [][]*Target
	var visit func(t *Target)
	visit = func(t *Target) {
		index[t.Name] = len(index)
		low[t.Name] = index[t.Name]
		stack = append(stack, t)
		onStack[t.Name] = true
		for _, d := range t.DependsOn {
			if pending[d] == 0 {
				continue
			}
			if _, seen := index[d]; !seen {
				visit(byName[d])
				low[t.Name] = min(low[t.Name], low[d])
			} else if onStack[d] {
				low[t.Name] = min(low[t.Name], index[d])
			}
		}
		if low[t.Name] == index[t.Name] {
			var scc []*Target
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[top.Name] = false
				scc = append(scc, top)
				if top == t {
					break
				}
			}
			out = append(out, scc)
		}
	}
	for _, t := range left {
		if _, seen := index[t.Name]; !seen {
			visit(t)
		}
	}
	return out
}

// cyclePath is one cycle through a strongly connected component, from its
// smallest name back to it: a -> b -> a.
func cyclePath(scc []*Target, byName map[string]*Target) []string {
	in := map[string]bool{}
	start := scc[0]
	for _, t := range scc {
		in[t.Name] = true
		if t.Name < start.Name {
			start = t
		}
	}
	// Breadth-first from start to an edge back to it: the shortest cycle.
	prev := map[string]string{start.Name: ""}
	queue := []string{start.Name}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, d := range byName[n].DependsOn {
			if d == start.Name {
				var path []string
				for p := n; p != ""; p = prev[p] {
					path = append([]string{p}, path...)
				}
				return append(path, start.Name)
			}
			if _, seen := prev[d]; !seen && in[d] {
				prev[d] = n
				queue = append(queue, d)
			}
		}
	}
	return []string{start.Name, start.Name}
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
