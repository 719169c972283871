package config

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/render"
)

// generatedArtifact is one output artifact of an ArtifactGenerator found
// in the repository: the ExternalArtifact of that name and namespace.
type generatedArtifact struct {
	generator FluxObject
	// cluster is the cluster whose folder holds the generator's file, ""
	// for a file outside every cluster folder.
	cluster   string
	namespace string
	name      string
	sources   []generatorSource
	copy      []render.CopyRule
}

type generatorSource struct {
	Alias     string `json:"alias"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// indexArtifacts finds the ExternalArtifacts the repository's
// ArtifactGenerators make, in file order. A generator without a
// namespace in its file takes the one its kustomization gives it.
// Namespace and name are unique in a cluster only: each cluster of a
// fleet may keep a generator of the same name (see artifactFor).
func indexArtifacts(objs []FluxObject, inc *includes, roots []clusterRoot) []*generatedArtifact {
	var out []*generatedArtifact
	for _, o := range objs {
		gvk := o.Object.GroupVersionKind()
		if gvk.Group != SourceExtensionsGroup || gvk.Kind != "ArtifactGenerator" {
			continue
		}
		ns := o.Object.GetNamespace()
		if n := inc.namespaceOf(o.File); n != "" {
			ns = n
		}
		ns = namespaceOr(ns)
		var spec struct {
			Sources   []generatorSource `json:"sources"`
			Artifacts []struct {
				Name string            `json:"name"`
				Copy []render.CopyRule `json:"copy"`
			} `json:"artifacts"`
		}
		raw, _, _ := unstructured.NestedMap(o.Object.Object, "spec")
		if err := toStruct(raw, &spec); err != nil {
			continue // left to the target that uses it to report
		}
		for _, a := range spec.Artifacts {
			out = append(out, &generatedArtifact{generator: o, cluster: clusterOfFile(o.File, roots), namespace: ns, name: a.Name, sources: spec.Sources, copy: a.Copy})
		}
	}
	return out
}

// artifactFor finds the generator of the ExternalArtifact ns/name as
// t's cluster sees it: one in the cluster's folder first, then one its
// root's render reads (a shared folder the root includes), then one
// outside every cluster folder; the first in file order of each.
func (r *Repo) artifactFor(t *Target, ns, name string) *generatedArtifact {
	tiers := []func(*generatedArtifact) bool{
		func(ga *generatedArtifact) bool { return t.Cluster != "" && ga.cluster == t.Cluster },
		func(ga *generatedArtifact) bool { return r.rootFiles[t.Cluster][ga.generator.File] },
		func(ga *generatedArtifact) bool { return ga.cluster == "" },
	}
	for _, in := range tiers {
		for _, ga := range r.artifacts {
			if ga.namespace == ns && ga.name == name && in(ga) {
				return ga
			}
		}
	}
	return nil
}

// resolveArtifact sets what a target whose sourceRef is the
// ExternalArtifact ns/name renders from, or returns why it cannot be.
func (r *Repo) resolveArtifact(ctx context.Context, t *Target, ns, name string, self map[string]bool) string {
	id := "ExternalArtifact/" + ns + "/" + name
	ga := r.artifactFor(t, ns, name)
	if ga == nil {
		where := "this repository"
		if t.Cluster != "" {
			where = "cluster " + t.Cluster
		}
		return fmt.Sprintf("source %s: no ArtifactGenerator of %s makes it", id, where)
	}
	gen := fmt.Sprintf("ArtifactGenerator/%s/%s (%s)", ga.namespace, ga.generator.Object.GetName(), ga.generator.Where())
	a := &render.Artifact{Name: name, Generator: gen, Sources: map[string]render.ArtifactSource{}, Copy: ga.copy}
	for _, s := range ga.sources {
		sns := s.Namespace
		if sns == "" {
			sns = ga.namespace
		}
		if s.Kind == "ExternalArtifact" {
			return fmt.Sprintf("source %s: %s: alias %q is an ExternalArtifact, which ferry does not chain yet", id, gen, s.Alias)
		}
		dir, _, reason := r.sourceDir(ctx, t.Cluster, s.Kind, sns, s.Name, self)
		if reason != "" {
			return fmt.Sprintf("source %s: %s: alias %q: %s", id, gen, s.Alias, reason)
		}
		prefix := ""
		if rel, ok := r.within(dir); ok && rel != "." {
			prefix = rel
		} else if !ok {
			prefix = relOutside(r.Root, dir)
		}
		a.Sources[s.Alias] = render.ArtifactSource{Dir: dir, Prefix: prefix}
	}
	t.Root = r.Root // files are reported by their sources' paths
	t.Artifact = a
	return ""
}

// relOutside names a folder outside the repository relative to it
// (../app-repo), or by its absolute path when there is no such name.
func relOutside(root, dir string) string {
	if rel, err := filepath.Rel(root, dir); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(dir)
}

func toStruct(m map[string]any, out any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
