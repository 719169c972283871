// Package gittest makes the Git repositories tests start from: a repository
// on branch main in a folder, files written, edited and removed in it,
// commits by a fixed author on a fixed clock (so their hashes are the same
// on every run), and a bare repository to push to; and it reads back what
// a test checks: the files of a commit, the commit a branch points at, the
// branches of a remote, a branch cloned over HTTP.
package gittest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

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
func (r *Repo) BareRemote(tb testing.TB, name string) *Bare {
	tb.Helper()
	dir := tb.TempDir()
	bare, err := git.PlainInit(dir, true)
	if err != nil {
		tb.Fatal(err)
	}
	r.AddRemote(tb, name, dir)
	return &Bare{Dir: dir, repo: bare}
}

// AddRemote adds the remote name with url (a folder or an HTTP URL) to r,
// unless r has a remote of that name already.
func (r *Repo) AddRemote(tb testing.TB, name, url string) {
	tb.Helper()
	if _, err := r.Remote(name); err == nil {
		return
	}
	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: name, URLs: []string{url}}); err != nil {
		tb.Fatal(err)
	}
}

// Auth is a user and a password (or access token) for a remote over HTTP;
// the zero Auth sends none.
type Auth struct {
	User, Password string
}

func (a Auth) method() *githttp.BasicAuth {
	if a == (Auth{}) {
		return nil
	}
	return &githttp.BasicAuth{Username: a.User, Password: a.Password}
}

// PushHead pushes the commit HEAD points at to branch of remote, replacing
// whatever the branch held, as auth.
func (r *Repo) PushHead(tb testing.TB, remote, branch string, auth Auth) {
	tb.Helper()
	head, err := r.Head()
	if err != nil {
		tb.Fatal(err)
	}
	spec := gitconfig.RefSpec("+" + head.Hash().String() + ":" + plumbing.NewBranchReferenceName(branch).String())
	opts := &git.PushOptions{RemoteName: remote, RefSpecs: []gitconfig.RefSpec{spec}}
	if a := auth.method(); a != nil {
		opts.Auth = a
	}
	if err := r.Push(opts); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		tb.Fatalf("pushing %s to %s: %v", branch, remote, err)
	}
}

// Tip returns the commit branch points at.
func (r *Repo) Tip(tb testing.TB, branch string) Commit {
	tb.Helper()
	return tip(tb, r.Repository, branch)
}

// Files returns the files of a commit's tree by slash-separated path.
func (r *Repo) Files(tb testing.TB, hash string) map[string]string {
	tb.Helper()
	return files(tb, r.Repository, hash)
}

// Bare is a bare repository: a remote pushed to, or a clone, read back.
type Bare struct {
	// Dir is the repository's folder.
	Dir  string
	repo *git.Repository
}

// Clone clones branch of the repository at url (a folder or an HTTP URL),
// that branch alone, as auth, into a bare repository in a fresh temporary
// folder.
func Clone(tb testing.TB, url, branch string, auth Auth) *Bare {
	tb.Helper()
	dir := tb.TempDir()
	opts := &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true}
	if a := auth.method(); a != nil {
		opts.Auth = a
	}
	repo, err := git.PlainClone(dir, true, opts)
	if err != nil {
		tb.Fatalf("cloning %s of %s: %v", branch, url, err)
	}
	return &Bare{Dir: dir, repo: repo}
}

// Tip returns the commit branch points at.
func (b *Bare) Tip(tb testing.TB, branch string) Commit {
	tb.Helper()
	return tip(tb, b.repo, branch)
}

// Files returns the files of a commit's tree by slash-separated path.
func (b *Bare) Files(tb testing.TB, hash string) map[string]string {
	tb.Helper()
	return files(tb, b.repo, hash)
}

// Branches returns the names of the repository's branches (main, not
// refs/heads/main), sorted.
func (b *Bare) Branches(tb testing.TB) []string {
	tb.Helper()
	refs, err := b.repo.References()
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Name().IsBranch() {
			out = append(out, ref.Name().Short())
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// Commit is a commit as tests check it.
type Commit struct {
	Hash    string
	Parents []string
}

func tip(tb testing.TB, repo *git.Repository, branch string) Commit {
	tb.Helper()
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		tb.Fatalf("branch %s: %v", branch, err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		tb.Fatalf("branch %s: %v", branch, err)
	}
	out := Commit{Hash: c.Hash.String()}
	for _, p := range c.ParentHashes {
		out.Parents = append(out.Parents, p.String())
	}
	return out
}

func files(tb testing.TB, repo *git.Repository, hash string) map[string]string {
	tb.Helper()
	c, err := repo.CommitObject(plumbing.NewHash(hash))
	if err != nil {
		tb.Fatalf("commit %s: %v", hash, err)
	}
	tree, err := c.Tree()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	err = tree.Files().ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		out[f.Name] = string(b)
		return err
	})
	if err != nil {
		tb.Fatalf("commit %s: %v", hash, err)
	}
	return out
}
