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
	byName := map[string]*Target{}
	for _, t := range r.Targets {
		byName[t.Name] = t
	}
	sorted := make([]*Target, 0, len(r.Targets))
	state := map[*Target]int{} // 1 visiting, 2 done
	var stack []string
	var visit func(t *Target) error
	visit = func(t *Target) error {
		switch state[t] {
		case 2:
			return nil
		case 1:
			i := 0
			for i < len(stack) && stack[i] != t.Name {
				i++
			}
			cycle := append(append([]string{}, stack[i:]...), t.Name)
			return fmt.Errorf("dependsOn cycle: %s (%s)", strings.Join(cycle, " -> "), t.Origin)
		}
		state[t] = 1
		stack = append(stack, t.Name)
		for _, d := range t.DependsOn {
			if err := visit(byName[d]); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[t] = 2
		sorted = append(sorted, t)
		return nil
	}
	names := make([]*Target, len(r.Targets))
	copy(names, r.Targets)
	sort.SliceStable(names, func(i, j int) bool { return names[i].Name < names[j].Name })
	for _, t := range names {
		if err := visit(t); err != nil {
			return err
		}
	}
	r.Targets = sorted
	return nil
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
