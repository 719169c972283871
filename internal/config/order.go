package config

import (
	"fmt"
	"sort"
	"strings"
)

// resolveDependencies turns each target's dependsOn into target names,
// refuses unknown dependencies and cycles, and orders Targets so that
// every target comes after the ones it depends on (names break ties).
func (r *Repo) resolveDependencies() error {
	for _, t := range r.Targets {
		t.DependsOn = nil
		for _, d := range t.deps {
			dep := r.findDependency(t, d)
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
	var ready []string
	for n, c := range pending {
		if c == 0 {
			ready = append(ready, n)
		}
	}
	sorted := make([]*Target, 0, len(r.Targets))
	for len(ready) > 0 {
		sort.Strings(ready)
		n := ready[0]
		ready = ready[1:]
		sorted = append(sorted, byName[n])
		for _, dep := range dependents[n] {
			if pending[dep]--; pending[dep] == 0 {
				ready = append(ready, dep)
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
// with that name (and namespace, when the entry gives one).
func (r *Repo) findDependency(from *Target, d Dependency) *Target {
	for _, t := range r.Targets {
		if t == from || t.Cluster != from.Cluster {
			continue
		}
		name := t.Kustomization.GetName()
		if name != d.Name {
			continue
		}
		if d.Namespace != "" && t.Namespace != d.Namespace {
			continue
		}
		return t
	}
	return nil
}
