package config

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/render"
)

// instanceChart is the name of the Flux Operator's chart that installs a
// FluxInstance from a HelmRelease's values.
const instanceChart = "flux-instance"

// instanceChartRoots adds to roots the clusters that HelmReleases of the
// flux-instance chart declare: the chart makes a FluxInstance whose
// spec.sync is the release's values.instance.sync, so those values (as
// the release's folder renders them: patched, substituted, valuesFrom
// merged) are read as a FluxInstance's. A root of the same folder found
// another way stays, except a bare clusters/<name> folder, which this
// replaces. A release whose values cannot be read is skipped, with the
// reason, and leaves its cluster to the other ways.
func (r *Repo) instanceChartRoots(ctx context.Context, objs []FluxObject, roots []clusterRoot) []clusterRoot {
	for _, o := range objs {
		if !isInstanceRelease(o.Object, objs) {
			continue
		}
		sync, err := r.instanceReleaseSync(ctx, o, objs)
		if err != nil {
			r.Skipped = append(r.Skipped, Skipped{Name: o.Object.GetName(), Origin: o.Where(), Reason: fmt.Sprintf("HelmRelease of the %s chart, read as a cluster root: %v", instanceChart, err)})
			continue
		}
		if sync == nil {
			continue
		}
		p, _, _ := unstructured.NestedString(sync.Object.Object, "spec", "path")
		p = path.Clean(strings.TrimPrefix(p, "./"))
		if p == "." {
			continue
		}
		root := clusterRoot{Cluster: Cluster{Name: path.Base(p), Path: p, Origin: o.Where(), From: ClusterFromInstanceChart}, sync: sync}
		roots = replaceRoot(roots, root, func(old clusterRoot) bool { return old.From == ClusterFromFolder })
	}
	return roots
}

// replaceRoot adds root to roots, in the place of a root of the same
// folder when replace says it may go, and not at all when one that stays
// has that folder.
func replaceRoot(roots []clusterRoot, root clusterRoot, replace func(clusterRoot) bool) []clusterRoot {
	for i, old := range roots {
		if old.Path == root.Path {
			if replace(old) {
				roots[i] = root
			}
			return roots
		}
	}
	return append(roots, root)
}

// isInstanceRelease says whether u is a Flux HelmRelease of the
// flux-instance chart: named so in spec.chart.spec.chart, or through a
// chartRef to an OCIRepository of the repository whose URL ends in
// /flux-instance (or, when the repository has none of that name, one
// named flux-instance).
func isInstanceRelease(u *unstructured.Unstructured, objs []FluxObject) bool {
	if !helm.IsRelease(u) {
		return false
	}
	if chart, _, _ := unstructured.NestedString(u.Object, "spec", "chart", "spec", "chart"); chart != "" {
		return path.Base(chart) == instanceChart
	}
	ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "chartRef")
	if ref["kind"] != "OCIRepository" || ref["name"] == "" {
		return false
	}
	for _, o := range objs {
		if gvk := o.Object.GroupVersionKind(); gvk.Group == SourceGroup && gvk.Kind == "OCIRepository" && o.Object.GetName() == ref["name"] {
			url, _, _ := unstructured.NestedString(o.Object.Object, "spec", "url")
			return path.Base(strings.TrimSuffix(url, "/")) == instanceChart
		}
	}
	return ref["name"] == instanceChart
}

// instanceReleaseSync renders the folder that holds the flux-instance
// HelmRelease o (with the Kustomization that renders that folder, when
// the repository has one: its patches and substitutions apply), composes
// the release's values as helm-controller does (valuesFrom, then
// spec.values) from what that render holds, and returns the sync
// Kustomization its values.instance.sync makes; nil when the values have
// no sync path.
func (r *Repo) instanceReleaseSync(ctx context.Context, o FluxObject, objs []FluxObject) (*FluxObject, error) {
	ks := r.folderKustomization(o.File, objs)
	res, err := render.Build(ctx, render.Spec{Name: "flux-instance HelmRelease " + o.Where(), Root: r.Root, Kustomization: ks, LeaveMissing: true}, r.opts)
	if err != nil {
		return nil, err
	}
	var hr *unstructured.Unstructured
	for _, u := range res.Set.Objects {
		if helm.IsRelease(u) && u.GetName() == o.Object.GetName() {
			hr = u
			break
		}
	}
	if hr == nil {
		return nil, fmt.Errorf("the render of its folder does not hold it")
	}
	rel, err := helm.ParseRelease(hr)
	if err != nil {
		return nil, err
	}
	values, err := helm.ComposeValues(rel, func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
		for _, u := range res.Set.Objects {
			if u.GetAPIVersion() == "v1" && u.GetKind() == kind && u.GetNamespace() == namespace && u.GetName() == name {
				return u, true
			}
		}
		return nil, false
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel.ID(), err)
	}
	sync, _, _ := unstructured.NestedMap(values, "instance", "sync")
	ns, _, _ := unstructured.NestedString(hr.Object, "spec", "targetNamespace")
	if ns == "" {
		ns = namespaceOr(hr.GetNamespace())
	}
	return syncKustomization(ns, sync, o.File, o.Line), nil
}

