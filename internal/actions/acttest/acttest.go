// Package acttest runs workflows in a real Actions runner for ferry's tests:
// nektos/act driving rootful podman through its Docker-compatible API on a
// unix socket (hack/act.sh), with ferry's action image loaded locally and
// the GitHub actions ferry's workflows use served from folders, since no
// registry and no github.com can be reached here.
package acttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Runner is a started runner: podman's API service and the images act
// runs (the job image and ferry's action image).
type Runner struct {
	// FerryImage is ferry's action image in the runner's store
	// (localhost/ferry-action:TAG).
	FerryImage string
	// JobImage is what runs-on: ubuntu-latest runs in.
	JobImage string

	state string // hack/act.sh's STATE folder
	act   string
	env   []string // DOCKER_HOST and podman's configuration
	sock  string   // podman's API socket
	graph string   // podman's image store
	pid   int      // podman's service

	mu        sync.Mutex
	workflows map[string]*sync.Mutex // by workflow file name
}

// lockWorkflow holds the lock of a workflow file name until the returned
// function is called.
func (r *Runner) lockWorkflow(name string) func() {
	r.mu.Lock()
	if r.workflows == nil {
		r.workflows = map[string]*sync.Mutex{}
	}
	l := r.workflows[name]
	if l == nil {
		l = &sync.Mutex{}
		r.workflows[name] = l
	}
	r.mu.Unlock()
	l.Lock()
	return l.Unlock
}

var (
	sharedMu  sync.Mutex
	shared    *Runner
	sharedErr error
)

// ErrUnavailable is returned (wrapped) by Start when this machine cannot
// run the runner: not root (podman runs rootful).
var ErrUnavailable = errors.New("act runner unavailable")

// RepoRoot is ferry's checkout: the folder holding hack/act.sh.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Start brings the shared runner up unless it runs already (hack/act.sh
// up: installs what is missing, starts podman's service, makes the job
// image once and loads ferry's image, built from this checkout).
func Start(ctx context.Context) (*Runner, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil || sharedErr != nil {
		return shared, sharedErr
	}
	shared, sharedErr = start(ctx)
	return shared, sharedErr
}

// current returns the shared runner, nil when none was started.
func current() *Runner {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return shared
}

// Stop stops the shared runner, if one was started (hack/act.sh down).
func Stop() error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var err error
	if shared != nil {
		err = shared.stop()
	}
	shared, sharedErr = nil, nil
	return err
}

// Require returns the shared runner, starting it on first use (as root,
// hack/act.sh installs podman and act when they are missing). Not root,
// the test is skipped, or fails when CI=true.
func Require(t testing.TB) *Runner {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the runner tests start podman and containers")
	}
	r, err := Start(context.Background())
	switch {
	case errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true":
		t.Skipf("acttest: %v", err)
	case err != nil:
		t.Fatalf("acttest: %v", err)
	}
	return r
}

func start(ctx context.Context) (*Runner, error) {
	if os.Getuid() != 0 {
		return nil, fmt.Errorf("%w: rootful podman needs root", ErrUnavailable)
	}
	state, err := os.MkdirTemp("", "ferry-act-")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(RepoRoot(), "hack", "act.sh")
	cmd := exec.CommandContext(ctx, "bash", script, "up", state)
	cmd.Dir = RepoRoot()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	if err := cmd.Run(); err != nil {
		down(state)
		return nil, fmt.Errorf("hack/act.sh up: %v\n%s", err, out.String())
	}
	vars, err := readEnv(filepath.Join(state, "env"))
	if err != nil {
		down(state)
		return nil, err
	}
	r := &Runner{
		FerryImage: vars["FERRY_IMAGE"],
		JobImage:   vars["JOB_IMAGE"],
		state:      state,
		act:        vars["ACT"],
	}
	fmt.Sscan(vars["PODMAN_PID"], &r.pid)
	r.sock = strings.TrimPrefix(vars["DOCKER_HOST"], "unix://")
	for _, k := range []string{"DOCKER_HOST", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF"} {
		r.env = append(r.env, k+"="+vars[k])
	}
	r.graph, err = graphRoot(vars["CONTAINERS_STORAGE_CONF"])
	if err != nil {
		r.stop()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "acttest: runner up in %v (%s)\n", time.Since(begin).Round(time.Second), strings.TrimSpace(lastLine(out.String())))
	return r, nil
}

func (r *Runner) stop() error {
	return down(r.state)
}

func down(state string) error {
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "hack", "act.sh"), "down", state)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/act.sh down: %v\n%s", err, out)
	}
	return nil
}

// State is the folder of the runner's own files (socket, configuration,
// podman's run folder and image store), removed by Stop.
func (r *Runner) State() string { return r.state }

// Graph is podman's image store (under State): containers' root file
// systems and the job's volumes.
func (r *Runner) Graph() string { return r.graph }

