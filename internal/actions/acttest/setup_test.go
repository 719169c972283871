package acttest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/internal/testbin"
)

// setupRelease is a binaries-only release for the runner's platform, as
// the release tool writes it under dist/: the archive, the checksums file,
// and action/setup with the files the release commit adds to setup/.
type setupRelease struct {
	Version string
	Dist    string // what a release attaches: served as its download URL
	Action  string // dist/action: the action files of the release commit
	Archive string // the runner's archive, ferry_<V>_linux_<arch>.tar.gz
	Binary  string // the ferry binary the archive holds
}

// buildSetupRelease builds ferry for linux/<this machine's arch> stamped
// with version and writes a release of it into dir: what `ferry-release
// --no-images --platforms linux/<arch> --dist dir --download-url url`
// writes, without signing (the release tool's unsigned path: COSIGN_KEY
// unset). The action's setup/release.env names downloadURL.
func buildSetupRelease(t *testing.T, dir, version, downloadURL string) setupRelease {
	t.Helper()
	rel := setupRelease{
		Version: version,
		Dist:    filepath.Join(dir, "dist"),
		Action:  filepath.Join(dir, "dist", "action"),
		Archive: fmt.Sprintf("ferry_%s_linux_%s.tar.gz", version, runtime.GOARCH),
	}
	bin := filepath.Join(dir, "build", "ferry")
	rel.Binary = bin
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-s -w -X main.version="+version+" -X main.date="+time.Now().UTC().Format(time.RFC3339),
		"./cmd/ferry")
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ferry: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ferry, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	writeTarGz(t, filepath.Join(rel.Dist, rel.Archive), map[string][]byte{"ferry": ferry, "README.md": readme})
	sums := fmt.Sprintf("%s  %s\n", fileSHA256(t, filepath.Join(rel.Dist, rel.Archive)), rel.Archive)
	writeFile(t, filepath.Join(rel.Dist, "ferry_"+version+"_checksums.txt"), sums)

	copySetup(t, filepath.Join(rel.Action, "setup"))
	writeFile(t, filepath.Join(rel.Action, "setup", "release.env"), "FERRY_VERSION="+version+"\nFERRY_DOWNLOAD_URL="+downloadURL+"\n")
	writeFile(t, filepath.Join(rel.Action, "setup", "checksums.txt"), sums)
	return rel
}

// copySetup copies this checkout's setup/ folder to dst, as it is on the
// main branch.
func copySetup(t *testing.T, dst string) {
	t.Helper()
	src := filepath.Join(RepoRoot(), "setup")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		writeFile(t, filepath.Join(dst, rel), string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeTarGz(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"ferry", "README.md"} {
		b, ok := files[name]
		if !ok {
			continue
		}
		mode := int64(0o644)
		if name == "ferry" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// releaseServer serves a release's files on 127.0.0.1 as a release's
// download URL does, and records the paths asked for.
type releaseServer struct {
	*httptest.Server
	base  string // http://127.0.0.1:PORT, known before it starts
	mu    sync.Mutex
	paths []string
}

// newReleaseServer listens on 127.0.0.1 at once (so its URL can go into
// the release) and serves root once started.
func newReleaseServer(t *testing.T) *releaseServer {
	t.Helper()
	s := &releaseServer{}
	s.Server = httptest.NewUnstartedServer(nil)
	if host, _, _ := net.SplitHostPort(s.Listener.Addr().String()); host != "127.0.0.1" {
		t.Fatalf("the release server listens on %s, not 127.0.0.1", s.Listener.Addr())
	}
	s.base = "http://" + s.Listener.Addr().String()
	t.Cleanup(s.Close)
	return s
}

func (s *releaseServer) start(root string) {
	files := http.FileServer(http.Dir(root))
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		files.ServeHTTP(w, r)
	})
	s.Start()
}

func (s *releaseServer) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// setupCheckout is a Git repository holding one workflow, for act to run
// in.
func setupCheckout(t *testing.T, workflow string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	writeFile(t, filepath.Join(dir, ".github", "workflows", "setup.yaml"), workflow)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"remote", "add", "origin", "https://github.com/acme/tools.git"},
		{"add", "-A"},
		{"commit", "-q", "-m", "setup workflow"},
	} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=ferry test", "-c", "user.email=test@ferry.invalid"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// jobLines returns the lines act printed for one job of the run ("[workflow/job] ..."
// without the prefix), its steps' output and act's own.
func jobLines(log, job string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if !actLine.MatchString(line) {
			continue
		}
		prefix, rest, _ := strings.Cut(line, "] ")
		if _, name, ok := strings.Cut(prefix, "/"); ok && strings.TrimSpace(name) == job {
			out = append(out, rest)
		}
	}
	return out
}

