package gctune

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestPolicy runs this test binary again, with and without GOGC and
// GOMEMLIMIT in its environment, and reads the settings the child's
// init left in effect.
func TestPolicy(t *testing.T) {
	if os.Getenv("GCTUNE_CHILD") == "1" {
		percent := debug.SetGCPercent(-1)
		limit := debug.SetMemoryLimit(-1)
		os.Stdout.WriteString("settings " + strconv.Itoa(percent) + " " + strconv.FormatInt(limit, 10) + "\n")
		return
	}
	for _, tc := range []struct {
		env     []string
		percent int
		limit   int64
	}{
		{nil, Percent, Limit},
		{[]string{"GOGC=50"}, 50, Limit},
		{[]string{"GOMEMLIMIT=100MiB"}, Percent, 100 << 20},
		{[]string{"GOGC=off", "GOMEMLIMIT=1GiB"}, -1, 1 << 30},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPolicy$", "-test.count=1")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "GCTUNE_CHILD=1")
		cmd.Env = append(cmd.Env, tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.env, err, out)
		}
		want := "settings " + strconv.Itoa(tc.percent) + " " + strconv.FormatInt(tc.limit, 10) + "\n"
		if !strings.Contains(string(out), want) {
			t.Errorf("environment %v: got %q, want %q", tc.env, out, want)
		}
	}
}
