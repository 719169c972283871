package acttest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
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

// setupRelease is a binaries-only release for the runner's platform,
// made by the release tool (cmd/ferry-release): the archive, the
// checksums file and, in Action, the release commit's setup/ with
// release.env and checksums.txt (and, signed, the signature bundle and
// cosign.pub).
type setupRelease struct {
	Version string
	Dist    string // what a release attaches: served as its download URL
	Action  string // dist/action: the action files of the release commit
	Archive string // the runner's archive, ferry_<V>_linux_<arch>.tar.gz
	Signed  bool
}

// makeSetupRelease runs `ferry-release --no-images --platforms
// linux/<arch> --download-url downloadURL` on a snapshot of this checkout
// (its work tree, uncommitted changes included, committed in a copy and
// tagged version: the release tool builds commits only), signed with a
// key made here when cosign is not empty, else --unsigned.
func makeSetupRelease(t *testing.T, version, downloadURL, cosign string) setupRelease {
	t.Helper()
	src := snapshotCheckout(t, version)
	dist := filepath.Join(t.TempDir(), "dist")
	args := []string{"run", "./cmd/ferry-release", "--root", src, "--dist", dist, "--no-images",
		"--platforms", "linux/" + runtime.GOARCH, "--download-url", downloadURL}
	env := os.Environ()
	if cosign == "" {
		args = append(args, "--unsigned")
	} else {
		keys := t.TempDir()
		cmd := exec.Command(cosign, "generate-key-pair")
		cmd.Dir = keys
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=setup-test")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
		args = append(args, "--cosign", cosign)
		env = append(env, "COSIGN_KEY="+filepath.Join(keys, "cosign.key"), "COSIGN_PASSWORD=setup-test")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot()
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ferry-release %s: %v\n%s", strings.Join(args[2:], " "), err, out)
	}
	rel := setupRelease{
		Version: version,
		Dist:    dist,
		Action:  filepath.Join(dist, "action"),
		Archive: fmt.Sprintf("ferry_%s_linux_%s.tar.gz", version, runtime.GOARCH),
		Signed:  cosign != "",
	}
	for _, f := range []string{rel.Archive, "action/setup/release.env", "action/setup/checksums.txt", "action/setup/install.sh"} {
		if _, err := os.Stat(filepath.Join(dist, f)); err != nil {
			t.Fatalf("the release lacks %s: %v", f, err)
		}
	}
	return rel
}

// snapshotCheckout copies the files of this checkout's work tree (tracked
// and untracked, not ignored) into a new repository, commits them and tags
// the commit.
func snapshotCheckout(t *testing.T, tag string) string {
	t.Helper()
	root := RepoRoot()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "ferry")
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		info, err := os.Lstat(filepath.Join(root, rel))
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "snapshot of the work tree"},
		{"tag", tag},
	} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=ferry test", "-c", "user.email=test@ferry.invalid"}, args...)...)
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dst
}

// readTarMember returns one file of a .tar.gz archive.
func readTarMember(t *testing.T, archive, name string) []byte {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s: %v", archive, name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
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
// from the action files of a release made by cmd/ferry-release,
// downloading from a release server on 127.0.0.1: the binary lands on
// PATH (ferry version prints the release's version), outputs version and
// path, the tool cache is reused and a corrupted cache entry replaced. A
// tampered archive, a version the action has no checksum for, and the
// main branch's setup/ (no release) each fail the job with one clear
// error, before anything is on PATH. Then the action runs with act's host
// executor (-self-hosted), as Gitea act_runner's host mode runs it, and
// there with cosign on PATH: the release's key signature verifies, and a
// forged checksums file (naming the tampered archive) fails before any
// download.
func TestSetupAction(t *testing.T) {
	t.Parallel()
	r := Require(t)
	srv := newReleaseServer(t)
	// Signed with a key when cosign is built (the signature subtest needs
	// it; in CI it must be).
	var cosign string
	if dir, err := testbin.Dir(); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "cosign")); err == nil {
			cosign = filepath.Join(dir, "cosign")
		}
	}
	rel := makeSetupRelease(t, setupVersion, srv.base, cosign)
	// The tampered release: the same archive name, other content (the
	// release's README changed), as a compromised mirror would serve.
	tampered := filepath.Join(rel.Dist, "tampered", rel.Archive)
	writeTarGz(t, tampered, map[string][]byte{
		"ferry":     readTarMember(t, filepath.Join(rel.Dist, rel.Archive), "ferry"),
		"README.md": []byte("nothing to see\n"),
	})
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
			// Four jobs of about twenty container steps: a hang guard,
			// not a speed bound; the other runner tests share the cores.
			Timeout: 20 * time.Minute,
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

	// The key-signed release, verified by cosign on the runner's PATH
	// (host mode: the job image has no cosign), and a forged one: its
	// checksums.txt names the tampered archive, its signature is the
	// release's.
	t.Run("signature", func(t *testing.T) {
		cosign := testbin.Tool(t, "cosign", "tools")
		if !rel.Signed {
			t.Fatal("the release was made unsigned")
		}
		for _, f := range []string{"checksums.txt.sigstore.json", "cosign.pub"} {
			if _, err := os.Stat(filepath.Join(rel.Action, "setup", f)); err != nil {
				t.Fatalf("the signed release's setup/ lacks %s: %v", f, err)
			}
		}
		forged := filepath.Join(t.TempDir(), "forged")
		if err := os.CopyFS(forged, os.DirFS(rel.Action)); err != nil {
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
			Actions: map[string]string{"ferry-ci/ferry@v1": rel.Action, "ferry-ci/ferry@forged": forged},
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

// toolCacheArch is the tool cache's name of this machine's architecture.
func toolCacheArch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}
