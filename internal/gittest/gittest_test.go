package gittest_test

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/ferry-ci/ferry/internal/gittest"
)

// steps makes the same two commits in a fresh repository and returns it
// with their hashes.
func steps(t *testing.T) (*gittest.Repo, string, string) {
	r := gittest.Init(t, filepath.Join(t.TempDir(), "repo"))
	r.Write(t, "a/b.yaml", "x: 1\n")
	r.Write(t, "gone.txt", "bye")
	first := r.Commit(t, "first")
	r.Replace(t, "a/b.yaml", "1", "2")
	r.Remove(t, "gone.txt")
	return r, first, r.Commit(t, "second")
}

func TestCommitsAreReproducible(t *testing.T) {
	r, first, second := steps(t)
	_, first2, second2 := steps(t)
	if first != first2 || second != second2 {
		t.Errorf("the same steps made %s, %s then %s, %s", first, second, first2, second2)
	}
	head, err := r.Head()
	if err != nil || head.Name() != plumbing.NewBranchReferenceName("main") || head.Hash().String() != second {
		t.Fatalf("HEAD = %v, %v; want main at %s", head, err, second)
	}
	c, err := r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != first {
		t.Errorf("parents %v, want %s", c.ParentHashes, first)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.File("gone.txt"); err == nil {
		t.Error("the removed file is still committed")
	}
	if f, err := tree.File("a/b.yaml"); err != nil {
		t.Error(err)
	} else if s, _ := f.Contents(); s != "x: 2\n" {
		t.Errorf("a/b.yaml = %q, want the replaced content", s)
	}
}

func TestBareRemote(t *testing.T) {
	r, _, second := steps(t)
	remote := r.BareRemote(t, "origin")
	if err := r.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []gitconfig.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		t.Fatal(err)
	}
	ref, err := remote.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil || ref.Hash().String() != second {
		t.Errorf("the remote's main is %v, %v; want %s", ref, err, second)
	}
}
