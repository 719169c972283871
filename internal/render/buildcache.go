package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/diskcache"
)

// BuildCache keeps kustomize builds on disk for later runs (a CI cache
// restored), in <dir>/builds (package diskcache: checked on reading,
// written whole, kept under DefaultBuildCacheSize).
//
// A build is kept under a key of what it starts from: the kustomization
// folder (relative to the repository), the kustomization Flux's generator
// made of it, the options and budgets, and the ferry binary. With it are
// kept the questions the build asked of the files (probeFS) and their
// answers. A later build of the same key takes the kept one only when
// every question gets the same answer now: the same content of every file
// it read, the same folders, the same files missing. Builds are kept
// before postBuild substitution, which reads variables (Secrets among
// them) and is done on every render.
//
// A build is not kept when it read a SOPS-encrypted file (its output may
// hold what was decrypted) or holds a Secret (one committed in plain text
// too: ferry masks its values everywhere else), when remote bases are allowed (what they
// fetch is no file below the repository), when it asked something the
// probes do not record, or when its output names the folder it was built
// in. Up to keptVariants builds are kept per key: the two revisions of a
// pull request build many folders of the same kustomization with other
// files.
type BuildCache struct {
	disk *diskcache.Store
	mu   sync.Mutex   // one read-modify-write of a key at a time
	hits atomic.Int64 // builds taken from the cache
}

// DefaultBuildCacheSize bounds the builds kept on disk.
const DefaultBuildCacheSize = 256 << 20

// buildCacheLayout starts every kept build: a build of another layout is
// not read.
const buildCacheLayout = "ferry-build/1"

// keptVariants is how many builds of one key are kept, newest first.
const keptVariants = 4

// NewBuildCache returns a cache kept under dir, or nil (nothing kept)
// when dir is "".
func NewBuildCache(dir string) *BuildCache {
	if dir == "" {
		return nil
	}
	return &BuildCache{disk: diskcache.New(filepath.Join(dir, "builds"), buildCacheLayout, ".json", DefaultBuildCacheSize)}
}

// keptBuild is one build as kept.
type keptBuild struct {
	Probes  []keptProbe
	Files   []string // what repoFS recorded as read (Result.Files)
	Objects []string // each resource's YAML node, in order
}

// binaryIdentity names the ferry binary in every key: another ferry (or
// kustomize) may build the same files otherwise. A binary built from a
// clean VCS tree is named by its revision; any other by its path, size
// and time. "" when neither can be read: nothing is kept.
var binaryIdentity = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "false" {
		return info.Main.Path + "@" + rev
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return exe + " " + strconv.FormatInt(fi.Size(), 10) + " " + fi.ModTime().UTC().String()
})

// key is the key of in built with opts, or "" when it is not kept.
func (c *BuildCache) key(in *kustomizeInput, opts Options) string {
	if c == nil || opts.AllowRemoteBases {
		return ""
	}
	id := binaryIdentity()
	dir, err1 := filepath.Rel(in.root, in.dir)
	kfile, err2 := filepath.Rel(in.root, in.kfile)
	if id == "" || err1 != nil || err2 != nil {
		return ""
	}
	b, err := json.Marshal(struct {
		Binary, Dir, KFile string
		KData              []byte
		NoDecrypt, Decrypt bool
		Limits             budget.Limits
	}{id, filepath.ToSlash(dir), filepath.ToSlash(kfile), in.kdata, opts.NoDecrypt, opts.Decryptor != nil, opts.limits()})
	if err != nil {
		return ""
	}
	return diskcache.Key(b)
}

// variants are the builds kept under key.
func (c *BuildCache) variants(key string) []keptBuild {
	b, ok := c.disk.Get(key)
	if !ok {
		return nil
	}
	var kept []keptBuild
	if err := json.Unmarshal(b, &kept); err != nil {
		c.disk.Drop(key)
		return nil
	}
	return kept
}

// get is the build kept under key whose every question fs answers alike
// now, as the repoFS and resources a build would return, or false.
func (c *BuildCache) get(key string, fs *repoFS, probes *probeFS) (*repoFS, []*resource.Resource, bool) {
	if key == "" {
		return nil, nil, false
	}
	// Each question is asked once, however many variants ask it.
	answers := map[probe]string{}
	differs := func(q keptProbe) bool {
		a, ok := answers[probe{q.Op, q.Path}]
		if !ok {
			a = probes.answer(q)
			answers[probe{q.Op, q.Path}] = a
		}
		return a != q.Answer
	}
	for _, k := range c.variants(key) {
		if !slices.ContainsFunc(k.Probes, differs) {
			out := make([]*resource.Resource, 0, len(k.Objects))
			for _, o := range k.Objects {
				rn, err := kyaml.Parse(o)
				if err != nil {
					c.disk.Drop(key)
					return nil, nil, false
				}
				out = append(out, &resource.Resource{RNode: *rn})
			}
			for _, f := range k.Files {
				fs.read[f] = struct{}{}
			}
			c.hits.Add(1)
			return fs, out, true
		}
	}
	return nil, nil, false
}

// put keeps the build of key that fs and probes recorded, when it may
// be kept.
func (c *BuildCache) put(key string, fs *repoFS, probes *probeFS, resources []*resource.Resource) {
	if key == "" || len(fs.encryptedFiles()) > 0 || fs.failures() != nil {
		return
	}
	qs, ok := probes.kept()
	if !ok {
		return
	}
	k := keptBuild{Probes: qs, Files: fs.files()}
	for _, r := range resources {
		if r.GetKind() == "Secret" && r.GetApiVersion() == "v1" {
			return // even one committed in plain text: its values are masked everywhere else
		}
		s, err := r.RNode.String()
		if err != nil || bytes.Contains([]byte(s), []byte(fs.root)) {
			return
		}
		k.Objects = append(k.Objects, s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := []keptBuild{k}
	for _, v := range c.variants(key) {
		if len(kept) < keptVariants && !slices.EqualFunc(v.Probes, k.Probes, func(a, b keptProbe) bool { return a == b }) {
			kept = append(kept, v)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return
	}
	c.disk.Put(key, b)
}
