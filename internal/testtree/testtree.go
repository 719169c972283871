// Package testtree writes the file trees tests start from: files given by
// slash-separated paths, under a folder or in a fresh temporary one.
package testtree

import (
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
