package gitrepo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/ferry-ci/ferry/internal/gitrepo"
)

func commit(t *testing.T, w *git.Worktree, dir, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add("f.yaml"); err != nil {
		t.Fatal(err)
	}
	h, err := w.Commit(content, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func TestHeadAndAncestry(t *testing.T) {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	a := commit(t, w, dir, "a: 1\n")
	b := commit(t, w, dir, "a: 2\n")

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