// jobProbes returns the "probe NAME=VALUE" lines a job's steps printed.
func jobProbes(lines []string) map[string]string {
	out := map[string]string{}
	for _, line := range lines {
		_, rest, ok := strings.Cut(line, "| ")
		if !ok {
			continue
		}
		if rest, ok := strings.CutPrefix(rest, "probe "); ok {
			if k, v, ok := strings.Cut(rest, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

func hasLine(lines []string, sub string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, sub) })
}

// setupVersion is the version of the test's release: a pre-release that
// no real release is called.
const setupVersion = "v0.0.1-setup.test"

// TestSetupAction runs uses: ferry-ci/ferry/setup@v1 in the act runner
// from a release's action files, downloading from a release server on
// 127.0.0.1: the binary lands on PATH (ferry version prints the release's
// version), outputs version and path, the tool cache is reused and a
// corrupted cache entry replaced. A tampered archive, a version the
// action has no checksum for, and the main branch's setup/ (no release)
// each fail the job with one clear error, before anything is on PATH.
// Then the same action runs with act's host executor (-self-hosted), as
// Gitea act_runner's host mode runs it.
func TestSetupAction(t *testing.T) {
	t.Parallel()
	r := Require(t)
	srv := newReleaseServer(t)
	rel := buildSetupRelease(t, t.TempDir(), setupVersion, srv.base)
	// The tampered release: the same archive name, other content (the
	// release's README changed), as a compromised mirror would serve.
	tampered := filepath.Join(rel.Dist, "tampered", rel.Archive)
	ferryBytes, err := os.ReadFile(rel.Binary)
	if err != nil {
		t.Fatal(err)
	}
	writeTarGz(t, tampered, map[string][]byte{"ferry": ferryBytes, "README.md": []byte("nothing to see\n")})
	srv.start(rel.Dist)
	mainSetup := filepath.Join(t.TempDir(), "main")
	copySetup(t, filepath.Join(mainSetup, "setup"))

	// In host mode the tool cache is the host's, shared by the jobs.
	notOnPathHost := `      - name: probe (ferry's runner test)
        if: failure()
        run: |
          echo "probe OUTCOME=${{ steps.setup.outcome }}"
          echo "probe ON_PATH=$(command -v ferry || echo none)"
`

	t.Run("container", func(t *testing.T) {
		// The failing jobs run first, the tampered one emptying the tool
		// cache (a volume every job of the runner shares), then the good
		// job.
		notOnPath := `      - name: probe (ferry's runner test)
        if: failure()
        run: |
          echo "probe OUTCOME=${{ steps.setup.outcome }}"
          echo "probe ON_PATH=$(command -v ferry || echo none)"
          echo "probe CACHED=$(ls "$RUNNER_TOOL_CACHE/ferry" 2>/dev/null | tr '\n' ' ')"
`
		wf := `name: setup
on: workflow_dispatch
jobs:
  tampered:
    runs-on: ubuntu-latest
    steps:
      - run: rm -rf "$RUNNER_TOOL_CACHE/ferry"
      - id: setup
        uses: ferry-ci/ferry/setup@v1
        with:
          download-url: ` + srv.base + `/tampered
` + notOnPath + `
  unknown-version:
    needs: tampered
    if: always()
    runs-on: ubuntu-latest
    steps:
      - id: setup
        uses: ferry-ci/ferry/setup@v1
        with:
          version: v9.9.9
` + notOnPath + `
  main-branch:
    needs: tampered
    if: always()
    runs-on: ubuntu-latest
    steps:
      - id: setup
        uses: ferry-ci/ferry/setup@main
` + notOnPath + `
  good:
    needs: [tampered, unknown-version, main-branch]
    if: always()
    runs-on: ubuntu-latest
    steps:
      - id: setup
        uses: ferry-ci/ferry/setup@v1
      - run: ferry version
      - env:
          VERSION: ${{ steps.setup.outputs.version }}
          BIN: ${{ steps.setup.outputs.path }}
        run: |
          echo "probe VERSION=$VERSION"
          echo "probe BIN=$BIN"
          echo "probe WHICH=$(command -v ferry)"
      - id: again
        uses: ferry-ci/ferry/setup@v1
      - env:
          BIN: ${{ steps.setup.outputs.path }}
        run: printf 'x' >> "$BIN"
      - id: repaired
        uses: ferry-ci/ferry/setup@v1
      - run: echo "probe REPAIRED=$(ferry version)"
`
		dir := setupCheckout(t, wf)
		res := r.Run(t, Job{
			Dir: dir, Workflow: ".github/workflows/setup.yaml", Event: "workflow_dispatch",
			Payload: map[string]any{"ref": "refs/heads/main", "inputs": map[string]any{}},
			Actions: map[string]string{"ferry-ci/ferry@v1": rel.Action, "ferry-ci/ferry@main": mainSetup},
		})
		if res.Err == nil {
			t.Errorf("act succeeded; three of its jobs should have failed:\n%s", res.Log)
		}

		good := jobLines(res.Log, "good")
		if !hasLine(good, "Job succeeded") {
			t.Fatalf("job good did not succeed:\n%s", strings.Join(good, "\n"))
		}
		wantVersion := "ferry " + setupVersion + " linux/" + runtime.GOARCH + " "
		if !hasLine(good, "| "+wantVersion) {
			t.Errorf("ferry version did not print %q in job good:\n%s", wantVersion, strings.Join(good, "\n"))
		}
		p := jobProbes(good)
		wantBin := "/opt/hostedtoolcache/ferry/" + strings.TrimPrefix(setupVersion, "v") + "/" + toolCacheArch() + "/ferry"
		if p["VERSION"] != setupVersion || p["BIN"] != wantBin || p["WHICH"] != wantBin {
			t.Errorf("outputs version=%q path=%q, ferry on PATH at %q; want %s and %s", p["VERSION"], p["BIN"], p["WHICH"], setupVersion, wantBin)
		}
		if !hasLine(good, "reusing /opt/hostedtoolcache/ferry/") {
			t.Errorf("the second setup did not reuse the tool cache:\n%s", strings.Join(good, "\n"))
		}
		if !hasLine(good, "::warning::ferry setup: /opt/hostedtoolcache/ferry/") || !strings.HasPrefix(p["REPAIRED"], wantVersion) {
			t.Errorf("the corrupted cache entry was not replaced (REPAIRED=%q):\n%s", p["REPAIRED"], strings.Join(good, "\n"))
		}
		if got := slices.Index(srv.requested(), "/"+rel.Archive); got < 0 {
			t.Errorf("the release server saw no request for %s: %v", rel.Archive, srv.requested())
		}

		for job, want := range map[string]string{
			"tampered": "::error::ferry setup: " + rel.Archive + " from " + srv.base + "/tampered/" + rel.Archive +
				": sha256 mismatch: setup/checksums.txt expects " + fileSHA256(t, filepath.Join(rel.Dist, rel.Archive)) +
				", got " + fileSHA256(t, tampered),
			"unknown-version": "::error::ferry setup: setup/checksums.txt has no line for ferry_v9.9.9_linux_" + runtime.GOARCH +
				".tar.gz: this action pins release " + setupVersion + " and installs only that version",
			"main-branch": "::error::ferry setup: setup/release.env not found: the setup action works only at a release",
		} {
			lines := jobLines(res.Log, job)
			if !hasLine(lines, "Job failed") {
				t.Errorf("job %s did not fail:\n%s", job, strings.Join(lines, "\n"))
				continue
			}
			var errs []string
			for _, l := range lines {
				if strings.Contains(l, "::error::") {
					errs = append(errs, l)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], want) {
				t.Errorf("job %s: error lines %q, want one holding %q", job, errs, want)
			}
			p := jobProbes(lines)
			if p["OUTCOME"] != "failure" || p["ON_PATH"] != "none" || strings.TrimSpace(p["CACHED"]) != "" {
				t.Errorf("job %s after the failed setup: outcome %q, ferry on PATH at %q, tool cache holds %q; want failure, none and nothing",
					job, p["OUTCOME"], p["ON_PATH"], p["CACHED"])
			}
		}
		for _, path := range srv.requested() {
			if strings.Contains(path, "v9.9.9") {
				t.Errorf("the unknown version was downloaded (%s): the checksum lookup should fail first", path)
			}
		}
	})

	t.Run("host", func(t *testing.T) {
		wf := `name: setup
on: workflow_dispatch
jobs:
  host:
    runs-on: ubuntu-latest
    steps:
      - id: setup
        uses: ferry-ci/ferry/setup@v1
      - run: ferry version
      - env:
          BIN: ${{ steps.setup.outputs.path }}
        run: |
          echo "probe BIN=$BIN"
          echo "probe WHICH=$(command -v ferry)"
          echo "probe CACHE=$RUNNER_TOOL_CACHE"
`
		dir := setupCheckout(t, wf)
		res := r.Run(t, Job{
			Dir: dir, Workflow: ".github/workflows/setup.yaml", Event: "workflow_dispatch", HostMode: true,
			Payload: map[string]any{"ref": "refs/heads/main", "inputs": map[string]any{}},
			Actions: map[string]string{"ferry-ci/ferry@v1": rel.Action},
		})
		runOK(t, res)
		lines := jobLines(res.Log, "host")
		wantVersion := "ferry " + setupVersion + " linux/" + runtime.GOARCH + " "
		if !hasLine(lines, "| "+wantVersion) {
			t.Errorf("ferry version did not print %q:\n%s", wantVersion, strings.Join(lines, "\n"))
		}
		p := jobProbes(lines)
		want := filepath.Join(p["CACHE"], "ferry", strings.TrimPrefix(setupVersion, "v"), toolCacheArch(), "ferry")
		if p["CACHE"] == "" || p["BIN"] != want || p["WHICH"] != want {
			t.Errorf("host mode: output path %q, ferry on PATH at %q; want %s (the runner's tool cache %q)", p["BIN"], p["WHICH"], want, p["CACHE"])
		}
	})

	// A key-signed release, verified by cosign on the runner's PATH (host
	// mode: the job image has no cosign), and a forged one: its
	// checksums.txt names the tampered archive, its signature is the
	// release's.
	t.Run("signature", func(t *testing.T) {
		cosign := testbin.Tool(t, "cosign", "tools")
		signed := filepath.Join(t.TempDir(), "signed")
		signSetupRelease(t, cosign, rel.Action, signed)
		forged := filepath.Join(t.TempDir(), "forged")
		if err := os.CopyFS(forged, os.DirFS(signed)); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(forged, "setup", "checksums.txt"), fileSHA256(t, tampered)+"  "+rel.Archive+"\n")
		wf := `name: setup
on: workflow_dispatch
jobs:
  signed:
    runs-on: ubuntu-latest
    steps:
      - id: setup
        uses: ferry-ci/ferry/setup@v1
        with:
          verify-signature: true
      - run: ferry version
  forged:
    runs-on: ubuntu-latest
    steps:
      - id: setup
        uses: ferry-ci/ferry/setup@forged
        with:
          download-url: ` + srv.base + `/tampered
` + notOnPathHost + `
`
		dir := setupCheckout(t, wf)
		res := r.Run(t, Job{
			Dir: dir, Workflow: ".github/workflows/setup.yaml", Event: "workflow_dispatch", HostMode: true,
			Env:     map[string]string{"PATH": filepath.Dir(cosign) + string(os.PathListSeparator) + os.Getenv("PATH")},
			Payload: map[string]any{"ref": "refs/heads/main", "inputs": map[string]any{}},
			Actions: map[string]string{"ferry-ci/ferry@v1": signed, "ferry-ci/ferry@forged": forged},
		})
		if res.Err == nil {
			t.Errorf("act succeeded; job forged should have failed:\n%s", res.Log)
		}
		lines := jobLines(res.Log, "signed")
		if !hasLine(lines, "Job succeeded") || !hasLine(lines, "setup/checksums.txt: signature verified against setup/cosign.pub") ||
			!hasLine(lines, "| ferry "+setupVersion+" linux/") {
			t.Errorf("job signed: want the signature verified and ferry %s run:\n%s", setupVersion, strings.Join(lines, "\n"))
		}
		lines = jobLines(res.Log, "forged")
		want := "::error::ferry setup: setup/checksums.txt: its signature (setup/checksums.txt.sigstore.json) does not verify against setup/cosign.pub"
		if !hasLine(lines, "Job failed") || !hasLine(lines, want) {
			t.Errorf("job forged: want it failed with %q:\n%s", want, strings.Join(lines, "\n"))
		}
		if p := jobProbes(lines); p["ON_PATH"] != "none" || p["OUTCOME"] != "failure" {
			t.Errorf("job forged: setup outcome %q, ferry on PATH at %q; want failure and none", p["OUTCOME"], p["ON_PATH"])
		}
		if hasLine(lines, "downloading ") {
			t.Errorf("job forged downloaded the archive before the signature of its checksums was checked:\n%s", strings.Join(lines, "\n"))
		}
	})
}

// signSetupRelease copies a release's action files to dir and signs their
// setup/checksums.txt as a key-signed release does: a cosign key pair
// made here, the bundle in setup/checksums.txt.sigstore.json and the
// public key in setup/cosign.pub.
func signSetupRelease(t *testing.T, cosign, action, dir string) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(action)); err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	setup := filepath.Join(dir, "setup")
	for _, args := range [][]string{
		{"generate-key-pair"},
		{"sign-blob", "--yes", "--key", filepath.Join(keys, "cosign.key"), "--use-signing-config=false", "--tlog-upload=false",
			"--bundle", filepath.Join(setup, "checksums.txt.sigstore.json"), filepath.Join(setup, "checksums.txt")},
	} {
		cmd := exec.Command(cosign, args...)
		cmd.Dir = keys
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=setup-test")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cosign %s: %v\n%s", args[0], err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(keys, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(setup, "cosign.pub"), string(pub))
}

// toolCacheArch is the tool cache's name of this machine's architecture.
func toolCacheArch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}
