package gitrepo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/gittest"
)

func TestHeadAndAncestry(t *testing.T) {
	dir := t.TempDir()
	r := gittest.Init(t, dir)
	r.Write(t, "f.yaml", "a: 1\n")
	a := r.Commit(t, "a: 1")
	r.Write(t, "f.yaml", "a: 2\n")
	b := r.Commit(t, "a: 2")

	if err := os.MkdirAll(filepath.Join(dir, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := gitrepo.Open(filepath.Join(dir, "sub", "dir"))
	if err != nil {
		t.Fatal(err)
	}
	if head, err := g.Head(); err != nil || head != b {
		t.Errorf("Head = %s, %v; want %s", head, err, b)
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{a, b, true}, {b, a, false}, {a, a, false}} {
		got, err := g.IsAncestor(tc.a, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("IsAncestor(%.7s, %.7s) = %v, %v; want %v", tc.a, tc.b, got, err, tc.want)
		}
	}
	unknown := strings.Repeat("ab", 20)
	if _, err := g.IsAncestor(unknown, b); err == nil || !strings.Contains(err.Error(), unknown) {
		t.Errorf("unknown commit: err = %v, want it named", err)
	}
	if _, err := gitrepo.Open(t.TempDir()); err == nil {
		t.Error("Open of a folder outside any repository succeeded")
	}
}
