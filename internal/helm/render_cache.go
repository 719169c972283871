package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/diskcache"
)

// RenderCache keeps chart renders by everything a render takes: the
// chart archive's digest, the release's spec, its values, the
// Kubernetes and API versions, the budgets, and the Helm library that
// rendered it. Two revisions of a pull request, or two runs, that render
// a release alike render it once.
//
// Renders are kept in memory for the run and, with a folder, on disk for
// later runs (a CI cache restored), in <dir>/renders (package diskcache:
// checked on reading, written whole, kept under DefaultRenderCacheSize).
// Only renders whose values hold no Secret's or decrypted value are
// written (RenderOptions.Keep). Charts from a folder (no archive digest)
// are not kept.
type RenderCache struct {
	disk *diskcache.Store
	mu   sync.Mutex
	mem  map[string]*Rendered
}

// DefaultRenderCacheSize bounds the renders kept on disk.
const DefaultRenderCacheSize = 512 << 20

// renderCacheLayout starts every kept render: a render of another
// layout is not read.
const renderCacheLayout = "ferry-render/1"

// NewRenderCache returns a cache kept under dir (in memory only when dir
// is empty), bounded to max bytes on disk (DefaultRenderCacheSize when
// zero).
func NewRenderCache(dir string, max int64) *RenderCache {
	if max <= 0 {
		max = DefaultRenderCacheSize
	}
	c := &RenderCache{mem: map[string]*Rendered{}}
	if dir != "" {
		c.disk = diskcache.New(filepath.Join(dir, "renders"), renderCacheLayout, ".json", max)
	}
	return c
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

// get returns a copy of the render kept under key: callers may change it.
func (c *RenderCache) get(key string) (*Rendered, bool) {
	c.mu.Lock()
	r, ok := c.mem[key]
	c.mu.Unlock()
	if ok {
		return copyRendered(r), true
	}
	b, ok := c.disk.Get(key)
	if !ok {
		return nil, false
	}
	r, ok = decodeKept(b)
	if !ok {
		c.disk.Drop(key) // written again after the render
		return nil, false
	}
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
	if c.disk == nil || !keep {
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
	c.disk.Put(key, payload)
}

// decodeKept reads a kept render back, or false when the file is not
// whole and intact.
func decodeKept(payload []byte) (*Rendered, bool) {
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
