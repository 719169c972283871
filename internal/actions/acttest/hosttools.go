package acttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// HostTools are the host's Go (with its module and build caches) and
// cosign, for a job whose workflow sets them up with actions/setup-go and
// sigstore/cosign-installer: neither can be fetched here, and the job
// image has neither tool. The stand-ins of those actions (StandIns) put
// what HostTools mounts on PATH.
type HostTools struct {
	// ContainerOptions mount the tools into the job's containers at their
	// host paths (the caches read-write: a build in the job reuses and
	// adds to the host's), for Job.ContainerOptions.
	ContainerOptions string
	// Env names them for the stand-ins (FERRY_TEST_GOROOT,
	// FERRY_TEST_GOMODCACHE, FERRY_TEST_GOCACHE, FERRY_TEST_COSIGN), for
	// Job.Env.
	Env map[string]string
}

// HostGo returns the host's Go and, unless cosign is "", the cosign
// binary at that path, for a job.
func HostGo(t testing.TB, cosign string) HostTools {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("acttest: go env: %v", err)
	}
	paths := strings.Fields(string(out))
	if len(paths) != 3 {
		t.Fatalf("acttest: go env GOROOT GOMODCACHE GOCACHE: %q", out)
	}
	h := HostTools{Env: map[string]string{
		"FERRY_TEST_GOROOT":     paths[0],
		"FERRY_TEST_GOMODCACHE": paths[1],
		"FERRY_TEST_GOCACHE":    paths[2],
	}}
	var opts []string
	for i, p := range paths {
		if strings.ContainsAny(p, " :'\"") {
			t.Fatalf("acttest: %s: a path act's --container-options cannot carry", p)
		}
		mode := ""
		if i == 0 {
			mode = ":ro"
		}
		opts = append(opts, "-v "+p+":"+p+mode)
	}
	if cosign != "" {
		abs, err := filepath.Abs(cosign)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("acttest: cosign: %v", err)
		}
		opts = append(opts, "-v "+abs+":"+abs+":ro")
		h.Env["FERRY_TEST_COSIGN"] = abs
	}
	h.ContainerOptions = strings.Join(opts, " ")
	return h
}

// standIns are the folders (under actions/) that stand in for the
// third-party actions ferry's workflows use, by owner/name.
var standIns = map[string]string{
	"actions/checkout":          "checkout",
	"actions/upload-artifact":   "upload-artifact",
	"actions/setup-go":          "setup-go",
	"sigstore/cosign-installer": "cosign-installer",
}

var usesLine = regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*["']?([^\s"'#]+)`)

// StandIns returns Job.Actions for the workflow file: each `uses:
// owner/name@ref` of a third-party action served from its stand-in, at the
// ref the workflow names (a tag, or the commit it is pinned to). A
// third-party action with no stand-in fails the test; local (./) and
// ferry's own (ferry-ci/ferry) actions are left to the caller.
func StandIns(t testing.TB, workflow string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(workflow)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(RepoRoot(), "internal", "actions", "acttest", "actions")
	out := map[string]string{}
	var missing []string
	for _, m := range usesLine.FindAllStringSubmatch(string(b), -1) {
		uses := m[1]
		if strings.HasPrefix(uses, "./") || strings.HasPrefix(uses, "docker://") || strings.HasPrefix(uses, "ferry-ci/ferry") {
			continue
		}
		name, ref, ok := strings.Cut(uses, "@")
		if !ok {
			t.Fatalf("acttest: %s: uses %s names no ref", workflow, uses)
		}
		folder, ok := standIns[name]
		if !ok {
			missing = append(missing, uses)
			continue
		}
		out[name+"@"+ref] = filepath.Join(dir, folder)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("acttest: %s: no stand-in for %s", workflow, strings.Join(missing, ", "))
	}
	if len(out) == 0 {
		t.Fatalf("acttest: %s: no uses: lines", workflow)
	}
	return out
}
