package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// declared is what the files a target's kustomization reads may declare,
// found without building it: the values of every kind key in them (a
// superset of the kinds of its objects, sourceRefs and the like
// included), whether a file names Flux's kustomize API, and whether a
// kustomization generates ConfigMaps or Secrets. A target whose inputs
// are not known, or a file of which cannot be read, may declare
// anything.
type declared struct {
	all        bool
	kinds      map[string]bool
	fluxKs     bool
	generators bool
}

var (
	kindKey      = regexp.MustCompile(`(?m)["']?\bkind["']?\s*:\s*["']?([A-Za-z][A-Za-z0-9]*)`)
	fluxKsAPI    = regexp.MustCompile(`kustomize\.toolkit\.fluxcd\.io/`)
	generatorKey = regexp.MustCompile(`(?m)^\s*["']?(configMapGenerator|secretGenerator)["']?\s*:`)
)

// may reports whether t's build may hold an object of kind.
func (d *declared) may(kind string) bool {
	return d.all || d.kinds[kind] || (d.generators && (kind == "ConfigMap" || kind == "Secret"))
}

// mayNest reports whether t's build may hold what discovery looks for
// in it: Flux Kustomizations (or a ResourceSet that makes them) and
// GitRepositories.
func (d *declared) mayNest() bool {
	return d.all || (d.fluxKs && d.kinds["Kustomization"]) || d.kinds["GitRepository"] || d.kinds["ResourceSet"]
}

// declares returns (once per target) what t's build may declare.
func (r *Repo) declares(t *Target) *declared {
	if d, ok := r.declared[t]; ok {
		return d
	}
	d := &declared{kinds: map[string]bool{}}
	r.declared[t] = d
	if t.Artifact != nil || t.Revision != nil || t.Err != nil {
		d.all = true
		return d
	}
	w := r.watch(t)
	if w.Unknown {
		d.all = true
		return d
	}
	read := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			if !os.IsNotExist(err) {
				d.all = true
			}
			return
		}
		for _, m := range kindKey.FindAllSubmatch(b, -1) {
			d.kinds[string(m[1])] = true
		}
		d.fluxKs = d.fluxKs || fluxKsAPI.Match(b)
		d.generators = d.generators || generatorKey.Match(b)
	}
	for _, f := range w.Files {
		read(filepath.Join(t.Root, filepath.FromSlash(f)))
	}
	for _, dir := range w.Dirs {
		err := filepath.WalkDir(filepath.Join(t.Root, filepath.FromSlash(dir)), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.Type().IsRegular() {
				read(p)
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			d.all = true
		}
	}
	return d
}
