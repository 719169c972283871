package config

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
)

// checkIdentities refuses a render of t in which two objects share an
// identity (manifest.Unique): kustomize refuses "defined twice" within
// its own build, but a chart's object or hook may have the identity of a
// plain manifest (or of another release's object), and kustomize lets
// two versions of one kind through. Applying both would send one object
// twice, while a diff would show only one of them. Scopes come from
// kustomize's Kubernetes schema and the CRDs of the render.
//
// res is the render, build the kustomize build it was expanded from (its
// files name where a plain object came from), chart the origins of the
// objects charts rendered.
func (r *Repo) checkIdentities(t *Target, res, build *render.Result, chart map[*unstructured.Unstructured]string) error {
	crds := crdKinds(res.Set.Objects)
	var kustomized map[*unstructured.Unstructured]string // found on the first duplicate only
	origin := func(u *unstructured.Unstructured) string {
		if o, ok := chart[u]; ok {
			return o
		}
		if kustomized == nil {
			kustomized = r.manifestFiles(t, build)
		}
		if f := kustomized[u]; f != "" {
			return f
		}
		return "the kustomize build of " + t.Path
	}
	err := manifest.Unique(res.Set.Objects, func(u *unstructured.Unstructured) bool { return namespaced(u, crds) }, origin)
	if err != nil {
		return fmt.Errorf("target %q: %w", t.Name, err)
	}
	return nil
}

// chartOrigin names where an object of a chart came from:
// HelmRelease/shop/web (chart web 1.2.0, templates/hook.yaml).
func chartOrigin(release string, rendered *helm.Rendered, source string) string {
	where := "chart " + rendered.Chart + " " + rendered.Version
	if source != "" {
		where += ", " + source
	}
	return release + " (" + where + ")"
}

// manifestFiles finds, for the objects of a kustomize build, the file
// among those it read that holds the object's document: the one file
// with a document of its apiVersion, kind and name. An object no file
// (or more than one) holds so, renamed by a prefix, made by a generator
// or patched in two places, has none. Only asked when a render is
// refused, so it reads the files again rather than have every build
// record where each object came from.
func (r *Repo) manifestFiles(t *Target, build *render.Result) map[*unstructured.Unstructured]string {
	holders := map[objectHead][]string{}
	for _, f := range build.Files {
		for _, h := range r.fileObjects(t, f) {
			holders[h] = append(holders[h], f)
		}
	}
	out := map[*unstructured.Unstructured]string{}
	for _, u := range build.Set.Objects {
		if files := holders[objectHead{u.GetAPIVersion(), u.GetKind(), u.GetName()}]; len(files) == 1 {
			out[u] = files[0]
		}
	}
	return out
}

// objectHead is what identifies a document of a file well enough to
// tell which file an object of a build came from.
type objectHead struct{ apiVersion, kind, name string }

// fileObjects lists the apiVersion, kind and name of each document of a
// YAML file a build of t read (named relative to the repository, or to
// t's root when that is another checkout), each once. A file that cannot
// be read or parsed lists what it can.
func (r *Repo) fileObjects(t *Target, file string) []objectHead {
	if ext := filepath.Ext(file); ext != ".yaml" && ext != ".yml" || !filepath.IsLocal(filepath.FromSlash(file)) {
		return nil
	}
	root := t.Root
	if _, ok := r.within(t.Root); ok {
		root = r.Root
	}
	data, err := manifest.ReadFile(filepath.Join(root, filepath.FromSlash(file)), file)
	if err != nil || manifest.CheckAliases(file, data) != nil {
		return nil
	}
	var out []objectHead
	seen := map[objectHead]bool{}
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := rd.Read()
		if err != nil {
			return out
		}
		var u unstructured.Unstructured
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil || u.Object == nil {
			continue
		}
		h := objectHead{u.GetAPIVersion(), u.GetKind(), u.GetName()}
		if h.kind != "" && h.name != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
}
