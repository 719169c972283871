package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	r.mu.Lock()
	defer r.mu.Unlock()
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
	r.mu.Lock()
	defer r.mu.Unlock()
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.HelmReleases == HelmController || t.Revision != nil {
		return false
	}
	w := r.watch(t)
	return w.Unknown || holdsReleases(t.Root, w)
}

// buildKey is the key of t's build in render.Options.Builds: its name,
// cluster and definition, where it is, the options that change a build,
// the content of every file its kustomization files may read
// (render.Inputs), and the objects its variables come from. "" when the
// build is not kept: what it reads is not known, it renders an artifact,
// another ref or a ResourceSet, or a variable source cannot be read.
func (r *Repo) buildKey(ctx context.Context, t *Target) string {
	if r.opts.Builds == nil || t.Err != nil || t.Artifact != nil || t.Revision != nil || r.declares(t).may("ResourceSet") {
		return ""
	}
	w := r.watch(t)
	if w.Unknown {
		return ""
	}
	h := sha256.New()
	root, ok := r.within(t.Root)
	if !ok {
		root = "outside:" + t.Root
	}
	spec, err := json.Marshal(t.Kustomization.Object)
	if err != nil {
		return ""
	}
	limits := r.Limits()
	opts, _ := json.Marshal([]any{r.opts.NoDecrypt, r.opts.Decryptor != nil, r.opts.AllowRemoteBases, r.opts.Workspace, r.opts.Checkout, limits, r.readCluster == nil})
	fmt.Fprintf(h, "%q %q %q %s %s\n", t.Name, t.Cluster, root, spec, opts)
	file := func(p, rel string) {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(h, "file %q: none\n", rel)
			return
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "file %q %x\n", rel, sum)
	}
	for _, f := range slices.Sorted(slices.Values(w.Files)) {
		file(filepath.Join(t.Root, filepath.FromSlash(f)), f)
	}
	for _, d := range slices.Sorted(slices.Values(w.Dirs)) {
		base := filepath.Join(t.Root, filepath.FromSlash(d))
		err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(t.Root, p)
			switch {
			case e.Type().IsRegular():
				file(p, filepath.ToSlash(rel))
			case e.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				fmt.Fprintf(h, "link %q %q\n", filepath.ToSlash(rel), target)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		fmt.Fprintf(h, "dir %q\n", d)
	}
	from, _, _ := unstructured.NestedSlice(t.Kustomization.Object, "spec", "postBuild", "substituteFrom")
	for _, f := range from {
		m, _ := f.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		o, err := r.lookup(ctx, t, kind, t.Kustomization.GetNamespace(), name)
		if err != nil {
			return ""
		}
		var b []byte
		if o != nil {
			if b, err = json.Marshal(o.Object); err != nil {
				return ""
			}
		}
		fmt.Fprintf(h, "var %q %q %s\n", kind, name, b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
