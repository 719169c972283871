package scratch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// entries are the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// writeFile is a fill that writes one file.
func writeFile(dir string) error {
	return os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600)
}

func TestFillInMemory(t *testing.T) {
	memory, disk := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", disk)
	d, err := place{memory: memory}.fill("ferry-test-", writeFile)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d) != memory || !strings.HasPrefix(filepath.Base(d), "ferry-test-") {
		t.Errorf("folder %s, want ferry-test-* in %s", d, memory)
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("folder %s: %v, mode %v, want a private folder", d, err, fi.Mode())
	}
	if got := entries(t, disk); len(got) != 0 {
		t.Errorf("disk holds %v, want nothing", got)
	}
}

// TestFillOutOfRoom: a fill that runs out of room in memory is made again
// on disk, and what it left in memory is removed.
func TestFillOutOfRoom(t *testing.T) {
	for _, full := range []error{syscall.ENOSPC, syscall.EDQUOT} {
		t.Run(full.Error(), func(t *testing.T) {
			memory, disk := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", disk)
			var calls []string
			d, err := place{memory: memory}.fill("ferry-test-", func(dir string) error {
				calls = append(calls, filepath.Dir(dir))
				if err := writeFile(dir); err != nil {
					return err
				}
				if filepath.Dir(dir) == memory {
					return fmt.Errorf("head revision: writing a/b: %w", &fs.PathError{Op: "write", Path: "a/b", Err: full})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 2 || calls[0] != memory || calls[1] != disk {
				t.Errorf("filled in %v, want %s then %s", calls, memory, disk)
			}
			if filepath.Dir(d) != disk {
				t.Errorf("folder %s, want one in %s", d, disk)
			}
			if got := entries(t, memory); len(got) != 0 {
				t.Errorf("memory still holds %v", got)
			}
			if got := entries(t, d); len(got) != 1 {
				t.Errorf("folder holds %v, want the file", got)
			}
		})
	}
}

// TestFillFails: any other error is returned, and nothing is left.
func TestFillFails(t *testing.T) {
	boom := errors.New("base revision: a/b at 1234: not a plain path")
	for name, p := range map[string]place{"memory": {memory: t.TempDir()}, "disk": {}} {
		t.Run(name, func(t *testing.T) {
			disk := t.TempDir()
			t.Setenv("TMPDIR", disk)
			calls := 0
			d, err := p.fill("ferry-test-", func(dir string) error {
				calls++
				if err := writeFile(dir); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) || d != "" {
				t.Errorf("fill = %q, %v; want the fill's error", d, err)
			}
			if calls != 1 {
				t.Errorf("filled %d times, want once", calls)
			}
			for _, dir := range []string{disk, p.memory} {
				if dir == "" {
					continue
				}
				if got := entries(t, dir); len(got) != 0 {
					t.Errorf("%s still holds %v", dir, got)
				}
			}
		})
	}
}

// TestMemoryDir: TMPDIR set is the user's choice, and wins; a folder that
// is no tmpfs, or none at all, is not memory.
func TestMemoryDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memory file systems are looked for on Linux only")
	}
	t.Setenv("TMPDIR", t.TempDir())
	if m := memoryDir(); m != "" {
		t.Errorf("with TMPDIR set, memoryDir() = %q, want none", m)
	}
	// procfs is no tmpfs; a missing folder is nothing.
	if got := tmpfsWithRoom("/proc"); got != "" {
		t.Errorf("tmpfsWithRoom(/proc) = %q, want none", got)
	}
	dir := t.TempDir()
	if got := tmpfsWithRoom(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("tmpfsWithRoom of a missing folder = %q", got)
	}
}
