package confine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/confine"
)

// open makes a folder to write into, with what a repository could have
// committed there, and a folder outside it that must stay untouched; it
// returns the first opened with confine.Open (closed when the test ends).
func open(t *testing.T) (d *confine.Dir, out, outside string) {
	t.Helper()
	base := t.TempDir()
	out, outside = filepath.Join(base, "out"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(out, "app"), filepath.Join(out, "inner"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret_db.yaml"), "untouched\n")
	write(filepath.Join(out, "app", "old.yaml"), "old\n")
	write(filepath.Join(out, "file"), "a file\n")
	for link, target := range map[string]string{
		"app/secret_db.yaml": filepath.Join(outside, "secret_db.yaml"),
		"app/dangling.yaml":  filepath.Join(outside, "new.yaml"),
		"app/relative.yaml":  "../../outside/secret_db.yaml",
		"linked":             outside,
		"inside":             "inner",
	} {
		if err := os.Symlink(target, filepath.Join(out, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	d, err := confine.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, out, outside
}

// TestWriteFile checks WriteFile, and Create, which refuses what exists
// (WriteFile replaces a file) and is otherwise held to the same.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	t.Run("WriteFile", func(t *testing.T) { testWrite(t, (*confine.Dir).WriteFile, "") })
	t.Run("Create", func(t *testing.T) { testWrite(t, (*confine.Dir).Create, "file exists") })
}

func testWrite(t *testing.T, write func(d *confine.Dir, rel string, data []byte, perm os.FileMode) error, existing string) {
	t.Parallel()
	tests := []struct {
		rel  string
		want string // part of the error; "" for none
	}{
		{"app/new.yaml", ""},
		{"app/old.yaml", ""}, // replaced by WriteFile
		{"prod/app/deep.yaml", ""},
		{"app/secret_db.yaml", "out/app/secret_db.yaml is a symlink"},
		{"app/dangling.yaml", "out/app/dangling.yaml is a symlink"},
		{"app/relative.yaml", "out/app/relative.yaml is a symlink"},
		{"linked/secret_db.yaml", "out/linked is a symlink"},
		{"linked/x/y.yaml", "out/linked is a symlink"},
		{"inside/x.yaml", "out/inside is a symlink"}, // even to a folder within
		{"file/x.yaml", "out/file is not a folder"},
		{"app", "out/app is a folder"},
		{"../outside/secret_db.yaml", "not a plain path"},
		{"app/../../outside/x.yaml", "not a plain path"},
		{"app/./x.yaml", "not a plain path"},
		{"app//x.yaml", "not a plain path"},
		{"/etc/x.yaml", "not a plain path"},
		{"", "not a plain path"},
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			t.Parallel()
			d, out, outside := open(t)
			switch tc.rel {
			case "app/old.yaml", "app/secret_db.yaml", "app/dangling.yaml", "app/relative.yaml", "app":
				if existing != "" {
					tc.want = existing // Create refuses whatever is there
				}
			}
			err := write(d, tc.rel, []byte("written\n"), 0o600)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("WriteFile: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("WriteFile = %v, want an error with %q", err, tc.want)
			case tc.want == "":
				p := filepath.Join(out, filepath.FromSlash(tc.rel))
				fi, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: mode %v, want a regular file with 0600", tc.rel, fi.Mode())
				}
				if b, _ := os.ReadFile(p); string(b) != "written\n" {
					t.Errorf("%s holds %q", tc.rel, b)
				}
			}
			// Nothing outside, nor through a link, was written, and no
			// temporary file is left behind.
			if d := cmp.Diff([]string{"outside/secret_db.yaml"}, files(t, filepath.Dir(outside), "outside")); d != "" {
				t.Errorf("outside (-want +got):\n%s", d)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret_db.yaml")); string(b) != "untouched\n" {
				t.Errorf("the file a link points to was written: %q", b)
			}
			for _, f := range files(t, out, ".") {
				if strings.Contains(f, ".ferry-") {
					t.Errorf("left behind %s", f)
				}
			}
		})
	}
}

func TestSubAndMkdirAll(t *testing.T) {
	t.Parallel()
	d, out, _ := open(t)
	for rel, want := range map[string]string{
		"linked":       "out/linked is a symlink",
		"linked/x":     "out/linked is a symlink",
		"inside":       "out/inside is a symlink",
		"file":         "out/file is not a folder",
		"../outside":   "not a plain path",
		"app/../../..": "not a plain path",
	} {
		if _, err := d.Sub(rel, 0o755); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Sub(%q) = %v, want an error with %q", rel, err, want)
		}
	}
	sub, err := d.Sub("prod/apps", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.WriteFile("x.yaml", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "prod", "apps", "x.yaml")); err != nil {
		t.Error(err)
	}
	if err := sub.WriteFile("../../app/x.yaml", []byte("x"), 0o644); err == nil {
		t.Error("a sub folder let a write climb out of it")
	}
}

// A link Symlink made is a link like any other: nothing is written
// through it.
func TestSymlinkIsNotWrittenThrough(t *testing.T) {
	t.Parallel()
	d, out, outside := open(t)
	if err := d.Symlink(outside, "tree/link"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(filepath.Join(out, "tree", "link")); err != nil || got != outside {
		t.Fatalf("link = %q, %v", got, err)
	}
	if err := d.WriteFile("tree/link/secret_db.yaml", []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("WriteFile through a link = %v", err)
	}
	if err := d.Symlink("x", "tree/link"); err == nil {
		t.Error("Symlink over an existing link succeeded")
	}
	if err := d.Symlink("x", "linked/y"); err == nil || !strings.Contains(err.Error(), "out/linked is a symlink") {
		t.Errorf("Symlink below a link = %v", err)
	}
}

// files lists the files and links below dir/sub, slash-separated and
// relative to dir.
func files(t *testing.T, dir, sub string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