// PID is podman's API service.
func (r *Runner) PID() int { return r.pid }

// ImageDigests returns the repository digests (name@sha256:...) of the
// image ref in the runner's store, asked of podman's Docker-compatible
// API as act asks it; nil when the store has no such image.
func (r *Runner) ImageDigests(ctx context.Context, ref string) ([]string, error) {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", r.sock)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/v1.41/images/"+ref+"/json", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, nil
	case http.StatusOK:
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("podman: inspecting %s: %s: %s", ref, resp.Status, bytes.TrimSpace(b))
	}
	var img struct{ RepoDigests []string }
	if err := json.NewDecoder(resp.Body).Decode(&img); err != nil {
		return nil, fmt.Errorf("podman: inspecting %s: %w", ref, err)
	}
	if img.RepoDigests == nil {
		img.RepoDigests = []string{}
	}
	return img.RepoDigests, nil
}

func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	for _, k := range []string{"ACT", "DOCKER_HOST", "FERRY_IMAGE", "JOB_IMAGE", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF"} {
		if vars[k] == "" {
			return nil, fmt.Errorf("%s: no %s", path, k)
		}
	}
	return vars, nil
}

func graphRoot(conf string) (string, error) {
	b, err := os.ReadFile(conf)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "graphroot = "); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no graphroot", conf)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Job is one act run: an event replayed through a workflow of a checkout.
type Job struct {
	// Dir is the checkout act runs in: a Git repository whose origin is
	// the forge (act takes GITHUB_REPOSITORY from it and GITHUB_SHA from
	// its HEAD).
	Dir string
	// Workflow is the workflow file, relative to Dir.
	Workflow string
	// Event is the event's name and Payload its JSON body.
	Event   string
	Payload any
	// ServerHost is the forge's host:port, as act's --github-instance:
	// GITHUB_REPOSITORY is read from an origin on that host.
	ServerHost string
	// Env is given to every step (act's --env): GITHUB_SERVER_URL,
	// GITHUB_API_URL, and the variables of the runner being stood in for.
	Env map[string]string
	// Secrets are the workflow's secrets, GITHUB_TOKEN among them.
	Secrets map[string]string
	// Actions serves uses: owner/repo@ref from a folder (act's
	// --local-repository), as "owner/repo@ref" -> folder.
	Actions map[string]string
	// Vars are the workflow's configuration variables (the vars context).
	Vars map[string]string
	// ContainerOptions are docker run options for the job's containers
	// (act's --container-options): volumes (-v HOST:CONTAINER[:ro]) that
	// bring the host's tools into the job, see HostGo.
	ContainerOptions string
	// Timeout bounds the run (default 10 minutes).
	Timeout time.Duration
	// ShowSecrets turns act's masking off (--insecure-secrets): the log
	// is what the steps printed, the values of Secrets included, so a
	// test can see whether a step wrote a secret that a runner's masking
	// would hide. The values of ::add-mask:: commands are still not
	// printed (act prints "***" for the command itself).
	ShowSecrets bool
	// HostMode runs the jobs on this machine itself instead of in the job
	// image (act's -P ubuntu-latest=-self-hosted), as Gitea act_runner's
	// host executor and self-hosted runners without a container runtime
	// run them. Container actions cannot run there.
	HostMode bool
}

// Result is what a run left behind.
type Result struct {
	// Log is act's output: every step's lines, as a runner's job log.
	Log string
	// Summaries are the step summaries the steps wrote, in order, as act
	// collects them after each step (and prints them in its log).
	Summaries []string
	// Err is act's exit error: nil when every job succeeded.
	Err error
}

