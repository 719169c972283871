package confine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/confine"
)

// Paths below the working directory (the checkout, in CI) are entered
// through no symlink at all; outside it, only the last element is checked.
func TestWriteNamedBelowTheWorkingDirectory(t *testing.T) {
	wd := t.TempDir()
	outside := t.TempDir()
	t.Chdir(wd)
	if err := os.Mkdir("reports", 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"linked": outside, filepath.Join("reports", "link.md"): filepath.Join(outside, "report.md")} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	// In order: outside/abs is a folder only once abs/diff.md is written.
	for _, c := range []struct{ path, want string }{
		{"reports/diff.md", ""},
		{"new/folder/diff.md", ""},
		{filepath.Join(outside, "abs", "diff.md"), ""},
		{"linked/diff.md", "linked is a symlink"},
		{"reports/link.md", "reports/link.md is a symlink"},
		{filepath.Join(wd, "linked", "diff.md"), "linked is a symlink"},
		{filepath.Join(outside, "abs"), "is a folder"},
		{"reports", "is a folder"},
		{"../" + filepath.Base(outside) + "/out.md", ""},
	} {
		path, want := c.path, c.want
		err := confine.WriteNamed(path, []byte("report\n"), 0o644)
		switch {
		case want == "" && err != nil:
			t.Errorf("WriteNamed(%s): %v", path, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("WriteNamed(%s) = %v, want an error with %q", path, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "report.md")); err == nil {
		t.Error("wrote through reports/link.md")
	}
	if _, err := os.Stat(filepath.Join(outside, "diff.md")); err == nil {
		t.Error("wrote through linked/")
	}
}
