package goldenfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/goldenfile"
)

func TestCheckWritesThenCompares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	goldenfile.Check(t, path, []byte("a\nb\n"), true)
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	goldenfile.Check(t, path, []byte("a\nb\n"), false) // same: passes
}

func TestLineDiff(t *testing.T) {
	got := goldenfile.LineDiff("a\nb\nc", "a\nB\nc\nd")
	for _, want := range []string{"line 2:\n- b\n+ B\n", "line 4:\n- \n+ d\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("LineDiff = %q, want it to hold %q", got, want)
		}
	}
	if d := goldenfile.LineDiff("same", "same"); d != "" {
		t.Errorf("LineDiff of equal texts = %q", d)
	}
}
