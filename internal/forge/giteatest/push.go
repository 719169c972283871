package giteatest

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// PushDir commits the contents of dir (its .git folder left out) as the
// new tip of branch in owner/repo and pushes it over HTTP as AdminUser.
// The commit's parent is the branch's tip when the branch exists, else the
// tip of the repository's default branch (so a second branch pushed this
// way can be the head of a pull request into the first), else none. It
// returns the commit's hash.
func (g *Gitea) PushDir(t testing.TB, owner, repo, dir, branch string) string {
	t.Helper()
	hash, err := g.pushDir(owner, repo, dir, branch)
	if err != nil {
		t.Fatalf("giteatest: pushing %s to %s/%s %s: %v", dir, owner, repo, branch, err)
	}
	return hash
}

func (g *Gitea) pushDir(owner, repo, dir, branch string) (string, error) {
	auth := &githttp.BasicAuth{Username: AdminUser, Password: g.AdminToken}
	url := g.CloneURL(owner, repo)
	wtfs := memfs.New()
	r, err := git.Clone(memory.NewStorage(), wtfs, &git.CloneOptions{URL: url, Auth: auth})
	empty := errors.Is(err, transport.ErrEmptyRemoteRepository)
	switch {
	case empty:
		wtfs = memfs.New()
		if r, err = git.Init(memory.NewStorage(), wtfs); err != nil {
			return "", err
		}
		if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", err
	}
	local := plumbing.NewBranchReferenceName(branch)
	if empty {
		if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, local)); err != nil {
			return "", err
		}
	} else {
		from, err := r.Reference(plumbing.NewRemoteReferenceName("origin", branch), true)
		if err != nil {
			from, err = r.Head()
		}
		if err != nil {
			return "", err
		}
		head, _ := r.Head()
		if head == nil || head.Name() != local {
			if err := wt.Checkout(&git.CheckoutOptions{Branch: local, Hash: from.Hash(), Create: true, Force: true}); err != nil {
				return "", err
			}
		} else if err := wt.Reset(&git.ResetOptions{Commit: from.Hash(), Mode: git.HardReset}); err != nil {
			return "", err
		}
	}

	entries, err := wtfs.ReadDir("/")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if err := util.RemoveAll(wtfs, e.Name()); err != nil {
			return "", err
		}
	}
	if err := copyDir(dir, wtfs); err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", err
	}
	sig := &object.Signature{Name: "ferry test", Email: "ferry-test@example.test", When: time.Now()}
	hash, err := wt.Commit("ferry test: "+filepath.Base(dir), &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		return "", err
	}
	spec := config.RefSpec(local.String() + ":" + local.String())
	if err := r.Push(&git.PushOptions{RemoteName: "origin", Auth: auth, RefSpecs: []config.RefSpec{spec}, Force: false}); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", err
	}
	return hash.String(), nil
}

// copyDir copies the files, folders and symbolic links under dir into fsys,
// leaving out .git.
func copyDir(dir string, fsys billy.Filesystem) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
			return fsys.MkdirAll(rel, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return fsys.Symlink(target, rel)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			src, err := os.Open(path)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := fsys.OpenFile(rel, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(dst, src); err != nil {
				dst.Close()
				return err
			}
			return dst.Close()
		}
		return nil
	})
}
