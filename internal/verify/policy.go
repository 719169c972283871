package verify

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Policy is what one run must verify: the strongest mode any source asks
// (the revision's ferry.yaml or GitRepository, the step's input, the mode
// the last apply of a target was held to), and where the keys are.
type Policy struct {
	Mode Mode
	// Range: every commit since the last applied revision.
	Range bool
	// Sources say who asked, for the log.
	Sources []string
}

// Ask adds a source's mode to p; the stronger of the two holds.
func (p *Policy) Ask(mode, source string) error {
	if mode == "" {
		return nil
	}
	m, err := ParseMode(mode)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	p.Mode = Stronger(p.Mode, m)
	p.Sources = append(p.Sources, source+" ("+string(m)+")")
	return nil
}

// Stronger is the mode that demands both a and b.
func Stronger(a, b Mode) Mode {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return TagAndHEAD
}

// KeysAt reads the trusted keys in paths (files, or folders whose files
// are read) of the tree of commit rev: the repository's key files as of
// a revision already applied, never the one being verified. A path rev
// does not have is skipped: it was added since, and brings no trust.
func KeysAt(repo *git.Repository, rev plumbing.Hash, paths []string) (Keys, error) {
	c, err := repo.CommitObject(rev)
	if err != nil {
		return Keys{}, fmt.Errorf("the last applied revision %s: %w", rev, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return Keys{}, err
	}
	var all Keys
	for _, p := range paths {
		files, err := filesUnder(tree, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // added since: it brings no trust yet
		}
		if err != nil {
			return Keys{}, fmt.Errorf("verify.keys %s at %s: %w", p, short(rev), err)
		}
		for _, f := range files {
			text, err := f.Contents()
			if err != nil {
				return Keys{}, err
			}
			k, err := ParseKeys(f.Name+" at "+short(rev), []byte(text))
			if err != nil {
				return Keys{}, err
			}
			all.Add(k)
		}
	}
	return all, nil
}

// FileAt is the content of the file at p in the tree of commit rev.
func FileAt(repo *git.Repository, rev plumbing.Hash, p string) ([]byte, error) {
	c, err := repo.CommitObject(rev)
	if err != nil {
		return nil, err
	}
	f, err := c.File(p)
	if err != nil {
		return nil, err
	}
	text, err := f.Contents()
	return []byte(text), err
}

// filesUnder is the file at p in tree, or the files below the folder p.
func filesUnder(tree *object.Tree, p string) ([]*object.File, error) {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	if f, err := tree.File(p); err == nil {
		return []*object.File{f}, nil
	}
	sub, err := tree.Tree(p)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	var out []*object.File
	err = sub.Files().ForEach(func(f *object.File) error {
		f.Name = path.Join(p, f.Name)
		out = append(out, f)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}
