package config

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/render"
)

// Footprint is what a target's render depends on, found without
// rendering a chart: two revisions whose footprints of a target are
// equal render it alike (see diff's changed-only plan).
type Footprint struct {
	// Build is the target's build, HelmReleases not expanded: its
	// objects hold every variable substituted and every object it was
	// patched with.
	Build *render.Result
	// Releases are, by HelmRelease ID, the key of everything its render
	// takes but the chart's content (its spec, chart source, composed
	// values, the cluster's Kubernetes and API versions), or "skipped:
	// " and the reason for a release the revision does not fetch. Nil
	// when the target's HelmReleases are left to a helm-controller.
	Releases map[string]string
	// Files are the files of this revision the render reads: the
	// build's, and those of its chart folders. None for a target that
	// renders another ref of the repository.
	Files []string
}

// Footprint builds t and prepares each of its HelmReleases up to the
// render of its chart. A build that fails, or a release whose values or
// source cannot be resolved, is an error, as its render would be.
func (r *Repo) Footprint(ctx context.Context, t *Target) (*Footprint, error) {
	build, err := r.build(ctx, t)
	if err != nil {
		return nil, err
	}
	fp := &Footprint{Build: build}
	if t.Revision == nil {
		fp.Files = slices.Clone(build.Files)
	}
	if t.HelmReleases == HelmController {
		return fp, nil
	}
	var apiVersions []string
	for _, o := range build.Set.Objects {
		if !helm.IsRelease(o) {
			continue
		}
		if fp.Releases == nil {
			fp.Releases = map[string]string{}
			apiVersions = r.clusterAPIVersions(ctx, t, build)
		}
		id := "HelmRelease/" + o.GetNamespace() + "/" + o.GetName()
		pr, err := r.prepareRelease(ctx, t, build, o)
		var skip *skippedRelease
		switch {
		case errors.As(err, &skip):
			fp.Releases[id] = "skipped: " + skip.reason
			continue
		case err != nil:
			return nil, fmt.Errorf("target %q: %w", t.Name, err)
		case pr.valuesErr != nil:
			return nil, fmt.Errorf("target %q: %s: %w", t.Name, pr.rel.ID(), withholdValues(pr.valuesErr, pr.secrets))
		}
		fp.Releases[id] = pr.key(t.KubeVersion, apiVersions)
		if t.Revision == nil {
			fp.Files = append(fp.Files, pr.files...)
		}
	}
	return fp, nil
}

// Build is t's build, HelmReleases not expanded (rendered once, as for
// Render).
func (r *Repo) Build(ctx context.Context, t *Target) (*render.Result, error) {
	return r.build(ctx, t)
}

// RootRender is what the root of cluster renders: its objects and the
// files of this revision it read (none for a cluster without a root
// render, such as one of ferry.yaml's targets).
func (r *Repo) RootRender(cluster string) ([]*unstructured.Unstructured, []string) {
	var files []string
	for f := range r.rootFiles[cluster] {
		files = append(files, f)
	}
	slices.Sort(files)
	return r.rootAll[cluster], files
}

// RendersReleases reports whether t's render may expand HelmReleases:
// a file it reads declares one (or what it reads is not known), and its
// cluster renders them.
func (r *Repo) RendersReleases(t *Target) bool {
	if t.HelmReleases == HelmController || t.Revision != nil {
		return false
	}
	w := render.Inputs(r.spec(t))
	return w.Unknown || holdsReleases(t.Root, w)
}
