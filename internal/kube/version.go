package kube

import "fmt"

// RenderedFor is the Kubernetes version a target's charts were rendered
// for; "" when it has none.
type RenderedFor struct {
	Target, Version string
}

// VersionWarnings say, once per cluster, where a cluster serves another
// Kubernetes minor than its targets' HelmReleases were rendered for (a
// chart may render otherwise for it, and the pull request's diff showed
// the render, not what the cluster gets). clients[i] is rendered[i]'s.
func VersionWarnings(clients []*Client, rendered []RenderedFor) []string {
	var out []string
	checked := map[*Client]bool{}
	for i, r := range rendered {
		if r.Version == "" || clients[i] == nil || checked[clients[i]] {
			continue
		}
		checked[clients[i]] = true
		live, err := clients[i].ServerVersion()
		if err != nil {
			continue // the apply reports an unreachable cluster itself
		}
		if !SameMinor(live, r.Version) {
			out = append(out, fmt.Sprintf("cluster %s serves Kubernetes %s, and the HelmReleases of target %q were rendered for %s: declare the cluster's kubeVersion in ferry.yaml so diffs render what applies", clients[i].Host, live, r.Target, r.Version))
		}
	}
	return out
}
