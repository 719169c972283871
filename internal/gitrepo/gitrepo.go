// Package gitrepo reads the Git repository ferry works on (the revision
// being applied, the ancestry between revisions, the files changed between
// two, a revision's tree) and writes the commits `ferry bump --pr` proposes
// on the checked-out commit, pushing them to branches.
package gitrepo

import (
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Repo is an opened Git repository.
type Repo struct {
	r *git.Repository
}

// Open opens the repository holding dir, looking in its parents for .git.
func Open(dir string) (*Repo, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("opening the Git repository at %s: %w", dir, err)
	}
	return &Repo{r: r}, nil
}

// Head returns the commit HEAD points at.
func (g *Repo) Head() (string, error) {
	ref, err := g.r.Head()
	if err != nil {
		return "", fmt.Errorf("reading HEAD: %w", err)
	}
	return ref.Hash().String(), nil
}

// IsAncestor reports whether commit a is an ancestor of commit b (a commit
// is not its own ancestor here). Either being unknown is an error: a
// shallow clone may lack the history to tell.
func (g *Repo) IsAncestor(a, b string) (bool, error) {
	if a == b {
		return false, nil
	}
	ca, err := g.r.CommitObject(plumbing.NewHash(a))
	if err != nil {
		return false, fmt.Errorf("commit %s: %w", a, err)
	}
	cb, err := g.r.CommitObject(plumbing.NewHash(b))
	if err != nil {
		return false, fmt.Errorf("commit %s: %w", b, err)
	}
	return ca.IsAncestor(cb)
}

// CheckedOut returns revision, or when it is empty the HEAD commit of the
// repository dir is in; and, when dir is in a Git repository, how to tell
// whether one commit is an ancestor of another (nil otherwise).
func CheckedOut(dir, revision string) (string, func(a, b string) (bool, error)) {
	g, err := Open(dir)
	if err != nil {
		return revision, nil
	}
	if revision == "" {
		revision, _ = g.Head()
	}
	return revision, g.IsAncestor
}
