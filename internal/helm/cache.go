package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferry-ci/ferry/internal/diskcache"
)

// group runs one function per key at a time and keeps its result: calls
// for a key that is being computed wait for that computation instead of
// starting their own, and later calls get the kept result while fresh
// says it still is. Failures are not kept: the next call tries again.
type group[V any] struct {
	mu    sync.Mutex
	calls map[string]*call[V]
}

type call[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// do returns the kept value for key when there is one and fresh(v) holds
// (fresh nil: always), else the value of fn, which runs once for all the
// callers waiting on key meanwhile.
func (g *group[V]) do(ctx context.Context, key string, fresh func(V) bool, fn func() (V, error)) (V, error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*call[V]{}
	}
	c, ok := g.calls[key]
	if ok {
		select {
		case <-c.done:
			if c.err != nil || (fresh != nil && !fresh(c.v)) {
				ok = false
			}
		default:
		}
	}
	if ok {
		g.mu.Unlock()
		select {
		case <-c.done:
			return c.v, c.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	c = &call[V]{done: make(chan struct{})}
	g.calls[key] = c
	g.mu.Unlock()

	c.v, c.err = fn()
	close(c.done)
	if c.err != nil {
		g.mu.Lock()
		if g.calls[key] == c {
			delete(g.calls, key)
		}
		g.mu.Unlock()
	}
	return c.v, c.err
}

// store keeps chart archives by digest and repository indexes by URL
// under a folder, so that a later run (a CI cache restored) finds them:
//
//	<dir>/charts/sha256/<hex>.tgz   archives, named by their own digest
//	<dir>/index/<sha256 of URL>.yaml  index.yaml files; their mtime is when fetched
//
// A zero dir keeps nothing on disk. Files are written whole (a temporary
// file renamed), and an archive read back is checked against its name.
type store struct {
	dir string
}

func newStore(dir string) *store { return &store{dir: dir} }

func (s *store) archivePath(digest string) (string, bool) {
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	if s.dir == "" || !ok || len(hexd) != sha256.Size*2 || strings.Trim(hexd, "0123456789abcdef") != "" {
		return "", false
	}
	return filepath.Join(s.dir, "charts", "sha256", hexd+".tgz"), true
}

// archive is the archive with digest when the store holds it intact.
func (s *store) archive(digest string) ([]byte, bool) {
	p, ok := s.archivePath(digest)
	if !ok {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil || digestOf(b) != digest {
		return nil, false
	}
	return b, true
}

// putArchive keeps b under its digest.
func (s *store) putArchive(b []byte) error {
	p, ok := s.archivePath(digestOf(b))
	if !ok {
		return nil
	}
	return writeFile(p, b)
}

func (s *store) indexPath(repoURL string) string {
	sum := sha256.Sum256([]byte(repoURL))
	return filepath.Join(s.dir, "index", hex.EncodeToString(sum[:])+".yaml")
}

// index is the index kept for repoURL and when it was fetched.
func (s *store) index(repoURL string) ([]byte, time.Time, bool) {
	if s.dir == "" {
		return nil, time.Time{}, false
	}
	p := s.indexPath(repoURL)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, time.Time{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, time.Time{}, false
	}
	return b, fi.ModTime(), true
}

// putIndex keeps the index of repoURL, fetched at.
func (s *store) putIndex(repoURL string, b []byte, at time.Time) error {
	if s.dir == "" {
		return nil
	}
	p := s.indexPath(repoURL)
	if err := writeFile(p, b); err != nil {
		return err
	}
	return os.Chtimes(p, at, at)
}

// writeFile writes b to p through a temporary file in the same folder,
// so that readers (another run sharing the cache) never see half a file.
func writeFile(p string, b []byte) error {
	if err := diskcache.WriteFile(p, b); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}
