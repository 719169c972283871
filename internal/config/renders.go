package config

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/render"
)

// Spec is what render.Build needs to render the target.
func (r *Repo) spec(t *Target) render.Spec {
	return render.Spec{
		Name:          t.Name,
		Root:          t.Root,
		Kustomization: t.Kustomization,
		Artifact:      t.Artifact,
		LeaveMissing:  r.readCluster == nil,
		Lookup: func(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error) {
			return r.lookup(ctx, t, kind, namespace, name)
		},
	}
}

// Render renders a target once and caches the result (or the error):
// its build, with every Flux HelmRelease in it expanded into the objects
// of its chart unless the target's cluster leaves HelmReleases to a
// helm-controller. Each identity is in it once: an object that a chart
// (or a second release, or the chart itself) defines again fails the
// target, naming where each came from (checkIdentities). Every command
// reads a target's objects through Render.
func (r *Repo) Render(ctx context.Context, t *Target) (*render.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rendered(ctx, t)
}

// rendered is Render, in the caller's turn.
func (r *Repo) rendered(ctx context.Context, t *Target) (*render.Result, error) {
	if res, ok := r.expanded[t]; ok {
		return res, nil
	}
	if err, ok := r.expandErr[t]; ok {
		return nil, err
	}
	build, err := r.build(ctx, t)
	res := build
	if err == nil {
		var chart map[*unstructured.Unstructured]string
		if res, chart, err = r.expandReleases(ctx, t, build); err == nil {
			err = r.checkIdentities(t, res, build, chart)
		}
	}
	if err != nil {
		r.expandErr[t] = err
		return nil, err
	}
	r.expanded[t] = res
	return res, nil
}

// build renders a target's path once and caches the result (or the
// error), HelmReleases left as they are: discovery and the lookups of
// substituteFrom and valuesFrom sources read builds.
func (r *Repo) build(ctx context.Context, t *Target) (*render.Result, error) {
	if t.Err != nil {
		return nil, t.Err
	}
	if res, ok := r.results[t]; ok {
		return res, nil
	}
	if err, ok := r.errs[t]; ok {
		return nil, err
	}
	r.busy[t] = true
	key := r.buildKey(ctx, t)
	if key != "" {
		// A proposed revision built beside its trusted one waits for
		// the trusted one's build of the same key; the trusted one never
		// waits (render.Builds.Claim).
		var kept *render.Result
		var ok bool
		if r.trusted == nil {
			if kept, ok = r.opts.Builds.Get(key); !ok && r.opts.Builds.Claim(key) {
				defer r.opts.Builds.Release(key) // after Put: nothing
			}
		} else {
			kept, ok = r.opts.Builds.Await(ctx, key)
		}
		if ok {
			delete(r.busy, t)
			r.results[t] = kept
			return kept, nil
		}
	}
	res, err := render.Build(ctx, r.spec(t), r.opts)
	if err == nil {
		res, err = r.expandResourceSets(ctx, t.Cluster, res, false)
	}
	delete(r.busy, t)
	if err != nil {
		r.errs[t] = err
		return nil, err
	}
	res.Name = t.Name
	res.Files = r.repoFiles(t.Root, res.Files)
	res.Encrypted = r.repoFiles(t.Root, res.Encrypted)
	r.results[t] = res
	if key != "" {
		r.opts.Builds.Put(key, res)
	}
	return res, nil
}

// within is the folder dir relative to the repository ("." for the
// repository itself), or false when dir is outside it (another checkout).
func (r *Repo) within(dir string) (string, bool) {
	rel, err := filepath.Rel(r.Root, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// repoFiles makes paths relative to dir (a render's root) relative to the
// repository, when dir is a folder of it: a source mapped to a folder of
// this repository reads files a change of the repository names so.
// Paths under another checkout stay relative to it.
func (r *Repo) repoFiles(dir string, files []string) []string {
	rel, ok := r.within(dir)
	if !ok || rel == "." {
		return files
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = rel + "/" + f
	}
	return out
}

// RenderAll renders every given target, in order, and reports every
// failure at once: callers print or apply nothing unless all succeed.
//
// While it renders one target, the kustomize builds of the next few run
// on the other cores (render.Ahead).
func (r *Repo) RenderAll(ctx context.Context, targets []*Target) ([]*render.Result, error) {
	ahead := render.NewAhead(runtime.GOMAXPROCS(0))
	r.mu.Lock()
	r.opts.Ahead = ahead
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.opts.Ahead = nil
		r.mu.Unlock()
	}()
	window := 2 * runtime.GOMAXPROCS(0)
	results := make([]*render.Result, 0, len(targets))
	var errs []error
	next := 0 // the first target not started ahead
	for i, t := range targets {
		for ; next < min(i+window, len(targets)); next++ {
			r.buildAhead(targets[next])
		}
		res, err := r.Render(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results = append(results, res)
	}
	return results, errors.Join(errs...)
}

// buildAhead starts t's kustomize build in r.opts.Ahead, unless t is
// built already or builds otherwise (an artifact, another ref).
func (r *Repo) buildAhead(t *Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Err != nil || t.Artifact != nil || t.Revision != nil {
		return
	}
	if _, ok := r.results[t]; ok {
		return
	}
	if _, ok := r.errs[t]; ok {
		return
	}
	r.opts.Ahead.Start(r.spec(t), r.opts)
}

// State is nil for a target that resolves and renders, else why it does
// not (its own error: a dependency that cannot be resolved does not make
// a target's render fail). It renders the target if that was not done yet.
func (r *Repo) State(ctx context.Context, t *Target) error {
	_, err := r.Render(ctx, t)
	return err
}

// Blocked is why the targets cannot be applied or checked for drift: for
// each, its own error or that of a target it depends on (directly or not),
// all joined; nil when none has one. Rendering needs no dependency;
// applying does.
func (r *Repo) Blocked(ts ...*Target) error {
	byName := make(map[string]*Target, len(r.Targets))
	for _, o := range r.Targets {
		byName[o.Name] = o
	}
	var errs []error
	for _, t := range ts {
		if err := blockedBy(t, byName); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// blockedBy is why t is blocked: its own error, or that of the first target
// it depends on (directly or not) that has one.
func blockedBy(t *Target, byName map[string]*Target) error {
	seen := map[*Target]bool{}
	var walk func(d *Target) error
	walk = func(d *Target) error {
		if seen[d] {
			return nil
		}
		seen[d] = true
		if d.Err != nil {
			if d == t {
				return d.Err
			}
			return fmt.Errorf("target %q depends on target %q, which cannot be resolved: %w", t.Name, d.Name, d.Err)
		}
		for _, n := range d.DependsOn {
			if dep := byName[n]; dep != nil {
				if err := walk(dep); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(t)
}

// Holds says whether what t's cluster renders holds an object of
// Kubernetes' core group (kind, namespace, name): its root's variable
// sources, then its targets' builds (charts not expanded), as
// clusterObject finds a chart's secretRef.
func (r *Repo) Holds(ctx context.Context, t *Target, kind, namespace, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clusterObject(ctx, t, &render.Result{}, "", kind, namespace, name) != nil
}
