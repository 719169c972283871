// Package diskcache keeps what a run computed for later runs (a CI cache
// restored), in files under one folder, each named by the SHA-256 of its
// key:
//
//	<dir>/<2 hex>/<key><ext>
//
// A file is a header line naming its layout, the SHA-256 of its payload
// and the payload; it is written whole (a temporary file renamed over
// it). A file that does not read back whole and intact, or is of another
// layout, is ignored and removed, to be written again. The folder is kept
// under a size: once per run, after its first write, the files least
// recently read or written go first.
//
// Callers decide what may be kept: nothing decrypted, nothing a secret
// could be guessed from.
package diskcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Store is one folder of kept payloads. The zero Store and a Store of no
// folder keep nothing. Safe for concurrent use.
type Store struct {
	dir, header, ext string
	max              int64
	trim             sync.Once
}

// New returns the store of folder dir (nothing kept when dir is ""),
// whose files start with header (a layout's name, "ferry-render/1")
// and end in ext, bounded to max bytes.
func New(dir, header, ext string, max int64) *Store {
	return &Store{dir: dir, header: header + "\n", ext: ext, max: max}
}

// Key is the SHA-256 of b in hex: a key of what b holds.
func Key(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (s *Store) path(key string) string {
	return filepath.Join(s.dir, key[:2], key+s.ext)
}

// Get is the payload kept under key (a hex SHA-256), or false.
func (s *Store) Get(key string) ([]byte, bool) {
	if s == nil || s.dir == "" || len(key) < 2 {
		return nil, false
	}
	p := s.path(key)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	payload, ok := s.open(b)
	if !ok {
		s.Drop(key)
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // recently used: trimmed last
	return payload, true
}

// Drop removes what is kept under key: a payload the caller could not
// read back.
func (s *Store) Drop(key string) {
	if s == nil || s.dir == "" || len(key) < 2 {
		return
	}
	_ = os.Remove(s.path(key))
}

// open is b's payload when b is whole and intact.
func (s *Store) open(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(s.header))
	if !ok || len(rest) < sha256.Size*2+1 || rest[sha256.Size*2] != '\n' {
		return nil, false
	}
	payload := rest[sha256.Size*2+1:]
	if Key(payload) != string(rest[:sha256.Size*2]) {
		return nil, false
	}
	return payload, true
}

// Put keeps payload under key. A payload that cannot be written is not
// kept: the cache is an optimisation, never a reason to fail.
func (s *Store) Put(key string, payload []byte) {
	if s == nil || s.dir == "" || len(key) < 2 {
		return
	}
	var b bytes.Buffer
	b.Grow(len(s.header) + sha256.Size*2 + 1 + len(payload))
	b.WriteString(s.header)
	b.WriteString(Key(payload))
	b.WriteByte('\n')
	b.Write(payload)
	if WriteFile(s.path(key), b.Bytes()) == nil {
		s.trim.Do(s.trimDisk)
	}
}

// WriteFile writes b to p whole: into a temporary file beside it, renamed
// over p, so a reader sees the old file or the new one, never a part.
func WriteFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// trimDisk removes the files least recently used until the folder is
// under its size.
func (s *Store) trimDisk() {
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	_ = filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
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
	if total <= s.max {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return a.used.Compare(b.used) })
	for _, f := range files {
		if total <= s.max {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}
