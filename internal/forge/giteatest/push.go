package giteatest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/ferry-ci/ferry/internal/gittest"
)

// PushDir commits the contents of dir (its .git folder left out) as the
// new tip of branch in owner/repo and pushes it over HTTP as AdminUser.
// The commit's parent is the branch's tip when the branch exists, else the
// tip of the repository's default branch (so a second branch pushed this
// way can be the head of a pull request into the first), else none. The
// commit is gittest's (fixed author and clock), so it must change
// something. It returns the commit's hash.
func (g *Gitea) PushDir(t testing.TB, owner, repo, dir, branch string) string {
	t.Helper()
	r := gittest.Init(t, t.TempDir())
	if err := copyDir(dir, r.Dir); err != nil {
		t.Fatalf("giteatest: copying %s: %v", dir, err)
	}
	url := g.CloneURL(owner, repo)
	r.AddRemote(t, "origin", url)
	if err := startBranch(r, branch, &githttp.BasicAuth{Username: AdminUser, Password: g.AdminToken}); err != nil {
		t.Fatalf("giteatest: pushing %s to %s/%s %s: %v", dir, owner, repo, branch, err)
	}
	hash := r.Commit(t, "ferry test: "+filepath.Base(dir))
	r.PushHead(t, "origin", branch, gittest.Auth{User: AdminUser, Password: g.AdminToken})
	g.WaitPushed(t, owner, repo, branch, hash)
	return hash
}

// WaitPushed waits until Gitea's API shows branch at hash and the
// repository no longer empty. Gitea handles a push's effects on the
// database (the empty flag, the branch table) in a queue after the push
// returns, so an API call made at once (creating a release, a pull
// request) can still find the repository empty.
func (g *Gitea) WaitPushed(t testing.TB, owner, repo, branch, hash string) {
	t.Helper()
	c := g.Client(t, g.AdminToken)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, _, rerr := c.GetRepo(owner, repo)
		b, _, berr := c.GetRepoBranch(owner, repo, branch)
		if rerr == nil && berr == nil && !r.Empty && b.Commit != nil && b.Commit.ID == hash {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("giteatest: %s/%s %s is not at %s 30s after the push (repository: %v, branch: %v)", owner, repo, branch, hash, rerr, berr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startBranch points HEAD of r at branch, which starts at the tip of
// origin's branch, else at origin's HEAD, else nowhere (an empty origin).
// The index stays empty: the next commit holds the work tree alone.
func startBranch(r *gittest.Repo, branch string, auth transport.AuthMethod) error {
	local := plumbing.NewBranchReferenceName(branch)
	if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, local)); err != nil {
		return err
	}
	origin, err := r.Remote("origin")
	if err != nil {
		return err
	}
	refs, err := origin.List(&git.ListOptions{Auth: auth})
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case err != nil:
		return fmt.Errorf("listing origin: %w", err)
	}
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, ref := range refs {
		byName[ref.Name()] = ref
	}
	from := byName[local]
	if from == nil {
		from = byName[plumbing.HEAD]
		if from != nil && from.Type() == plumbing.SymbolicReference {
			from = byName[from.Target()]
		}
	}
	if from == nil {
		return nil
	}
	err = r.Fetch(&git.FetchOptions{RemoteName: "origin", Auth: auth})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching origin: %w", err)
	}
	return r.Storer.SetReference(plumbing.NewHashReference(local, from.Hash()))
}

// copyDir copies the files, folders and symbolic links under dir into dst,
// leaving out .git.
func copyDir(dir, dst string) error {
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
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
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
			out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, src); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil
	})
}
