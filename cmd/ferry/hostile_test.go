package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// The hostile-input corpus: a pull request's own files, and misuse of the
// command line, run through the built binary as a runner would run it.
// Every case asserts the exit status, that the error names the file,
// target or object, that no program was started (git, sh and friends on
// PATH are traps), that nothing connected to a listener every remote
// location points at, that nothing was written outside the folders the
// case gives ferry (and no temp file was left), and that the decrypted
// value appears in no output stream or file in any of its encodings.

// maxExhaustRSSKiB bounds the peak resident set of a run on an input
// built to exhaust memory (an alias bomb, a 200 MB file): 1 GiB.
const maxExhaustRSSKiB = 1 << 20

// hostileCanary is the plaintext of the corpus repos' SOPS Secret: the
// characters encoders change (& < > " \ tab) around a unique word.
const hostileCanary = "pw&<>\"\\\tq-hostile-canary-5e1f"

// hostileCase is one input. Files are written into the case's repo after
// the base repo; "{{URL}}" becomes the trap listener's address and
// "{{CASE}}" the case's folder (outside the repo).
type hostileCase struct {
	name  string
	class string // which class of issue 12 it belongs to, or "earlier"
	files map[string]string
	// head, when set, makes the case a pull request: the repo (with
	// files) is committed as the base, then head is written over it and
	// committed, and the default command is a diff of the two.
	head  map[string]string
	setup func(t *testing.T, c *hostileRun)
	args  []string // default: render --repo REPO
	env   map[string]string
	want  []string // substrings of stderr
	// wantOut are substrings of stdout: a diff's or drift's report, which
	// names a target that fails to render (and then exits 2).
	wantOut []string
	// succeeds marks an input ferry handles (exit 0); every other case
	// must fail with exit 2.
	succeeds bool
	// forbid are strings no line of either stream may start with.
	forbid []string
}

// hostileRun is the folder layout of one case, and the variables its
// setup adds to ferry's environment (the address of a server it
// started): the repo is CASE/ws/repo, so the workspace (the repository's
// parent) is CASE/ws and CASE/outside.txt, a canary, lies outside it.
type hostileRun struct {
	dir, ws, repo, out, tmp, home, bin string
	key                                secretstest.Key
	env                                map[string]string
}

// outsideCanary is the content of a file outside the workspace, and
// runnerToken the runner's token in every case's environment
// (INPUT_TOKEN, ACTIONS_RUNTIME_TOKEN): neither may appear in any output,
// file or request, in any encoding.
const (
	outsideCanary = "outside-canary-9c2b-never-read"
	runnerToken   = "ghs_runnerTokenCanary7d41e0"
)

var (
	hostileBinOnce sync.Once
	hostileBin     string
	hostileBinErr  error
)

