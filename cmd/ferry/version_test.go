package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/release"
)

// TestVersion prints what a release build stamps (-X main.version,
// main.commit, main.date) as one line and as JSON.
func TestVersion(t *testing.T) {
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	version, commit, date = "v1.2.3", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T10:00:00Z"
	platform := runtime.GOOS + "/" + runtime.GOARCH

	var out bytes.Buffer
	e := &env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }, environ: func() []string { return nil }}
	if code := run(t.Context(), []string{"version"}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	want := "ferry v1.2.3 " + platform + " " + runtime.Version() + " (commit 0123456789ab, 2026-12-01T10:00:00Z)\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("text (-want +got):\n%s", d)
	}

	out.Reset()
	if code := run(t.Context(), []string{"version", "--format", "json"}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	var got release.Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	wantInfo := release.Info{Version: "v1.2.3", Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: platform}
	if d := cmp.Diff(wantInfo, got); d != "" {
		t.Errorf("json (-want +got):\n%s", d)
	}

	out.Reset()
	if code := run(t.Context(), []string{"version", "--format", "yaml"}, e); code != 2 {
		t.Errorf("--format yaml: exit %d, want 2:\n%s", code, out.String())
	}
}
