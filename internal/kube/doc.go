// Package kube carries rendered objects to a cluster: server-side apply in
// dependency waves after a dry-run of everything, an ApplySet (KEP-3659)
// inventory per target, pruning, health waits and a Lease per target.
package kube
