package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// probeFS records each question a kustomize build asks of the files
// below root, with the answer it got: a file's content (its SHA-256),
// whether a path exists or is a folder, what a folder lists or a pattern
// matches, where a path resolves. A build that would get the same answers
// to the same questions builds the same (BuildCache). A question it does
// not record (a write, Open, Walk, or a path outside root) makes the
// build one that is not kept (opaque).
type probeFS struct {
	filesys.FileSystem
	root string // absolute, symlinks evaluated

	mu     sync.Mutex
	probes map[probe]string
	opaque bool
}

// probe is one question: an operation on a path relative to the root.
type probe struct{ Op, Path string }

// keptProbe is a probe with its answer, as kept.
type keptProbe struct {
	Op, Path, Answer string
}

func newProbeFS(inner filesys.FileSystem, root string) *probeFS {
	return &probeFS{FileSystem: inner, root: root, probes: map[probe]string{}}
}

// under is path relative to the root, or false when it is outside.
func (p *probeFS) under(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(p.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func (p *probeFS) record(op, path, answer string) {
	rel, ok := p.under(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok {
		p.opaque = true
		return
	}
	p.probes[probe{op, rel}] = answer
}

func (p *probeFS) markOpaque() {
	p.mu.Lock()
	p.opaque = true
	p.mu.Unlock()
}

// kept are the probes in a stable order, or false when the build asked
// something not recorded.
func (p *probeFS) kept() ([]keptProbe, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opaque {
		return nil, false
	}
	out := make([]keptProbe, 0, len(p.probes))
	for k, a := range p.probes {
		out = append(out, keptProbe{k.Op, k.Path, a})
	}
	slices.SortFunc(out, func(a, b keptProbe) int {
		return strings.Compare(a.Op+"\x00"+a.Path, b.Op+"\x00"+b.Path)
	})
	return out, true
}

// The answers, the same whether recorded or asked again (answer).

func readAnswer(data []byte, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "error"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func listAnswer(p *probeFS, names []string, err error, relative bool) string {
	if err != nil {
		return "error"
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if relative {
			rel, ok := p.under(n)
			if !ok {
				return "outside"
			}
			n = rel
		}
		out = append(out, n)
	}
	return strings.Join(out, "\x00")
}

func (p *probeFS) cleanedAbsAnswer(d filesys.ConfirmedDir, f string, err error) string {
	if err != nil {
		return "error"
	}
	rel, ok := p.under(string(d))
	if !ok {
		return "outside"
	}
	return rel + "\x00" + f
}

func (p *probeFS) ReadFile(path string) ([]byte, error) {
	data, err := p.FileSystem.ReadFile(path)
	p.record("read", path, readAnswer(data, err))
	return data, err
}

func (p *probeFS) Exists(path string) bool {
	ok := p.FileSystem.Exists(path)
	p.record("exists", path, strconv.FormatBool(ok))
	return ok
}

func (p *probeFS) IsDir(path string) bool {
	ok := p.FileSystem.IsDir(path)
	p.record("isdir", path, strconv.FormatBool(ok))
	return ok
}

func (p *probeFS) ReadDir(path string) ([]string, error) {
	names, err := p.FileSystem.ReadDir(path)
	p.record("readdir", path, listAnswer(p, names, err, false))
	return names, err
}

func (p *probeFS) Glob(pattern string) ([]string, error) {
	matches, err := p.FileSystem.Glob(pattern)
	p.record("glob", pattern, listAnswer(p, matches, err, true))
	return matches, err
}

func (p *probeFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	d, f, err := p.FileSystem.CleanedAbs(path)
	p.record("abs", path, p.cleanedAbsAnswer(d, f, err))
	return d, f, err
}

// What kustomize may also do, not recorded: the build is not kept.

func (p *probeFS) Open(path string) (filesys.File, error) {
	p.markOpaque()
	return p.FileSystem.Open(path)
}

func (p *probeFS) Walk(path string, fn filepath.WalkFunc) error {
	p.markOpaque()
	return p.FileSystem.Walk(path, fn)
}

func (p *probeFS) Create(path string) (filesys.File, error) {
	p.markOpaque()
	return p.FileSystem.Create(path)
}

func (p *probeFS) Mkdir(path string) error {
	p.markOpaque()
	return p.FileSystem.Mkdir(path)
}

func (p *probeFS) MkdirAll(path string) error {
	p.markOpaque()
	return p.FileSystem.MkdirAll(path)
}

func (p *probeFS) RemoveAll(path string) error {
	p.markOpaque()
	return p.FileSystem.RemoveAll(path)
}

func (p *probeFS) WriteFile(path string, data []byte) error {
	p.markOpaque()
	return p.FileSystem.WriteFile(path, data)
}

// answer asks q again of the files below p's root: the answer a build
// would get now.
func (p *probeFS) answer(q keptProbe) string {
	path := filepath.Join(p.root, filepath.FromSlash(q.Path))
	switch q.Op {
	case "read":
		return readAnswer(p.FileSystem.ReadFile(path))
	case "exists":
		return strconv.FormatBool(p.FileSystem.Exists(path))
	case "isdir":
		return strconv.FormatBool(p.FileSystem.IsDir(path))
	case "readdir":
		names, err := p.FileSystem.ReadDir(path)
		return listAnswer(p, names, err, false)
	case "glob":
		matches, err := p.FileSystem.Glob(path)
		return listAnswer(p, matches, err, true)
	case "abs":
		return p.cleanedAbsAnswer(p.FileSystem.CleanedAbs(path))
	}
	return "unknown question"
}
