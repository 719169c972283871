package testtree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-ci/ferry/internal/testtree"
)

func TestNew(t *testing.T) {
	dir := testtree.New(t, map[string]string{"a/b/c.yaml": "x: 1\n", "top.txt": "t"})
	for name, want := range map[string]string{"a/b/c.yaml": "x: 1\n", "top.txt": "t"} {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}
