package diskcache

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPutGet(t *testing.T) {
	dir := t.TempDir()
	s := New(dir, "ferry-test/1", ".json", 1<<20)
	key := Key([]byte("what it took"))
	if _, ok := s.Get(key); ok {
		t.Fatal("an empty store holds the key")
	}
	s.Put(key, []byte(`{"objects":1}`))
	got, ok := s.Get(key)
	if !ok || string(got) != `{"objects":1}` {
		t.Fatalf("Get = %q, %v", got, ok)
	}
	p := filepath.Join(dir, key[:2], key+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "ferry-test/1\n"+Key([]byte(`{"objects":1}`))+"\n") {
		t.Errorf("file starts %q", b[:min(len(b), 100)])
	}
	// Another layout reads nothing of it, and removes it.
	if _, ok := New(dir, "ferry-test/2", ".json", 1<<20).Get(key); ok {
		t.Error("another layout read the file")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the file of another layout is still there: %v", err)
	}
}

// TestDamaged: a file cut short, changed, or with no header is ignored
// and removed; the next Put writes it again.
func TestDamaged(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"cut short": func(b []byte) []byte { return b[:len(b)-3] },
		"changed":   func(b []byte) []byte { return bytes.Replace(b, []byte("objects"), []byte("objectz"), 1) },
		"no header": func(b []byte) []byte { return b[len("ferry-test/1\n"):] },
		"empty":     func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(dir, "ferry-test/1", ".json", 1<<20)
			key := Key([]byte(name))
			s.Put(key, []byte(`{"objects":1}`))
			p := filepath.Join(dir, key[:2], key+".json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, ok := s.Get(key); ok {
				t.Fatalf("read %q from a damaged file", got)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("the damaged file is still there: %v", err)
			}
			s.Put(key, []byte(`{"objects":2}`))
			if got, ok := s.Get(key); !ok || string(got) != `{"objects":2}` {
				t.Errorf("after writing again: %q, %v", got, ok)
			}
		})
	}
}

// TestTrim: past its size, the files least recently used go first, once
// a run.
func TestTrim(t *testing.T) {
	dir := t.TempDir()
	payload := bytes.Repeat([]byte("x"), 1000)
	// Room for two files of a little over 1,000 bytes.
	old := New(dir, "ferry-test/1", ".json", 2500)
	keys := []string{Key([]byte("a")), Key([]byte("b")), Key([]byte("c"))}
	for i, k := range keys[:2] {
		old.Put(k, payload)
		at := time.Now().Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, k[:2], k+".json"), at, at); err != nil {
			t.Fatal(err)
		}
	}
	// The older one is read: now the most recently used.
	if _, ok := old.Get(keys[0]); !ok {
		t.Fatal("lost a file under the size")
	}
	s := New(dir, "ferry-test/1", ".json", 2500)
	s.Put(keys[2], payload)
	for i, want := range []bool{true, false, true} {
		if _, err := os.Stat(filepath.Join(dir, keys[i][:2], keys[i]+".json")); (err == nil) != want {
			t.Errorf("file %d kept: %v, want %v", i, err == nil, want)
		}
	}
}

func TestNoFolder(t *testing.T) {
	for _, s := range []*Store{nil, {}, New("", "ferry-test/1", ".json", 1)} {
		key := Key([]byte("k"))
		s.Put(key, []byte("v"))
		if _, ok := s.Get(key); ok {
			t.Error("a store of no folder kept something")
		}
		s.Drop(key)
	}
}
