// Package kube carries rendered objects to a cluster: server-side apply in
// dependency waves after a dry-run of everything, an ApplySet (KEP-3659)
// inventory per target, pruning, health waits and a Lease per target; a
// fleet of targets preflighted together from one read of each cluster and
// applied by their dependency graph, with one client per cluster (Clients);
// the live comparison diff and drift use; and the change sets it returns,
// as text, JSON and markdown.
package kube
