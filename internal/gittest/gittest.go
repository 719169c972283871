// Package gittest makes the Git repositories tests start from: a repository
// on branch main in a folder, files written, edited and removed in it,
// commits by a fixed author on a fixed clock (so their hashes are the same
// on every run), and a bare repository to push to.
package gittest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/ferry-ci/ferry/internal/testtree"
)

// Repo is a repository with a work tree in Dir.
type Repo struct {
	*git.Repository
	Dir string
	wt  *git.Worktree
	n   int // commits so far
}

// Init makes dir (and the folders above it) a repository whose first
// branch is main, with whatever dir already holds left uncommitted.
func Init(tb testing.TB, dir string) *Repo {
	tb.Helper()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		tb.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		tb.Fatal(err)
	}
	return &Repo{Repository: r, Dir: dir, wt: wt}
}

// Write writes a file (a slash-separated path) in the work tree, making
// the folders it needs.
func (r *Repo) Write(tb testing.TB, rel, content string) {
	tb.Helper()
	testtree.Write(tb, r.Dir, map[string]string{rel: content})
}

// Read returns a file of the work tree.
func (r *Repo) Read(tb testing.TB, rel string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(rel)))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// Replace rewrites the first occurrence of old in a file of the work tree,
// and fails the test when there is none.
func (r *Repo) Replace(tb testing.TB, rel, old, new string) {
	tb.Helper()
	s := r.Read(tb, rel)
	if !strings.Contains(s, old) {
		tb.Fatalf("%s does not contain %q", rel, old)
	}
	r.Write(tb, rel, strings.Replace(s, old, new, 1))
}

// Remove removes a file of the work tree.
func (r *Repo) Remove(tb testing.TB, rel string) {
	tb.Helper()
	if err := os.Remove(filepath.Join(r.Dir, filepath.FromSlash(rel))); err != nil {
		tb.Fatal(err)
	}
}

// Commit commits everything in the work tree, removals included, and
// returns the commit's hash. The author is "ferry test" and the clock
// starts at 2026-01-01 00:01 UTC and moves a minute a commit, so the same
// steps make the same hashes on every run.
func (r *Repo) Commit(tb testing.TB, msg string) string {
	tb.Helper()
	if err := r.wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		tb.Fatal(err)
	}
	r.n++
	when := time.Date(2026, 1, 1, 0, r.n, 0, 0, time.UTC)
	h, err := r.wt.Commit(msg, &git.CommitOptions{All: true, Author: &object.Signature{Name: "ferry test", Email: "test@ferry.invalid", When: when}})
	if err != nil {
		tb.Fatal(err)
	}
	return h.String()
}

// BareRemote makes a bare repository in a fresh temporary folder, adds it
// to r as the remote name, and returns it.
func (r *Repo) BareRemote(tb testing.TB, name string) *git.Repository {
	tb.Helper()
	dir := tb.TempDir()
	bare, err := git.PlainInit(dir, true)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: name, URLs: []string{dir}}); err != nil {
		tb.Fatal(err)
	}
	return bare
}
