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
	namespace string
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
// ArtifactGenerators make, by namespace/name. A generator without a
// namespace in its file takes the one its kustomization gives it.
func indexArtifacts(objs []FluxObject, inc *includes) map[string]*generatedArtifact {
	out := map[string]*generatedArtifact{}
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
			key := ns + "/" + a.Name
			if _, dup := out[key]; !dup {
				out[key] = &generatedArtifact{generator: o, namespace: ns, sources: spec.Sources, copy: a.Copy}
			}
		}
	}
	return out
}

// resolveArtifact sets what a target whose sourceRef is the
// ExternalArtifact ns/name renders from, or returns why it cannot be.
func (r *Repo) resolveArtifact(ctx context.Context, t *Target, ns, name string, self map[string]bool) string {
	id := "ExternalArtifact/" + ns + "/" + name
	ga := r.artifacts[ns+"/"+name]
	if ga == nil {
		return fmt.Sprintf("source %s: no ArtifactGenerator in this repository makes it", id)
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
