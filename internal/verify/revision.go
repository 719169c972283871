package verify

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Options say what of a revision must verify.
type Options struct {
	Mode Mode
	Keys Keys
	// Since, when set, is the last revision applied: every commit after
	// it up to the revision must verify too, so an unsigned commit cannot
	// hide behind a signed merge.
	Since plumbing.Hash
}

// Revision verifies rev in repo as o asks, and returns what verified.
// The first object that does not is an *Error.
func Revision(repo *git.Repository, rev plumbing.Hash, o Options) ([]Signed, error) {
	if o.Keys.Empty() {
		return nil, errors.New("no trusted keys: give the trusted-keys input (FERRY_TRUSTED_KEYS), verify.secretRef or verify.keys")
	}
	head, err := repo.CommitObject(rev)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", rev, err)
	}
	var out []Signed
	if o.Mode == HEAD || o.Mode == TagAndHEAD || o.Mode == "" {
		s, err := Commit(head, o.Keys)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if o.Mode == Tag || o.Mode == TagAndHEAD {
		s, err := tagsOf(repo, head, o.Keys)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if !o.Since.IsZero() && o.Since != rev {
		more, err := since(repo, head, o.Since, o.Keys)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// tagsOf verifies the tags that point at c: one that verifies is enough;
// none, or none that verifies, is an error naming each and why.
func tagsOf(repo *git.Repository, c *object.Commit, keys Keys) (Signed, error) {
	refs, err := repo.Tags()
	if err != nil {
		return Signed{}, err
	}
	var refused []error
	var found *Signed
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		t, err := repo.TagObject(ref.Hash())
		switch {
		case errors.Is(err, plumbing.ErrObjectNotFound):
			if ref.Hash() == c.Hash {
				refused = append(refused, &Error{Object: "tag " + ref.Name().Short(), Author: "-", Reason: "a lightweight tag, which cannot be signed"})
			}
			return nil
		case err != nil:
			return err
		case t.Target != c.Hash:
			return nil
		}
		s, err := TagObject(t, keys)
		if err != nil {
			refused = append(refused, err)
			return nil
		}
		found = &s
		return storer.ErrStop
	})
	switch {
	case err != nil:
		return Signed{}, err
	case found != nil:
		return *found, nil
	case len(refused) == 0:
		return Signed{}, &Error{Object: "commit " + short(c.Hash), Author: c.Author.Name + " <" + c.Author.Email + ">", Reason: "no tag points at it (verify mode Tag)"}
	}
	sort.Slice(refused, func(i, j int) bool { return refused[i].Error() < refused[j].Error() })
	return Signed{}, errors.Join(refused...)
}

// since verifies every commit reachable from head and not from last.
func since(repo *git.Repository, head *object.Commit, last plumbing.Hash, keys Keys) ([]Signed, error) {
	lastCommit, err := repo.CommitObject(last)
	if err != nil {
		return nil, fmt.Errorf("the last applied revision %s is not in the repository (fetch-depth: 0): %w", last, err)
	}
	seen, err := ancestors(lastCommit)
	if err != nil {
		return nil, err
	}
	if seen[head.Hash] {
		return nil, nil
	}
	var out []Signed
	err = object.NewCommitPreorderIter(head, seen, nil).ForEach(func(c *object.Commit) error {
		if c.Hash == head.Hash {
			return nil
		}
		s, err := Commit(c, keys)
		if err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// Summary is how the commits of a change verify: how many, how many a
// trusted key signed, and each refused one.
type Summary struct {
	Commits int      `json:"commits"`
	Trusted int      `json:"trusted"`
	Refused []*Error `json:"refused,omitempty"`
}

// OK reports whether every commit verified.
func (s *Summary) OK() bool { return len(s.Refused) == 0 }

// Line says it in one line: "3 commits, 2 signed by trusted keys, 1
// unsigned: a1b2c3d".
func (s *Summary) Line() string {
	commits := "commits"
	if s.Commits == 1 {
		commits = "commit"
	}
	parts := []string{fmt.Sprintf("%d %s, %d signed by trusted keys", s.Commits, commits, s.Trusted)}
	byReason := map[string][]string{}
	for _, r := range s.Refused {
		byReason[r.Reason] = append(byReason[r.Reason], strings.TrimPrefix(r.Object, "commit "))
	}
	for _, r := range slices.Sorted(maps.Keys(byReason)) {
		parts = append(parts, fmt.Sprintf("%d %s: %s", len(byReason[r]), r, strings.Join(byReason[r], ", ")))
	}
	return strings.Join(parts, ", ")
}

// Commits verifies each commit reachable from head and not from base
// with keys (the pull request's commits, with the base's keys).
func Commits(repo *git.Repository, base, head plumbing.Hash, keys Keys) (Summary, error) {
	headCommit, err := repo.CommitObject(head)
	if err != nil {
		return Summary{}, fmt.Errorf("head %s: %w", head, err)
	}
	baseCommit, err := repo.CommitObject(base)
	if err != nil {
		return Summary{}, fmt.Errorf("base %s: %w", base, err)
	}
	seen, err := ancestors(baseCommit)
	if err != nil {
		return Summary{}, err
	}
	var s Summary
	err = object.NewCommitPreorderIter(headCommit, seen, nil).ForEach(func(c *object.Commit) error {
		s.Commits++
		_, err := Commit(c, keys)
		var ve *Error
		switch {
		case err == nil:
			s.Trusted++
		case errors.As(err, &ve):
			s.Refused = append(s.Refused, ve)
		default:
			return err
		}
		return nil
	})
	return s, err
}

// ancestors are c and every commit it reaches.
func ancestors(c *object.Commit) (map[plumbing.Hash]bool, error) {
	seen := map[plumbing.Hash]bool{}
	err := object.NewCommitPreorderIter(c, nil, nil).ForEach(func(c *object.Commit) error {
		seen[c.Hash] = true
		return nil
	})
	return seen, err
}
