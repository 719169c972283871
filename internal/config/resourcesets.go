package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

// expandResourceSets returns res with each Flux Operator ResourceSet in
// it followed by the objects it generates (the ResourceSet stays, so
// that ActsOn can leave it out on a cluster without the operator's CRDs):
// generated Kustomizations are then found as targets, and generated
// HelmReleases rendered, as if they were written out. The providers a
// ResourceSet reads are the ResourceSetInputProviders of the same render.
// A ResourceSet whose inputs ferry cannot resolve (a provider that calls
// an API, with no inputs for it in ferry.yaml) is listed in
// res.Skipped; any other failure fails the render, naming the
// ResourceSet, unless keepGoing: then it is listed in res.Skipped too
// (a cluster root's render, whose failure would stop every target).
func (r *Repo) expandResourceSets(ctx context.Context, res *render.Result, keepGoing bool) (*render.Result, error) {
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
		got, err := resourceset.Expand(ctx, o, resourceset.Options{Providers: providers, Dynamic: r.providerInputs})
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
// calls an API: those ferry.yaml's inputProviders gives for it, else a
// SkipError saying how to give them.
func (r *Repo) providerInputs(_ context.Context, p *unstructured.Unstructured) ([]map[string]any, error) {
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
	typ, _, _ := unstructured.NestedString(p.Object, "spec", "type")
	return nil, &resourceset.SkipError{
		ResourceSet: "ResourceSetInputProvider/" + key,
		Reason:      fmt.Sprintf("ResourceSetInputProvider/%s of type %s takes its inputs from an API that a render does not call: give them in %s (inputProviders: {%s: [{...}]})", key, typ, FileName, key),
	}
}