// builtFerry builds the ferry binary once for the tests that run it as a
// process.
func builtFerry(t *testing.T) string {
	t.Helper()
	hostileBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ferry-bin-")
		if err != nil {
			hostileBinErr = err
			return
		}
		hostileBin = filepath.Join(dir, "ferry")
		cmd := exec.Command("go", "build", "-o", hostileBin, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			hostileBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if hostileBinErr != nil {
		t.Fatal(hostileBinErr)
	}
	return hostileBin
}

// trap is a TCP listener that every remote location of the corpus names;
// it must never be connected to.
type trap struct {
	ln    net.Listener
	count atomic.Int64
}

func newTrap(t *testing.T) *trap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.count.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

// traps are the programs a render must never start.
var traps = []string{"git", "sh", "bash", "kustomize", "helm", "sops", "curl", "wget", "ssh", "kubectl"}

func newHostileRun(t *testing.T) *hostileRun {
	dir := t.TempDir()
	c := &hostileRun{dir: dir, ws: filepath.Join(dir, "ws"), repo: filepath.Join(dir, "ws", "repo"), out: filepath.Join(dir, "out"),
		tmp: filepath.Join(dir, "tmp"), home: filepath.Join(dir, "home"), bin: filepath.Join(dir, "bin"), key: secretstest.NewKey(t)}
	for _, d := range []string{c.repo, c.tmp, c.home, c.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "outside.txt"), []byte(outsideCanary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range traps {
		script := "#!/bin/sh\necho \"$0 $*\" >> " + strconv.Quote(filepath.Join(dir, "ran")) + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(c.bin, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.write(t, "ferry.yaml", "targets:\n  - name: app\n    path: app\n")
	c.write(t, "app/kustomization.yaml", "resources: [deployment.yaml, secret.yaml]\n")
	c.write(t, "app/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n")
	c.encrypt(t, "app/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: "+strconv.Quote(hostileCanary)+"\n", "^(data|stringData)$")
	return c
}

func (c *hostileRun) write(t *testing.T, rel, content string) {
	t.Helper()
	testtree.Write(t, c.repo, map[string]string{rel: content})
}

func (c *hostileRun) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.repo, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (c *hostileRun) encrypt(t *testing.T, rel, plaintext, regex string) {
	t.Helper()
	c.write(t, rel, string(secretstest.Encrypt(t, rel, []byte(plaintext), regex, c.key.Recipient)))
}

// canaryForms are the encodings in which the decrypted value could leak.
func canaryForms(v string) map[string]string {
	forms := map[string]string{
		"raw":       v,
		"base64":    base64.StdEncoding.EncodeToString([]byte(v)),
		"go-quoted": strings.Trim(strconv.Quote(v), `"`),
	}
	j, _ := json.Marshal(v)
	forms["json"] = strings.Trim(string(j), `"`)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	forms["json-no-html"] = strings.Trim(strings.TrimSpace(b.String()), `"`)
	// The unique word alone: a form no encoder above predicted.
	forms["word"] = "hostile-canary-5e1f"
	return forms
}

// withoutMaskCommands drops the ::add-mask:: lines with which ferry
// registers its secrets with the runner (which consumes them; they are
// not in its log): the one place a secret may be written.
func withoutMaskCommands(out string) string {
	lines := strings.Split(out, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "::add-mask::") })
	return strings.Join(lines, "\n")
}

// secretForms are the encodings in which a value other than the
// decrypted canary could leak: raw, base64 and its quoted forms.
func secretForms(v string) map[string]string {
	forms := map[string]string{"raw": v, "base64": base64.StdEncoding.EncodeToString([]byte(v))}
	j, _ := json.Marshal(v)
	forms["json"] = strings.Trim(string(j), `"`)
	return forms
}

func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[rel] = fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestHostileInputs(t *testing.T) {
	bin := builtFerry(t)
	tr := newTrap(t)
	host := tr.ln.Addr().String()
	url := "http://" + host
	cases := hostileCases()
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d cases, want at least 60", len(cases))
	}
	perClass := map[string]int{}
	for _, hc := range cases {
		perClass[hc.class]++
	}
	for _, class := range []string{"remote", "mask", "output", "exhaust", "sops", "commands", "ferry.yaml", "earlier", "cli", "reads", "egress", "notify", "creds", "identity", "budget"} {
		if perClass[class] < 2 {
			t.Errorf("class %s has %d cases, want more than one", class, perClass[class])
		}
	}
	for _, hc := range cases {
		t.Run(hc.class+"/"+hc.name, func(t *testing.T) {
			t.Parallel()
			c := newHostileRun(t)
			expand := strings.NewReplacer("{{URL}}", url, "{{HOST}}", host, "{{CASE}}", c.dir).Replace
			for rel, content := range hc.files {
				c.write(t, rel, expand(content))
			}
			if hc.head != nil {
				repo := gittest.Init(t, c.repo)
				repo.Commit(t, "base")
				for rel, content := range hc.head {
					c.write(t, rel, expand(content))
				}
				repo.Commit(t, "head")
			}
			if hc.setup != nil {
				hc.setup(t, c)
			}
			args := slices.Clone(hc.args)
			if args == nil && hc.head != nil {
				args = []string{"diff", "--repo", "{{REPO}}", "--base", "HEAD~1", "--format", "json"}
			}
			if args == nil {
				args = []string{"render", "--repo", "{{REPO}}"}
			}
			for i, a := range args {
				a = strings.ReplaceAll(a, "{{REPO}}", c.repo)
				a = strings.ReplaceAll(a, "{{OUT}}", c.out)
				a = strings.ReplaceAll(a, "{{CASE}}", c.dir)
				args[i] = strings.ReplaceAll(a, "{{URL}}", url)
			}
			before := snapshot(t, c.dir)
			env := []string{"PATH=" + c.bin, "HOME=" + c.home, "TMPDIR=" + c.tmp, "SOPS_AGE_KEY=" + c.key.Identity,
				"INPUT_TOKEN=" + runnerToken, "ACTIONS_RUNTIME_TOKEN=" + runnerToken}
			for k, v := range hc.env {
				v = strings.ReplaceAll(strings.ReplaceAll(v, "{{CASE}}", c.dir), "{{REPO}}", c.repo)
				env = append(env, k+"="+strings.ReplaceAll(v, "{{OTHERKEY}}", secretstest.NewKey(t).Identity))
			}
			for k, v := range c.env {
				env = append(env, k+"="+v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Inputs built to exhaust the runner fail within a bounded
			// peak resident set, measured by a fresh parent (peakRSSVar).
			cmd, peak := measuredCommand(ctx, t, bin, args...)
			cmd.Dir = c.dir
			cmd.Env = append(env, peakRSSVar+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if kib := peak(); (hc.class == "exhaust" || hc.class == "budget") && kib > maxExhaustRSSKiB {
				t.Errorf("peak RSS %d MiB, want under %d MiB", kib>>10, maxExhaustRSSKiB>>10)
			}
			want := exitError
			if hc.succeeds {
				want = exitOK
			}
			if code != want {
				t.Errorf("exit %d, want %d\nstderr: %s", code, want, stderr.String())
			}
			for _, w := range hc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, w := range hc.wantOut {
				if w = expand(w); !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			// A diff or drift prints its report, failed targets included.
			if want == exitError && stdout.Len() > 0 && len(hc.wantOut) == 0 && !strings.HasPrefix(args[0], "-") && args[0] != "diff" && hc.class != "commands" {
				t.Errorf("a failed run printed on stdout:\n%s", stdout.String())
			}
			for _, stream := range []struct{ name, text string }{{"stdout", stdout.String()}, {"stderr", stderr.String()}} {
				for _, line := range strings.FieldsFunc(stream.text, func(r rune) bool { return r == '\n' || r == '\r' }) {
					for _, f := range hc.forbid {
						if strings.HasPrefix(strings.TrimSpace(line), f) {
							t.Errorf("%s has a line that starts a forged workflow command: %q", stream.name, line)
						}
					}
				}
			}
			if ran, err := os.ReadFile(filepath.Join(c.dir, "ran")); err == nil {
				t.Errorf("ferry started a program:\n%s", ran)
			}
			if n := tr.count.Load(); n > 0 {
				t.Errorf("something connected to the trap listener (%d connections so far, in this or a parallel case)", n)
			}
			if entries, _ := os.ReadDir(c.tmp); len(entries) > 0 {
				t.Errorf("left %d entries in TMPDIR: %v", len(entries), entries[0].Name())
			}
			after := snapshot(t, c.dir)
			for rel := range after {
				if _, ok := before[rel]; ok {
					continue
				}
				if strings.HasPrefix(rel, "out"+string(filepath.Separator)) || rel == "out" {
					continue // the folder the case hands render -o
				}
				if cache := filepath.Join("home", ".cache", "ferry"); rel == cache || strings.HasPrefix(rel, cache+string(filepath.Separator)) ||
					rel == filepath.Join("home", ".cache") {
					continue // the cache folder (README), its files checked for secrets below
				}
				t.Errorf("ferry wrote %s, outside the folders it was given", rel)
			}
			forms := canaryForms(hostileCanary)
			for what, v := range map[string]string{"file outside the workspace": outsideCanary, "runner token": runnerToken} {
				for name, f := range secretForms(v) {
					forms[what+", "+name] = f
				}
			}
			check := func(where, text string) {
				for name, f := range forms {
					if strings.Contains(text, f) {
						t.Errorf("a secret leaked into %s (%s)", where, name)
					}
				}
			}
			check("stdout", withoutMaskCommands(stdout.String()))
			check("stderr", stderr.String())
			for rel := range after {
				if _, ok := before[rel]; ok {
					continue
				}
				if b, err := os.ReadFile(filepath.Join(c.dir, rel)); err == nil {
					check(rel, string(b))
				}
			}
		})
	}
}

// waitCatches waits until process pid catches sig (Linux: the SigCgt
// mask of /proc/PID/status), for up to 30 s: a signal sent before the
// Go runtime installed its handler kills the process instead.
func waitCatches(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatalf("reading the signal mask of ferry: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&(1<<(uint(sig)-1)) != 0 {
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("ferry did not catch %v within 30 s", sig)
}

// TestSignalDuringRender: SIGTERM while a large repository renders stops
// ferry with exit 2 soon after, and leaves no temp file.
func TestSignalDuringRender(t *testing.T) {
	bin := builtFerry(t)
	c := newHostileRun(t)
	var ks strings.Builder
	ks.WriteString("resources:\n")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&ks, "  - app%d\n", i)
		c.write(t, fmt.Sprintf("big/app%d/kustomization.yaml", i), "resources: [cm.yaml]\nnamePrefix: p-\ncommonLabels: {app: a}\n")
		c.write(t, fmt.Sprintf("big/app%d/cm.yaml", i), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d}\ndata: {k: v}\n", i))
	}
	c.write(t, "big/kustomization.yaml", ks.String())
	var targets strings.Builder
	targets.WriteString("targets:\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&targets, "  - name: big%d\n    path: big\n    targetNamespace: ns%d\n", i, i)
	}
	c.write(t, "ferry.yaml", targets.String())
	cmd := exec.Command(bin, "render", "--repo", c.repo)
	cmd.Env = []string{"PATH=" + c.bin, "HOME=" + c.home, "TMPDIR=" + c.tmp, "SOPS_AGE_KEY=" + c.key.Identity}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Signal once ferry is rendering: once it catches SIGTERM (a loaded
	// machine can take longer than the sleep to start a 100 MB binary),
	// and after its first target at the earliest (no timing assert: the
	// bound below is a hang guard).
	waitCatches(t, cmd.Process.Pid, syscall.SIGTERM)
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-exited:
		t.Fatalf("ferry finished before the signal (%v); make the repo larger", err)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	var err error
	select {
	case err = <-exited:
		t.Logf("exited %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("ferry did not stop after SIGTERM")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError {
		t.Fatalf("exit %v after SIGTERM, want status %d\nstderr: %s", err, exitError, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped before finishing") {
		t.Errorf("stderr does not say the run was stopped:\n%s", stderr.String())
	}
	if stdout.Len() > 0 {
		t.Errorf("a stopped render printed %d bytes on stdout", stdout.Len())
	}
	if entries, _ := os.ReadDir(c.tmp); len(entries) > 0 {
		t.Errorf("left %d entries in TMPDIR", len(entries))
	}
}
