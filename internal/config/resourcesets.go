package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/inputprovider"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

// expandResourceSets returns res with each Flux Operator ResourceSet in
// it followed by the objects it generates (the ResourceSet stays, so
// that ActsOn can leave it out on a cluster without the operator's CRDs):
// generated Kustomizations are then found as targets, and generated
// HelmReleases rendered, as if they were written out. The providers a
// ResourceSet reads are the ResourceSetInputProviders of the same render,
// in cluster. A ResourceSet whose inputs ferry cannot resolve (a provider
// that calls an API ferry may not call, with no inputs for it in
// ferry.yaml) is listed in
// res.Skipped; any other failure fails the render, naming the
// ResourceSet, unless keepGoing: then it is listed in res.Skipped too
// (a cluster root's render, whose failure would stop every target).
func (r *Repo) expandResourceSets(ctx context.Context, cluster string, res *render.Result, keepGoing bool) (*render.Result, error) {
	if !slices.ContainsFunc(res.Set.Objects, resourceset.IsResourceSet) {
		return res, nil
	}
	var providers []*unstructured.Unstructured
	for _, o := range res.Set.Objects {
		if resourceset.IsProvider(o) {
			providers = append(providers, o)
		}
	}
	out := *res
	out.Set = manifest.Set{Objects: make([]*unstructured.Unstructured, 0, len(res.Set.Objects))}
	out.Skipped = slices.Clone(res.Skipped)
	for _, o := range res.Set.Objects {
		out.Set.Objects = append(out.Set.Objects, o)
		if !resourceset.IsResourceSet(o) {
			continue
		}
		id := "ResourceSet/" + o.GetNamespace() + "/" + o.GetName()
		got, err := resourceset.Expand(ctx, o, resourceset.Options{Providers: providers, Dynamic: func(ctx context.Context, p *unstructured.Unstructured) ([]map[string]any, error) {
			return r.providerInputs(ctx, cluster, p)
		}})
		var skip *resourceset.SkipError
		if errors.As(err, &skip) {
			out.Skipped = append(out.Skipped, render.SkippedObject{ID: id, Reason: skip.Reason})
			continue
		}
		if err != nil && keepGoing {
			out.Skipped = append(out.Skipped, render.SkippedObject{ID: id, Reason: strings.TrimPrefix(err.Error(), id+": ")})
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Set.Objects = append(out.Set.Objects, got.Unstructured()...)
	}
	return &out, nil
}

// providerInputs gives the input sets of a ResourceSetInputProvider that
// calls an API: those ferry.yaml's inputProviders gives for it; else, when
// ferry.yaml's inputProviderAPIs allows it and the run says how to reach
// the APIs, what the API answers (see allowProvider for a proposed
// revision); else a SkipError saying how to give them.
func (r *Repo) providerInputs(ctx context.Context, cluster string, p *unstructured.Unstructured) ([]map[string]any, error) {
	key := namespaceOr(p.GetNamespace()) + "/" + p.GetName()
	if r.File != nil {
		if inputs, ok := r.File.InputProviders[key]; ok {
			out := make([]map[string]any, len(inputs))
			for i, in := range inputs {
				out[i] = map[string]any{}
				if err := toMap(in, &out[i]); err != nil {
					return nil, fmt.Errorf("%s inputProviders[%q][%d]: %w", FileName, key, i, err)
				}
			}
			return out, nil
		}
	}
	id := "ResourceSetInputProvider/" + key
	typ, _, _ := unstructured.NestedString(p.Object, "spec", "type")
	if r.File == nil || r.File.InputProviderAPIs == nil || r.opts.InputProviders == nil {
		return nil, &resourceset.SkipError{
			ResourceSet: id,
			Reason:      fmt.Sprintf("%s of type %s takes its inputs from an API that a render does not call: give them in %s (inputProviders: {%s: [{...}]}), or let ferry call it (%s: inputProviderAPIs: {forge: true} for the forge the job runs on, allowHosts: [host:port] for others)", id, typ, FileName, key, FileName),
		}
	}
	if err := r.allowProvider(ctx, cluster, p); err != nil {
		return nil, err
	}
	opts := *r.opts.InputProviders
	if !r.File.InputProviderAPIs.Forge {
		opts.Forge = nil
	}
	opts.AllowHosts = r.File.InputProviderAPIs.AllowHosts
	return inputprovider.Resolve(ctx, p, opts)
}

// allowProvider decides, for a proposed revision, whether provider's API
// may be called: only when the trusted revision's renders of cluster hold
// the same provider (namespace and name) with the same spec.type and
// spec.url. A pull request may change a provider's filter, never where
// it reaches.
func (r *Repo) allowProvider(ctx context.Context, cluster string, provider *unstructured.Unstructured) error {
	if r.trusted == nil {
		return nil
	}
	spec := func(o *unstructured.Unstructured) (string, string) {
		typ, _, _ := unstructured.NestedString(o.Object, "spec", "type")
		u, _, _ := unstructured.NestedString(o.Object, "spec", "url")
		return typ, u
	}
	typ, u := spec(provider)
	var base *unstructured.Unstructured
	done := r.trustedTurn()
	for _, o := range r.trusted.rootRSIP[cluster] {
		if o.GetNamespace() == provider.GetNamespace() && o.GetName() == provider.GetName() {
			base = o
		}
	}
	done()
	if base == nil {
		base = r.trustedSourceObject(ctx, cluster, "", provider)
	}
	if base != nil {
		if bt, bu := spec(base); bt == typ && bu == u {
			return nil
		}
	}
	id := "ResourceSetInputProvider/" + namespaceOr(provider.GetNamespace()) + "/" + provider.GetName()
	return &resourceset.SkipError{
		ResourceSet: id,
		Reason:      fmt.Sprintf("%s: new provider URL in a pull request: not called (type %s, url %s: the base branch has no such provider)", id, typ, u),
	}
}
