package config

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/render"
)

// lookup finds a ConfigMap or Secret for substituteFrom among what the
// target's cluster renders: its root first, then its other targets.
func (r *Repo) lookup(ctx context.Context, from *Target, kind, namespace, name string) (*unstructured.Unstructured, error) {
	match := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && o.GetAPIVersion() == "v1" && o.GetName() == name && o.GetNamespace() == namespace {
				return o
			}
		}
		return nil
	}
	if o := r.rootVars[from.Cluster][objectKey{kind, namespace, name}]; o != nil {
		return o, nil
	}
	for res := range r.siblingBuilds(ctx, from, kind) {
		if o := match(res.Set.Objects); o != nil {
			return o, nil
		}
	}
	return r.fromCluster(ctx, from, kind, namespace, name)
}

// ClusterReader reads one ConfigMap or Secret from a target's cluster
// (get only); nil, nil when the cluster has none.
type ClusterReader func(ctx context.Context, t *Target, kind, namespace, name string) (*unstructured.Unstructured, error)

// ReadFromClusters has the ConfigMaps and Secrets that a target's
// postBuild.substituteFrom names, and that no render of its cluster
// holds, read from the target's cluster by read (apply, drift, diff
// --live), each once: a missing one then fails the target as it fails
// in Flux, unless optional. The values of Secrets read are hidden as
// decrypted ones are. Without it (render, diff, plan) such a target
// renders without them (render.Spec.LeaveMissing). Renders made before
// that went without an object are dropped, to be made again.
func (r *Repo) ReadFromClusters(read ClusterReader) {
	r.readCluster = read
	r.clusterVars = map[string]*unstructured.Unstructured{}
	for t, res := range r.results {
		if len(res.Without) > 0 {
			delete(r.results, t)
			delete(r.expanded, t)
			delete(r.expandErr, t)
		}
	}
}

// ClusterReadsOnly is read limited to what r (a base revision) would
// read from a cluster: the substituteFrom objects its targets of the same
// cluster name. Anything else a proposed revision asks for is refused,
// so a pull request cannot choose a cluster object to read into its
// diff.
func (r *Repo) ClusterReadsOnly(read ClusterReader) ClusterReader {
	return func(ctx context.Context, t *Target, kind, namespace, name string) (*unstructured.Unstructured, error) {
		for _, bt := range r.Targets {
			if bt.Cluster == t.Cluster && substitutesFrom(bt, kind, namespace, name) {
				return read(ctx, t, kind, namespace, name)
			}
		}
		return nil, fmt.Errorf("the base revision reads no %s/%s/%s from the cluster, and a pull request cannot add what ferry reads from a cluster", kind, namespace, name)
	}
}

// substitutesFrom says whether t's postBuild.substituteFrom names the
// object kind namespace/name.
func substitutesFrom(t *Target, kind, namespace, name string) bool {
	from, _, _ := unstructured.NestedSlice(t.Kustomization.Object, "spec", "postBuild", "substituteFrom")
	for _, e := range from {
		ref, _ := e.(map[string]any)
		if ref["kind"] == kind && ref["name"] == name && t.Kustomization.GetNamespace() == namespace {
			return true
		}
	}
	return false
}

// fromCluster is lookup's last resort: the object read from from's
// cluster, when ReadFromClusters asked for it (nil, nil otherwise, and
// when the cluster has none).
func (r *Repo) fromCluster(ctx context.Context, from *Target, kind, namespace, name string) (*unstructured.Unstructured, error) {
	if r.readCluster == nil {
		return nil, nil
	}
	key := from.Cluster + "/" + kind + "/" + namespace + "/" + name
	if u, ok := r.clusterVars[key]; ok {
		return u, nil
	}
	u, err := r.readCluster(ctx, from, kind, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("reading it from the cluster: %w", err)
	}
	if u != nil && kind == "Secret" {
		r.opts.Decryptor.Hide(secretLeaves([]*unstructured.Unstructured{u})...)
	}
	r.clusterVars[key] = u
	return u, nil
}

// siblingBuilds yields the builds of the other targets of t's cluster
// (those not being built, which would be a cycle) whose files may
// declare an object of one of kinds (config.declared), in order; a
// target that fails to build is passed over (its error is reported when
// it is rendered itself). A target that cannot hold what is looked for
// is not built.
func (r *Repo) siblingBuilds(ctx context.Context, t *Target, kinds ...string) iter.Seq[*render.Result] {
	return func(yield func(*render.Result) bool) {
		for _, other := range r.Targets {
			if other == t || other.Cluster != t.Cluster || r.busy[other] {
				continue
			}
			if d := r.declares(other); !slices.ContainsFunc(kinds, d.may) {
				continue
			}
			res, err := r.build(ctx, other)
			if err == nil && !yield(res) {
				return
			}
		}
	}
}
