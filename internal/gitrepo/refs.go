package gitrepo

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commit returns the commit a reference of the clone points at (a full
// name: refs/heads/x, refs/remotes/origin/x, refs/tags/v1, an annotated
// tag peeled to its commit), and false when the clone has no such
// reference or it points at no commit it holds. Nothing is fetched.
func (g *Repo) Commit(name string) (string, bool) {
	ref, err := g.r.Reference(plumbing.ReferenceName(name), true)
	if err != nil {
		return "", false
	}
	h, ok := g.peel(ref.Hash())
	return h.String(), ok
}

// HasCommit reports whether the clone holds commit hash (a full hash).
func (g *Repo) HasCommit(hash string) bool {
	if !plumbing.IsHash(hash) {
		return false
	}
	_, err := g.r.CommitObject(plumbing.NewHash(hash))
	return err == nil
}

// peel follows annotated tags to the commit they name.
func (g *Repo) peel(h plumbing.Hash) (plumbing.Hash, bool) {
	for range 10 {
		if _, err := g.r.CommitObject(h); err == nil {
			return h, true
		}
		tag, err := g.r.TagObject(h)
		if err != nil {
			return plumbing.ZeroHash, false
		}
		h = tag.Target
	}
	return plumbing.ZeroHash, false
}

// Tag is a tag of the clone and the commit it names.
type Tag struct {
	Name   string // v1.2.0, not refs/tags/v1.2.0
	Commit string
	// When is the commit's committer time, which orders tags of equal
	// version as Flux's source-controller does.
	When time.Time
}

// Tags lists the clone's tags that name a commit it holds, by name.
func (g *Repo) Tags() ([]Tag, error) {
	refs, err := g.r.Tags()
	if err != nil {
		return nil, fmt.Errorf("listing tags: %w", err)
	}
	var out []Tag
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		h, ok := g.peel(ref.Hash())
		if !ok {
			return nil
		}
		c, err := g.r.CommitObject(h)
		if err != nil {
			return nil
		}
		out = append(out, Tag{Name: ref.Name().Short(), Commit: h.String(), When: c.Committer.When})
		return nil
	})
	return out, err
}

// HeadBranch is the branch HEAD is on, "" when HEAD is detached.
func (g *Repo) HeadBranch() string {
	ref, err := g.r.Reference(plumbing.HEAD, false)
	if err != nil || ref.Type() != plumbing.SymbolicReference || !ref.Target().IsBranch() {
		return ""
	}
	return ref.Target().Short()
}

// RemoteURLs are the URLs of the named remote, none when there is no
// such remote.
func (g *Repo) RemoteURLs(name string) []string {
	rem, err := g.r.Remote(name)
	if err != nil {
		return nil
	}
	return rem.Config().URLs
}

// Folder is dir's folder in the work tree (slash-separated, "" for the
// top): what Export takes as its prefix to export dir's part of a
// commit.
func (g *Repo) Folder(dir string) (string, error) {
	top, err := g.Root()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if r, err := filepath.EvalSymlinks(top); err == nil {
		top = r
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel != "." && !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s is outside its Git work tree %s", dir, top)
	}
	if rel = filepath.ToSlash(rel); rel == "." {
		return "", nil
	}
	return rel, nil
}
