package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/budget"
)

// RenderCache keeps chart renders by everything a render takes: the
// chart archive's digest, the release's spec, its values, the
// Kubernetes and API versions, the budgets, and the Helm library that
// rendered it. Two revisions of a pull request, or two runs, that render
// a release alike render it once.
//
// Renders are kept in memory for the run and, with a folder, on disk for
// later runs (a CI cache restored):
//
//	<dir>/renders/<2 hex>/<sha256 of the key>.json
//
// Only renders whose values hold no Secret's or decrypted value are
// written (RenderOptions.Keep); a file is a header line, the SHA-256 of
// its payload and the payload, written whole (a temporary file renamed).
// A file that does not read back whole and intact is ignored and written
// again. The folder is kept under a size (DefaultRenderCacheSize): once
// per run, the files least recently used go first. Charts from a folder
// (no archive digest) are not kept.
type RenderCache struct {
	dir  string
	max  int64
	mu   sync.Mutex
	mem  map[string]*Rendered
	trim sync.Once
}

// DefaultRenderCacheSize bounds the renders kept on disk.
const DefaultRenderCacheSize = 512 << 20

// renderCacheHeader starts every kept render: a render of another
// layout is not read.
const renderCacheHeader = "ferry-render/1\n"

// NewRenderCache returns a cache kept under dir (in memory only when dir
// is empty), bounded to max bytes on disk (DefaultRenderCacheSize when
// zero).
func NewRenderCache(dir string, max int64) *RenderCache {
	if max <= 0 {
		max = DefaultRenderCacheSize
	}
	return &RenderCache{dir: dir, max: max, mem: map[string]*Rendered{}}
}

// helmModule is the version of the Helm library that renders, part of
// every key: another Helm may render the same chart otherwise.
var helmModule = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == "helm.sh/helm/v4" {
			return m.Version
		}
	}
	return info.Main.Version
})

// renderKey is the key of release r of chart f rendered with values and
// opts, or "" when the render is not kept (a chart folder).
func renderKey(r *Release, f *Fetched, values map[string]any, opts RenderOptions, limits budget.Limits) string {
	if f.Digest == "" || len(f.Archive) == 0 {
		return ""
	}
	b, err := json.Marshal(struct {
		Helm        string
		Release     *Release
		Digest      string
		Values      map[string]any
		KubeVersion string
		APIVersions []string
		Limits      budget.Limits
	}{helmModule(), r, f.Digest, values, opts.KubeVersion, opts.APIVersions, limits})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// keptRender is a Rendered as kept on disk.
type keptRender struct {
	Chart, Version  string
	Name, Namespace string
	Objects         []map[string]any
	Sources         []string
	Hooks           []keptHook
}

type keptHook struct {
	Object    map[string]any
	Pre, Post bool
	Source    string
}

func (c *RenderCache) path(key string) string {
	return filepath.Join(c.dir, "renders", key[:2], key+".json")
}

// get returns a copy of the render kept under key: callers may change it.
func (c *RenderCache) get(key string) (*Rendered, bool) {
	c.mu.Lock()
	r, ok := c.mem[key]
	c.mu.Unlock()
	if ok {
		return copyRendered(r), true
	}
	if c.dir == "" {
		return nil, false
	}
	p := c.path(key)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	r, ok = decodeKept(b)
	if !ok {
		_ = os.Remove(p) // written again after the render
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // recently used: trimmed last
	c.mu.Lock()
	c.mem[key] = r
	c.mu.Unlock()
	return copyRendered(r), true
}

// put keeps a copy of r under key, on disk too when keep is set.
func (c *RenderCache) put(key string, r *Rendered, keep bool) {
	c.mu.Lock()
	c.mem[key] = copyRendered(r)
	c.mu.Unlock()
	if c.dir == "" || !keep {
		return
	}
	k := keptRender{Chart: r.Chart, Version: r.Version, Name: r.Name, Namespace: r.Namespace, Sources: r.Sources}
	for _, o := range r.Objects {
		k.Objects = append(k.Objects, o.Object)
	}
	for _, h := range r.Hooks {
		k.Hooks = append(k.Hooks, keptHook{Object: h.Object.Object, Pre: h.Pre, Post: h.Post, Source: h.Source})
	}
	payload, err := json.Marshal(k)
	if err != nil {
		return
	}
	sum := sha256.Sum256(payload)
	var b bytes.Buffer
	b.WriteString(renderCacheHeader)
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteByte('\n')
	b.Write(payload)
	if writeFile(c.path(key), b.Bytes()) == nil {
		c.trim.Do(c.trimDisk)
	}
}

// decodeKept reads a kept render back, or false when the file is not
// whole and intact.
func decodeKept(b []byte) (*Rendered, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(renderCacheHeader))
	if !ok || len(rest) < sha256.Size*2+1 || rest[sha256.Size*2] != '\n' {
		return nil, false
	}
	payload := rest[sha256.Size*2+1:]
	sum := sha256.Sum256(payload)
	if hex.EncodeToString(sum[:]) != string(rest[:sha256.Size*2]) {
		return nil, false
	}
	var k keptRender
	if err := json.Unmarshal(payload, &k); err != nil || len(k.Sources) != len(k.Objects) {
		return nil, false
	}
	r := &Rendered{Chart: k.Chart, Version: k.Version, Name: k.Name, Namespace: k.Namespace, Sources: k.Sources}
	for _, o := range k.Objects {
		if o == nil {
			return nil, false
		}
		r.Objects = append(r.Objects, &unstructured.Unstructured{Object: o})
	}
	for _, h := range k.Hooks {
		if h.Object == nil {
			return nil, false
		}
		r.Hooks = append(r.Hooks, Hook{Object: &unstructured.Unstructured{Object: h.Object}, Pre: h.Pre, Post: h.Post, Source: h.Source})
	}
	return r, true
}

// trimDisk removes the renders least recently used until the folder is
// under its size.
func (c *RenderCache) trimDisk() {
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	_ = filepath.WalkDir(filepath.Join(c.dir, "renders"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, file{p, fi.Size(), fi.ModTime()})
		total += fi.Size()
		return nil
	})
	if total <= c.max {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return a.used.Compare(b.used) })
	for _, f := range files {
		if total <= c.max {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}

// copyRendered copies r deeply enough that changing the copy's objects
// leaves r as it is.
func copyRendered(r *Rendered) *Rendered {
	out := *r
	out.Sources = slices.Clone(r.Sources)
	out.Objects = make([]*unstructured.Unstructured, len(r.Objects))
	for i, o := range r.Objects {
		out.Objects[i] = o.DeepCopy()
	}
	out.Hooks = slices.Clone(r.Hooks)
	for i := range out.Hooks {
		out.Hooks[i].Object = r.Hooks[i].Object.DeepCopy()
	}
	return &out
}
