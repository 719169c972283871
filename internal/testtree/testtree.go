// Package testtree writes the file trees tests start from: files given by
// slash-separated paths, under a folder or in a fresh temporary one, or a
// copy of a folder.
package testtree

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Write writes files (slash-separated paths to contents) under dir,
// making the folders they need, and fails the test on any error.
func Write(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// New writes files into a fresh temporary folder, removed when the test
// ends, and returns it.
func New(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	Write(tb, dir, files)
	return dir
}

// Copy copies the files of folder src into dst, recursively.
func Copy(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
