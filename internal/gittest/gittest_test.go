package gittest_test

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"

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
	r, first, second := steps(t)
	remote := r.BareRemote(t, "origin")
	if got := remote.Branches(t); len(got) != 0 {
		t.Errorf("a new remote has branches %q", got)
	}
	r.PushHead(t, "origin", "main", gittest.Auth{})
	r.PushHead(t, "origin", "feature", gittest.Auth{})
	if diff := cmp.Diff([]string{"feature", "main"}, remote.Branches(t)); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
	want := gittest.Commit{Hash: second, Parents: []string{first}}
	if diff := cmp.Diff(want, remote.Tip(t, "main")); diff != "" {
		t.Errorf("the remote's main (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, r.Tip(t, "main")); diff != "" {
		t.Errorf("the local main (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"a/b.yaml": "x: 2\n"}, remote.Files(t, second)); diff != "" {
		t.Errorf("files of the second commit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"a/b.yaml": "x: 1\n", "gone.txt": "bye"}, r.Files(t, first)); diff != "" {
		t.Errorf("files of the first commit (-want +got):\n%s", diff)
	}

	// A branch pushed again is replaced, even by an older commit.
	r.AddRemote(t, "origin", "ignored: the remote exists")
	if err := r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), plumbing.NewHash(first))); err != nil {
		t.Fatal(err)
	}
	r.PushHead(t, "origin", "feature", gittest.Auth{})
	if got := remote.Tip(t, "feature").Hash; got != first {
		t.Errorf("feature pushed again is at %s, want %s", got, first)
	}

	clone := gittest.Clone(t, remote.Dir, "main", gittest.Auth{})
	if diff := cmp.Diff([]string{"main"}, clone.Branches(t)); diff != "" {
		t.Errorf("branches of a clone of main (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, clone.Tip(t, "main")); diff != "" {
		t.Errorf("the clone's main (-want +got):\n%s", diff)
	}
}
