// Package goldenfile compares what a test produced with a reviewed file under
// testdata/, and rewrites the file instead when the test runs with its
// package's -update flag.
package goldenfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check compares got with the file at path; with update, it writes got
// there instead (making the folders it needs). A difference fails the test
// with the first lines that differ.
func Check(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		tb.Errorf("output differs from %s (run go test -update and review the diff):\n%s", path, LineDiff(string(want), string(got)))
	}
}

// LineDiff shows the first ten lines where two texts differ, each as the
// wanted (-) and the got (+) line.
func LineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, w, g)
			if n++; n == 10 {
				break
			}
		}
	}
	return b.String()
}
