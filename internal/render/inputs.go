package render

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Watch is what a target's render may read, found without rendering: a
// superset of Result.Files, so a change outside it cannot change the
// render. Paths are relative to the root, slash separated.
type Watch struct {
	Files []string
	// Dirs are folders read whole (a path without a kustomization, which
	// Flux renders as every YAML file under it); "." is the whole root.
	Dirs []string
	// Unknown is set when the inputs cannot be bounded (a remote base, a
	// kustomization that does not parse): every change may matter.
	Unknown bool
}

// Touches reports whether any of the changed paths may be read.
func (w Watch) Touches(changed []string) bool {
	if w.Unknown {
		return len(changed) > 0
	}
	files := make(map[string]bool, len(w.Files))
	for _, f := range w.Files {
		files[f] = true
	}
	for _, c := range changed {
		if files[c] {
			return true
		}
		for _, d := range w.Dirs {
			if d == "." || c == d || strings.HasPrefix(c, d+"/") {
				return true
			}
		}
	}
	return false
}

// Inputs walks the kustomization files of a target without building it and
// returns every path they may read: each kustomization file, and every
// string in one that names a path, whether or not it exists now (a
// deleted file must still count as changed). Folders with a kustomization
// are followed; folders without one are watched whole.
func Inputs(spec Spec) Watch {
	if spec.Artifact != nil {
		return spec.Artifact.inputs()
	}
	root, err := filepath.Abs(spec.Root)
	if err != nil {
		return Watch{Unknown: true}
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	w := &walker{root: root, seen: map[string]bool{}, files: map[string]bool{}, dirs: map[string]bool{}}
	p, _, _ := unstructured.NestedString(spec.Kustomization.Object, "spec", "path")
	start := w.rel(filepath.Join(root, filepath.FromSlash(p)))
	if start == "" {
		return Watch{Unknown: true}
	}
	w.dir(start)
	comps, _, _ := unstructured.NestedStringSlice(spec.Kustomization.Object, "spec", "components")
	for _, c := range comps {
		if r := w.rel(filepath.Join(root, filepath.FromSlash(start), filepath.FromSlash(c))); r != "" {
			w.dir(r)
		}
	}
	if w.unknown {
		return Watch{Unknown: true}
	}
	out := Watch{}
	for f := range w.files {
		out.Files = append(out.Files, f)
	}
	for d := range w.dirs {
		out.Dirs = append(out.Dirs, d)
	}
	sort.Strings(out.Files)
	sort.Strings(out.Dirs)
	return out
}

type walker struct {
	root    string
	seen    map[string]bool
	files   map[string]bool
	dirs    map[string]bool
	unknown bool
}

// rel returns abs relative to the root, slash separated, or "" when it
// leaves the root.
func (w *walker) rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return ""
	}
	return filepath.ToSlash(r)
}

func (w *walker) dir(d string) {
	if w.seen[d] {
		return
	}
	w.seen[d] = true
	found := false
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		f := path.Join(d, name)
		w.files[f] = true // watched even when absent: adding one changes the render
		if found {
			continue
		}
		b, err := os.ReadFile(filepath.Join(w.root, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		found = true
		var doc any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			w.unknown = true
			return
		}
		w.strings(d, "", doc)
	}
	if !found {
		w.dirs[d] = true
	}
}

// strings visits every scalar string of a kustomization and follows those
// that name a path.
func (w *walker) strings(d, key string, v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			w.strings(d, k, x)
		}
	case []any:
		for _, x := range t {
			w.strings(d, key, x)
		}
	case string:
		w.candidate(d, key, t)
		if i := strings.Index(t, "="); i > 0 { // generator "key=path"
			w.candidate(d, key, t[i+1:])
		}
	}
}

func (w *walker) candidate(d, key, s string) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "\n\r") || len(s) > 4096 {
		return
	}
	if strings.Contains(s, "://") || strings.HasPrefix(s, "git@") || strings.HasPrefix(s, "github.com/") {
		if key == "resources" || key == "bases" || key == "components" {
			w.unknown = true // a remote base: its content is not in the repository
		}
		return
	}
	if filepath.IsAbs(s) {
		return
	}
	r := w.rel(filepath.Join(w.root, filepath.FromSlash(d), filepath.FromSlash(s)))
	if r == "" || r == "." && d != "." {
		return
	}
	fi, err := os.Stat(filepath.Join(w.root, filepath.FromSlash(r)))
	switch {
	case err != nil: // absent now: watch it both as a file and a folder
		w.files[r] = true
		w.dirs[r] = true
	case fi.IsDir():
		w.dir(r)
	default:
		w.files[r] = true
	}
}
