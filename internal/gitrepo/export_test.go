package gitrepo_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/gittest"
)

// objects writes git objects straight to a repository's store, so a test
// can make trees that git itself would refuse to commit but a forge that
// does not check them may accept.
type objects struct {
	t  *testing.T
	st storer.EncodedObjectStorer
}

func (o objects) blob(content string) plumbing.Hash {
	obj := o.st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		o.t.Fatal(err)
	}
	if _, err := w.Write([]byte(content)); err != nil {
		o.t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		o.t.Fatal(err)
	}
	return o.store(obj)
}

func (o objects) tree(entries ...object.TreeEntry) plumbing.Hash {
	obj := o.st.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		o.t.Fatal(err)
	}
	return o.store(obj)
}

func (o objects) commit(tree plumbing.Hash) string {
	who := object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	obj := o.st.NewEncodedObject()
	if err := (&object.Commit{Author: who, Committer: who, Message: "x", TreeHash: tree}).Encode(obj); err != nil {
		o.t.Fatal(err)
	}
	return o.store(obj).String()
}

func (o objects) store(obj plumbing.EncodedObject) plumbing.Hash {
	h, err := o.st.SetEncodedObject(obj)
	if err != nil {
		o.t.Fatal(err)
	}
	return h
}

func file(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
}

func dir(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
}

func link(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Symlink, Hash: h}
}

// Export writes a revision's files below the folder it is given and
// through no symlink, whatever the tree holds.
func TestExportStaysInItsFolder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tree func(o objects, outside string) plumbing.Hash
		want string   // part of the error; "" for none
		out  []string // what is below the folder
	}{
		{
			name: "files, folders and a link are exported as committed",
			tree: func(o objects, outside string) plumbing.Hash {
				return o.tree(
					dir("apps", o.tree(file("a.yaml", o.blob("a: 1\n")))),
					link("current", o.blob("apps")),
					file("ferry.yaml", o.blob("targets: []\n")),
				)
			},
			out: []string{"apps/", "apps/a.yaml", "current -> apps", "ferry.yaml"},
		},
		{
			name: "an entry named ..",
			tree: func(o objects, outside string) plumbing.Hash {
				return o.tree(dir("..", o.tree(file("escaped.yaml", o.blob("x\n")))))
			},
			want: `".."`, // refused by go-git's walker already
		},
		{
			name: "a link, then a folder of the same name",
			tree: func(o objects, outside string) plumbing.Hash {
				return o.tree(
					link("apps", o.blob(outside)),
					dir("apps", o.tree(file("secret.yaml", o.blob("x\n")))),
				)
			},
			want: "is a symlink",
		},
		{
			name: "an entry name with a slash in it",
			tree: func(o objects, outside string) plumbing.Hash {
				return o.tree(file("a/../../escaped.yaml", o.blob("x\n")))
			},
			want: "..",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			repoDir, out, outside := filepath.Join(base, "repo"), filepath.Join(base, "export", "head"), filepath.Join(base, "outside")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			o := objects{t: t, st: gittest.Init(t, repoDir).Storer}
			rev := o.commit(tc.tree(o, outside))
			g, err := gitrepo.Open(repoDir)
			if err != nil {
				t.Fatal(err)
			}
			err = g.Export(t.Context(), rev, "", out)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Export: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Export = %v, want an error with %q", err, tc.want)
			}
			if tc.out != nil {
				if got := listTree(t, out); strings.Join(got, "\n") != strings.Join(tc.out, "\n") {
					t.Errorf("exported %q, want %q", got, tc.out)
				}
			}
			// Nothing landed outside the folder.
			for _, d := range []string{outside, filepath.Join(base, "export")} {
				for _, f := range listTree(t, d) {
					if d == outside || !strings.HasPrefix(f, "head") {
						t.Errorf("wrote %s in %s", f, d)
					}
				}
			}
		})
	}
}

// listTree lists what is below dir: folders with a trailing slash, links
// with their target.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case e.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			rel += " -> " + target
		case e.IsDir():
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