// folderKustomization is the Kustomization that renders the file: the
// one of the repository whose spec.path is the deepest folder holding it,
// else one synthesized over the closest folder above it with a
// kustomization.yaml, else over the file's own folder.
func (r *Repo) folderKustomization(file string, objs []FluxObject) *unstructured.Unstructured {
	var best *unstructured.Unstructured
	bestLen := -1
	for _, o := range objs {
		if !isKustomization(o.Object) {
			continue
		}
		p, _, _ := unstructured.NestedString(o.Object.Object, "spec", "path")
		p = path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./"))
		if p != "." && strings.HasPrefix(file, p+"/") && len(p) > bestLen {
			best, bestLen = o.Object, len(p)
		}
	}
	if best != nil {
		return best.DeepCopy()
	}
	dir := path.Dir(file)
	for d := dir; d != "." && d != "/"; d = path.Dir(d) {
		for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
			if _, err := os.Stat(filepath.Join(r.Root, filepath.FromSlash(d), name)); err == nil {
				return syntheticKustomization(instanceChart, d)
			}
		}
	}
	return syntheticKustomization(instanceChart, dir)
}

// declaredRoots applies ferry.yaml's clusters.<name>.path: each is the
// root of the cluster of that name, in place of any root found for that
// folder (whose sync Kustomization it keeps) or with that name. A path
// that is not a folder of the repository is skipped, with the reason.
func (r *Repo) declaredRoots(roots []clusterRoot) []clusterRoot {
	if r.File == nil {
		return roots
	}
	for _, name := range slices.Sorted(maps.Keys(r.File.Clusters)) {
		c := r.File.Clusters[name]
		if c.Path == "" {
			continue
		}
		origin := fmt.Sprintf("%s clusters.%s.path", FileName, name)
		p, err := r.clusterPath(c.Path)
		if err != nil {
			r.Skipped = append(r.Skipped, Skipped{Name: name, Cluster: name, Origin: origin, Reason: fmt.Sprintf("cluster root %q: %v", c.Path, err)})
			roots = removeRoots(roots, func(old clusterRoot) bool { return old.Name == name })
			continue
		}
		root := clusterRoot{Cluster: Cluster{Name: name, Path: p, Origin: origin, From: ClusterFromFile}}
		for _, old := range roots {
			if old.Path == p && old.sync != nil {
				root.sync = old.sync
			}
		}
		if root.sync == nil {
			root.sync = &FluxObject{Object: syncOver(p), File: FileName}
		}
		roots = removeRoots(roots, func(old clusterRoot) bool { return old.Path == p || old.Name == name })
		roots = append(roots, root)
	}
	return roots
}

// clusterPath is p, a cluster root of ferry.yaml, as a folder relative to
// the repository, or why it is not one.
func (r *Repo) clusterPath(p string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("is outside the repository")
	}
	dir := filepath.Join(r.Root, filepath.FromSlash(clean))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("is not a folder of the repository")
	}
	if _, inside := r.within(real); !inside {
		return "", fmt.Errorf("leads outside the repository")
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("is not a folder of the repository")
	}
	return clean, nil
}

// syncOver is the flux-system sync Kustomization of a root at folder p.
func syncOver(p string) *unstructured.Unstructured {
	return syncKustomization(DefaultNamespace, map[string]any{"path": p}, FileName, 0).Object
}

func removeRoots(roots []clusterRoot, drop func(clusterRoot) bool) []clusterRoot {
	out := roots[:0]
	for _, r := range roots {
		if !drop(r) {
			out = append(out, r)
		}
	}
	return out
}
