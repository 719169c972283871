package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ErrDetached says HEAD is detached and no base branch was named.
var ErrDetached = errors.New("HEAD is detached")

// Committer writes new commits on the checked-out commit of the Git
// repository holding a ferry repository, to the object store only (the
// work tree, the index and every local branch stay as they are), and
// force-pushes them to branches: what `ferry bump --pr` proposes.
type Committer struct {
	repo     *git.Repository
	prefix   string // the ferry repository's folder in the Git tree, "" or "dir/"
	base     *object.Commit
	baseTree *object.Tree
	// BaseBranch is the branch the commits are proposed against: the one
	// named, else the checked-out one.
	BaseBranch string
}

// OpenCommitter opens the Git repository holding the ferry repository at
// root. baseBranch "" means the checked-out branch (ErrDetached when HEAD
// is detached).
func OpenCommitter(root, baseBranch string) (*Committer, error) {
	repo, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("%s is not in a Git repository: %w", root, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(wt.Filesystem.Root(), root)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if rel = filepath.ToSlash(rel); rel != "." {
		prefix = rel + "/"
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("no checked-out commit: %w", err)
	}
	if baseBranch == "" {
		if !head.Name().IsBranch() {
			return nil, ErrDetached
		}
		baseBranch = head.Name().Short()
	}
	base, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, err
	}
	tree, err := base.Tree()
	if err != nil {
		return nil, err
	}
	return &Committer{repo: repo, prefix: prefix, base: base, baseTree: tree, BaseBranch: baseBranch}, nil
}

// BaseCommit is the hash of the commit the updates are made on.
func (r *Committer) BaseCommit() string { return r.base.Hash.String() }

// Read returns a file of the checked-out commit, by path relative to the
// ferry repository (fs.ErrNotExist when it has none).
func (r *Committer) Read(file string) ([]byte, error) {
	f, err := r.baseTree.File(r.prefix + file)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	return blobBytes(r.repo, f.Hash)
}

// Commit writes files (paths relative to the ferry repository, each of
// which must exist) with their new content on top of the base commit, and
// returns the new commit's hash. Its author and committer time is the base
// commit's, so the same change on the same base is the same commit, and
// pushing it again changes nothing.
func (r *Committer) Commit(files map[string][]byte, message, name, email string) (string, error) {
	inRepo := make(map[string][]byte, len(files))
	for p, b := range files {
		inRepo[r.prefix+p] = b
	}
	tree, err := r.replace(r.baseTree, "", inRepo)
	if err != nil {
		return "", err
	}
	who := object.Signature{Name: name, Email: email, When: r.base.Committer.When}
	c := &object.Commit{Author: who, Committer: who, Message: message, TreeHash: tree, ParentHashes: []plumbing.Hash{r.base.Hash}}
	obj := r.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", err
	}
	h, err := r.repo.Storer.SetEncodedObject(obj)
	return h.String(), err
}

// replace returns the hash of tree with the files under dir (slash paths
// from the root) replaced by new content; every file must exist already.
func (r *Committer) replace(tree *object.Tree, dir string, files map[string][]byte) (plumbing.Hash, error) {
	entries := append([]object.TreeEntry(nil), tree.Entries...)
	for i, e := range entries {
		p := path.Join(dir, e.Name)
		if e.Mode == filemode.Dir {
			under := map[string][]byte{}
			for f, b := range files {
				if strings.HasPrefix(f, p+"/") {
					under[f] = b
				}
			}
			if len(under) == 0 {
				continue
			}
			sub, err := r.repo.TreeObject(e.Hash)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if entries[i].Hash, err = r.replace(sub, p, under); err != nil {
				return plumbing.ZeroHash, err
			}
			continue
		}
		b, ok := files[p]
		if !ok {
			continue
		}
		obj := r.repo.Storer.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := w.Write(b); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := w.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		if entries[i].Hash, err = r.repo.Storer.SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.repo.Storer.SetEncodedObject(obj)
}

// Push force-pushes commit to branch on remote (a remote's name or a URL),
// with the token as the password (to HTTP remotes only). It reports
// whether the branch moved.
func (r *Committer) Push(ctx context.Context, remote, commit, branch, token string) (bool, error) {
	opts := &git.PushOptions{
		RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec("+" + commit + ":" + plumbing.NewBranchReferenceName(branch).String())},
		Force:    true,
	}
	url := remote
	if strings.Contains(remote, "://") {
		opts.RemoteURL = remote
	} else {
		opts.RemoteName = remote
		rem, err := r.repo.Remote(remote)
		if err != nil {
			return false, fmt.Errorf("remote %q: %w", remote, err)
		}
		if urls := rem.Config().URLs; len(urls) > 0 {
			url = urls[0]
		}
	}
	// The token goes to HTTP remotes only (a local path in tests).
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		opts.Auth = &githttp.BasicAuth{Username: "x-access-token", Password: token}
	}
	err := r.repo.PushContext(ctx, opts)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return false, nil
	}
	return err == nil, err
}

// CheckBranchName refuses branch names git would (a subset of git
// check-ref-format's rules).
func CheckBranchName(b string) error {
	switch {
	case b == "", strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, ".lock"),
		strings.Contains(b, ".."), strings.Contains(b, "//"), strings.Contains(b, "@{"),
		strings.ContainsAny(b, " ~^:?*[\\\t\n"):
		return fmt.Errorf("%q is not a valid branch name", b)
	}
	return plumbing.NewBranchReferenceName(b).Validate()
}
