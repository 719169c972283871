package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/ferry-ci/ferry/internal/confine"
)

// MissingCommitError says a revision is not in the clone. In CI this is
// usually a shallow checkout.
type MissingCommitError struct {
	Rev     string
	Shallow bool
}

func (e *MissingCommitError) Error() string {
	msg := fmt.Sprintf("revision %q is not in this clone", e.Rev)
	if e.Shallow {
		msg += " (the clone is shallow: set fetch-depth: 0 on actions/checkout, or give ferry a token so it can fetch the commit)"
	}
	return msg
}

// Root is the top of the work tree.
func (g *Repo) Root() (string, error) {
	wt, err := g.r.Worktree()
	if err != nil {
		return "", fmt.Errorf("the Git repository has no work tree: %w", err)
	}
	return wt.Filesystem.Root(), nil
}

// Resolve turns a revision (a full or abbreviated commit, a branch, a tag,
// a remote branch such as origin/main, HEAD) into a commit hash.
func (g *Repo) Resolve(rev string) (string, error) {
	h, err := g.r.ResolveRevision(plumbing.Revision(rev))
	if err == nil {
		if _, cerr := g.r.CommitObject(*h); cerr == nil {
			return h.String(), nil
		}
	}
	if h == nil || err != nil {
		// A remote-tracking name given without its remote.
		if rh, rerr := g.r.ResolveRevision(plumbing.Revision("refs/remotes/origin/" + rev)); rerr == nil {
			return rh.String(), nil
		}
	}
	return "", &MissingCommitError{Rev: rev, Shallow: g.shallow()}
}

func (g *Repo) shallow() bool {
	s, err := g.r.Storer.Shallow()
	return err == nil && len(s) > 0
}

// Fetch fetches one commit or branch from the origin remote, for shallow
// clones that lack a pull request's base. token, when set, is sent as the
// password of HTTP basic auth, as actions/checkout configures it.
func (g *Repo) Fetch(ctx context.Context, rev, token string) error {
	var auth *http.BasicAuth
	if token != "" {
		auth = &http.BasicAuth{Username: "x-access-token", Password: token}
	}
	spec := fmt.Sprintf("+%s:refs/ferry/fetched/%s", rev, rev)
	if !plumbing.IsHash(rev) {
		spec = fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", rev, rev)
	}
	opts := &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec(spec)}}
	if g.shallow() {
		// Without a depth go-git tells the server it has the ancestors
		// of the shallow tip, and the server sends nothing.
		opts.Depth = 1
	}
	if auth != nil {
		opts.Auth = auth
	}
	err := g.r.FetchContext(ctx, opts)
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching %s from origin: %w", rev, err)
	}
	return nil
}

// Changed lists the paths (relative to the work tree root, slash
// separated) that differ between two commits: added, deleted, modified,
// and both names of a rename.
func (g *Repo) Changed(base, head string) ([]string, error) {
	bt, err := g.tree(base)
	if err != nil {
		return nil, err
	}
	ht, err := g.tree(head)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(bt, ht)
	if err != nil {
		return nil, fmt.Errorf("comparing %s with %s: %w", shortRev(base), shortRev(head), err)
	}
	seen := map[string]bool{}
	for _, c := range changes {
		for _, n := range []string{c.From.Name, c.To.Name} {
			if n != "" {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func (g *Repo) tree(rev string) (*object.Tree, error) {
	c, err := g.r.CommitObject(plumbing.NewHash(rev))
	if err != nil {
		return nil, &MissingCommitError{Rev: rev, Shallow: g.shallow()}
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading the tree of %s: %w", shortRev(rev), err)
	}
	return t, nil
}

// Export writes the files of commit rev under prefix (a folder of the work
// tree, "" for all of it) into dir, straight from the object database: the
// work tree and index are not touched. Files keep their bytes as committed
// (SOPS files stay encrypted); submodules are left out.
func (g *Repo) Export(ctx context.Context, rev, prefix, dir string) error {
	t, err := g.tree(rev)
	if err != nil {
		return err
	}
	prefix = strings.Trim(path.Clean("/"+filepath.ToSlash(prefix)), "/")
	if prefix != "" {
		sub, err := t.Tree(prefix)
		if errors.Is(err, object.ErrDirectoryNotFound) {
			return os.MkdirAll(dir, 0o700) // the folder does not exist at rev
		}
		if err != nil {
			return fmt.Errorf("reading %s at %s: %w", prefix, shortRev(rev), err)
		}
		t = sub
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Entries are written below dir and through no symlink: a tree (one a
	// forge accepted without checking it, say) may name "..", or hold a
	// link and then a file below the link's name.
	out, err := confine.Open(dir)
	if err != nil {
		return err
	}
	defer out.Close()
	return g.exportTree(ctx, t, out, "", rev)
}

// exportTree writes the entries of t into out, a folder of their own
// opened once: each file is then one create in it, not a walk from the
// top (a fleet's tree is hundreds of files a few folders deep). name is
// t's path, for errors.
func (g *Repo) exportTree(ctx context.Context, t *object.Tree, out *confine.Dir, name, rev string) error {
	for _, entry := range t.Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		at := path.Join(name, entry.Name)
		var err error
		switch entry.Mode {
		case filemode.Dir:
			if err = g.exportSub(ctx, entry, out, at, rev); err != nil {
				return err // named where it happened
			}
		case filemode.Submodule:
		case filemode.Symlink:
			var target []byte
			if target, err = blobBytes(g.r, entry.Hash); err == nil {
				err = out.Symlink(string(target), entry.Name)
			}
		default:
			var b []byte
			if b, err = blobBytes(g.r, entry.Hash); err == nil {
				err = out.Create(entry.Name, b, 0o600)
			}
		}
		if err != nil {
			return fmt.Errorf("%s at %s: %w", at, shortRev(rev), err)
		}
	}
	return nil
}

// exportSub writes the folder entry of out, named at.
func (g *Repo) exportSub(ctx context.Context, entry object.TreeEntry, out *confine.Dir, at, rev string) error {
	sub, err := g.r.TreeObject(entry.Hash)
	if err != nil {
		return fmt.Errorf("walking the tree of %s: %s: %w", shortRev(rev), at, err)
	}
	d, err := out.Sub(entry.Name, 0o700)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", at, shortRev(rev), err)
	}
	defer d.Close()
	return g.exportTree(ctx, sub, d, at, rev)
}

func blobBytes(r *git.Repository, h plumbing.Hash) ([]byte, error) {
	b, err := r.BlobObject(h)
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func shortRev(rev string) string {
	if len(rev) > 12 && plumbing.IsHash(rev) {
		return rev[:12]
	}
	return rev
}
