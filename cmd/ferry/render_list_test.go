package main

import (
	"strings"
	"testing"
)

// A line of render --list is one target, whatever its path or origin
// hold.
func TestRenderListRowsCannotBeForged(t *testing.T) {
	r := newScenario(t)
	r.write("ferry.yaml", "targets:\n  - name: app\n    path: \"app\\nevil\\tapps\\ttrue\"\n")
	res := ferry(t, nil, "render", "--list", "--repo", r.dir)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	// The path does not exist, so the target is listed with its error,
	// which names the path quoted too.
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"app\nevil\tapps\ttrue"`) || !strings.HasPrefix(lines[2], "error app: ") {
		t.Errorf("want a header, one row with the path quoted and one error line, got:\n%s", res.stdout)
	}
}