// Run runs the job with act and returns its log. It fails the test only
// when act could not be started; a failed job is Result.Err.
func (r *Runner) Run(t testing.TB, job Job) Result {
	t.Helper()
	tmp := t.TempDir()
	event := filepath.Join(tmp, "event.json")
	b, err := json.Marshal(job.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(event, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Secrets through a file, never argv (the process table is public).
	secrets := filepath.Join(tmp, "secrets.env")
	if err := os.WriteFile(secrets, []byte(dotenv(job.Secrets)), 0o600); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(tmp, "env.env")
	if err := os.WriteFile(envFile, []byte(dotenv(job.Env)), 0o600); err != nil {
		t.Fatal(err)
	}
	varFile := filepath.Join(tmp, "vars.env")
	if err := os.WriteFile(varFile, []byte(dotenv(job.Vars)), 0o600); err != nil {
		t.Fatal(err)
	}
	platform := r.JobImage
	if job.HostMode {
		platform = "-self-hosted"
	}
	args := []string{
		job.Event,
		"-W", job.Workflow,
		"-e", event,
		"-P", "ubuntu-latest=" + platform,
		"--pull=false",
		"--action-offline-mode",
		"--no-cache-server",
		"--container-daemon-socket", "-",
		"--no-skip-checkout",
		"--secret-file", secrets,
		"--env-file", envFile,
		"--var-file", varFile,
		"--rm",
	}
	if job.ServerHost != "" {
		args = append(args, "--github-instance", job.ServerHost)
	}
	if job.ShowSecrets {
		args = append(args, "--insecure-secrets")
	}
	if job.ContainerOptions != "" {
		args = append(args, "--container-options", job.ContainerOptions)
	}
	refs := make([]string, 0, len(job.Actions))
	for ref := range job.Actions {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		args = append(args, "--local-repository", ref+"="+job.Actions[ref])
	}
	// act names a job's container and volumes after the workflow's and
	// the job's names alone: two runs of one workflow at once would
	// share them. Runs of the same workflow file wait for each other.
	unlock := r.lockWorkflow(filepath.Base(job.Workflow))
	defer unlock()
	timeout := job.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.act, args...)
	cmd.Dir = job.Dir
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"), "TMPDIR="+tmp)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log

	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("acttest: starting act: %v", err)
	}
	stopWatch := r.watchListeners(cmd.Process.Pid)
	runErr := cmd.Wait()
	for _, l := range stopWatch() {
		t.Errorf("acttest: %s listened beyond 127.0.0.1 during the run", l)
	}
	t.Logf("acttest: act %s %s: %v in %v", job.Event, job.Workflow, errString(runErr), time.Since(begin).Round(100*time.Millisecond))
	if dir := os.Getenv("FERRY_ACT_LOGS"); dir != "" {
		// Keep the job's log to read after the test: FERRY_ACT_LOGS=folder.
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + job.Event + "-" + time.Now().Format("150405.000") + ".log"
		if err := os.WriteFile(filepath.Join(dir, name), log.Bytes(), 0o600); err != nil {
			t.Logf("acttest: keeping the log: %v", err)
		}
	}
	return Result{Log: log.String(), Summaries: summaries(log.String()), Err: runErr}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func dotenv(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		// act reads these files with godotenv: a double-quoted value
		// takes \n escapes, so a multi-line secret (a kubeconfig) fits.
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "$", `\$`).Replace(m[k])
		fmt.Fprintf(&b, "%s=\"%s\"\n", k, v)
	}
	return b.String()
}

// watchListeners samples, until the returned function is called, the TCP
// listeners that are not on a loopback address and belong to the run: act
// (pid), podman's service, or a process of the runner's folders or
// containers. It returns what it saw, once each.
func (r *Runner) watchListeners(pid int) func() []string {
	done := make(chan struct{})
	seen := map[string]bool{}
	var found []string
	sample := func() {
		ls, err := Listening()
		if err != nil {
			return
		}
		var public []Listener
		for _, l := range ls {
			if !l.Addr.IsLoopback() {
				public = append(public, l)
			}
		}
		if len(public) == 0 {
			return
		}
		ours := map[int]string{pid: "act", r.pid: "podman's service"}
		for _, p := range ProcessesUsing(r.state, r.graph) {
			ours[p.PID] = p.Cmdline
		}
		owners := SocketOwners()
		for _, l := range public {
			for _, owner := range owners[l.Inode] {
				if what, ok := ours[owner]; ok {
					key := l.String() + " " + what
					if !seen[key] {
						seen[key] = true
						found = append(found, fmt.Sprintf("%s (pid %d, %s)", l, owner, what))
					}
				}
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() []string {
		close(done)
		wg.Wait()
		return found
	}
}

// StepLines returns the lines a job's steps printed (act's "[wf/job]   | "
// lines), without act's prefix.
func StepLines(log string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "|"); ok && strings.HasPrefix(sc.Text(), "[") {
			lines = append(lines, strings.TrimPrefix(rest, " "))
		}
	}
	return lines
}

// actLine is the start of every line act prints for a job: "[workflow/job] ".
var actLine = regexp.MustCompile(`^\[[^\]]+/[^\]]+\] `)

// summaries returns the step summaries act printed: "⚙  Summary - " and
// the summary's text, whose lines after the first have no prefix, up to
// act's next line.
func summaries(log string) []string {
	var out []string
	var cur *strings.Builder
	for _, line := range strings.Split(log, "\n") {
		if actLine.MatchString(line) {
			if cur != nil {
				out = append(out, strings.TrimRight(cur.String(), "\n"))
				cur = nil
			}
			if _, rest, ok := strings.Cut(line, "\u2699  Summary - "); ok {
				cur = &strings.Builder{}
				cur.WriteString(rest + "\n")
			}
			continue
		}
		if cur != nil {
			cur.WriteString(line + "\n")
		}
	}
	if cur != nil {
		out = append(out, strings.TrimRight(cur.String(), "\n"))
	}
	return out
}
