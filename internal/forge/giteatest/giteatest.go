// Package giteatest runs a real Gitea for tests: one server per test
// binary, started on first use from the binary hack/gitea.sh builds, bound
// to 127.0.0.1, with its data in a temporary folder removed by Stop.
//
// A package using it stops the server from its TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		giteatest.Stop()
//		os.Exit(code)
//	}
//
// and each test asks for it with Require(t), then creates its own users and
// repositories (unique names: the server is shared by the whole binary).
// The server answers list calls in pages of at most PageSize items, so
// clients that do not follow pagination fail here rather than in use.
package giteatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/ferry-ci/ferry/internal/testbin"
)

// PageSize is the largest page the test server answers a list call with
// (Gitea's [api] MAX_RESPONSE_ITEMS, 50 by default).
const PageSize = 10

// AdminUser is the login of the server's administrator.
const AdminUser = "ferry-admin"

// Password is the password of every user the server creates.
const Password = "ferry-test-password-1"

// Gitea is a running Gitea server.
type Gitea struct {
	// URL is the server's root URL with a trailing slash (ROOT_URL); the
	// API is under URL + "api/v1".
	URL string
	// AdminToken is an access token of AdminUser with every scope.
	AdminToken string
	// Startup is how long starting the server took.
	Startup time.Duration

	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the web process exited

	mu    sync.Mutex
	users map[string]string // login -> token
}

var (
	sharedMu  sync.Mutex
	shared    *Gitea
	sharedErr error
)

// ErrNoBinary is returned (wrapped) by Start when the gitea binary has not
// been built.
var ErrNoBinary = errors.New("gitea binary not found (build it with hack/gitea.sh)")

// Start starts the shared server unless it runs already, and returns it.
func Start(ctx context.Context) (*Gitea, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil || sharedErr != nil {
		return shared, sharedErr
	}
	shared, sharedErr = start(ctx, freePort)
	return shared, sharedErr
}

// Stop stops the shared server, if one was started, and removes its data.
func Stop() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.stop()
	}
	shared, sharedErr = nil, nil
}

// Require returns the shared server, starting it on first use. Without the
// gitea binary the test is skipped, or fails when CI=true.
func Require(t testing.TB) *Gitea {
	t.Helper()
	g, err := Start(context.Background())
	switch {
	case errors.Is(err, ErrNoBinary) && os.Getenv("CI") != "true":
		t.Skipf("giteatest: %v", err)
	case err != nil:
		t.Fatalf("giteatest: %v", err)
	}
	return g
}

// Binary returns the gitea binary and the module folder it serves its
// templates from: $FERRY_TESTBIN/gitea, else .cache/testbin/gitea in the
// repository holding the working directory.
func Binary() (bin, root string, err error) {
	dir, err := testbin.Dir()
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrNoBinary, err)
	}
	bin = filepath.Join(dir, "gitea")
	if _, err := os.Stat(bin); err != nil {
		return "", "", fmt.Errorf("%w: %s is missing", ErrNoBinary, bin)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "gitea.root"))
	if err != nil {
		return "", "", fmt.Errorf("%w: %s is missing", ErrNoBinary, filepath.Join(dir, "gitea.root"))
	}
	root = strings.TrimSpace(string(raw))
	if _, err := os.Stat(filepath.Join(root, "templates")); err != nil {
		return "", "", fmt.Errorf("%w: gitea's module folder %s (from gitea.root) has no templates", ErrNoBinary, root)
	}
	return bin, root, nil
}

// start starts a server whose web process listens on a port from pick.
func start(ctx context.Context, pick func() (int, error)) (*Gitea, error) {
	began := time.Now()
	bin, root, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ferry-gitea-")
	if err != nil {
		return nil, err
	}
	g := &Gitea{dir: dir, users: map[string]string{}}
	ok := false
	defer func() {
		if !ok {
			g.stop()
		}
	}()

	conf := filepath.Join(dir, "app.ini")
	// The commands before web need no port; web gets one with writeINI.
	if err := g.writeINI(conf, root, 0); err != nil {
		return nil, err
	}
	run := func(args ...string) (string, error) {
		cmd := g.command(ctx, bin, conf, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("gitea %s: %w: %s", args[0], err, lastLines(errb.String()+out.String(), 15))
		}
		return out.String(), nil
	}
	if _, err := run("migrate"); err != nil {
		return nil, err
	}
	if _, err := run("admin", "user", "create", "--username", AdminUser, "--password", Password,
		"--email", AdminUser+"@example.test", "--admin", "--must-change-password=false"); err != nil {
		return nil, err
	}
	out, err := run("admin", "user", "generate-access-token", "--username", AdminUser,
		"--token-name", "ferry-test", "--scopes", "all", "--raw")
	if err != nil {
		return nil, err
	}
	// Gitea's CLI logs to stdout too, from another goroutine: a log line
	// can come after the token.
	g.AdminToken = tokenLine(out)
	if g.AdminToken == "" {
		return nil, fmt.Errorf("gitea admin user generate-access-token printed no token: %s", lastLines(out, 10))
	}
	g.users[AdminUser] = g.AdminToken

	// Another process may take the free port before web binds it: then
	// web exits, and it is started again on another port.
	for try := 1; ; try++ {
		port, err := pick()
		if err != nil {
			return nil, err
		}
		err = g.startWeb(ctx, bin, conf, root, port)
		if err == nil {
			break
		}
		if try >= webTries || !errors.Is(err, errAddrInUse) {
			return nil, err
		}
	}
	g.Startup = time.Since(began)
	ok = true
	return g, nil
}

// webTries is how many ports start tries for the web server.
const webTries = 3

var errAddrInUse = errors.New("address already in use")

// writeINI writes the configuration with port (0 before the web server).
func (g *Gitea) writeINI(conf, root string, port int) error {
	ini, err := appINI(g.dir, root, port)
	if err != nil {
		return err
	}
	return os.WriteFile(conf, []byte(ini), 0o600)
}

// startWeb starts the web server on port and waits until it answers as
// this server: a request with AdminToken succeeds on no other Gitea.
func (g *Gitea) startWeb(ctx context.Context, bin, conf, root string, port int) error {
	if err := g.writeINI(conf, root, port); err != nil {
		return err
	}
	g.URL = fmt.Sprintf("http://127.0.0.1:%d/", port)
	// A failed try's log would read as this one's failed bind.
	_ = os.Remove(filepath.Join(g.dir, "log", "gitea.log"))
	// The web server runs in its own process group, killed whole by Stop,
	// and dies with the test binary should Stop never run.
	logPath := filepath.Join(g.dir, "web.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	g.cmd = g.command(context.Background(), bin, conf, "web", "--pid", filepath.Join(g.dir, "gitea.pid"))
	g.cmd.Stdout, g.cmd.Stderr = log, log
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		return fmt.Errorf("starting gitea web: %w", err)
	}
	g.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(g.cmd, g.done)

	if err := g.waitReady(ctx); err != nil {
		g.stopWeb()
		logText, _ := os.ReadFile(logPath)
		serverLog, _ := os.ReadFile(filepath.Join(g.dir, "log", "gitea.log"))
		if !errors.Is(err, errAddrInUse) && g.bindFailed() {
			err = fmt.Errorf("%w: %w", errAddrInUse, err)
		}
		return fmt.Errorf("%w\nweb.log:\n%s\ngitea.log:\n%s", err, lastLines(string(logText), 20), lastLines(string(serverLog), 20))
	}
	return nil
}

func (g *Gitea) command(ctx context.Context, bin, conf string, args ...string) *exec.Cmd {
	full := append([]string{"--config", conf, "--work-path", g.dir, "--custom-path", filepath.Join(g.dir, "custom")}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Dir = g.dir
	cmd.Env = append(cleanEnv(),
		"HOME="+filepath.Join(g.dir, "home"),
		"GITEA_WORK_DIR="+g.dir,
		"GITEA_CUSTOM="+filepath.Join(g.dir, "custom"),
		"USER="+currentUser(),
	)
	return cmd
}

// cleanEnv is the environment minus what Gitea or git would read as
// configuration.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITEA_") || strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "USER" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// waitReady polls /api/v1/user with AdminToken until the server answers
// as AdminUser, the process exits or ctx ends (at the latest after two
// minutes). Another Gitea on the port answers 401 to the token.
func (g *Gitea) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"api/v1/user", nil)
		req.Header.Set("Authorization", "token "+g.AdminToken)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return nil
			case resp.StatusCode == http.StatusUnauthorized && g.bindFailed():
				// Gitea web logs the failed bind but does not exit.
				return fmt.Errorf("%w: another server answers on %s", errAddrInUse, g.URL)
			}
		}
		select {
		case <-g.done:
			return fmt.Errorf("gitea web exited before answering on %s", g.URL)
		case <-ctx.Done():
			return fmt.Errorf("gitea web did not answer on %s: %w", g.URL, ctx.Err())
		case <-tick.C:
		}
	}
}

// bindFailed reports whether the web server logged that its port is taken.
func (g *Gitea) bindFailed() bool {
	for _, name := range []string{"web.log", filepath.Join("log", "gitea.log")} {
		if b, err := os.ReadFile(filepath.Join(g.dir, name)); err == nil && bytes.Contains(b, []byte("address already in use")) {
			return true
		}
	}
	return false
}

func (g *Gitea) stop() {
	g.stopWeb()
	if g.dir != "" {
		_ = os.RemoveAll(g.dir)
	}
}

// stopWeb stops the web server, if one was started.
func (g *Gitea) stopWeb() {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	pgid := g.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-g.done
	}
	// Anything left in the group (git helpers) goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	g.cmd = nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func appINI(dir, root string, port int) (string, error) {
	for _, d := range []string{"data", "repos", "log", "custom", "home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return "", err
		}
	}
	asRoot := ""
	if os.Geteuid() == 0 {
		asRoot = "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n"
	}
	p := func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) }
	return fmt.Sprintf(`APP_NAME = ferry-test
RUN_USER = %[1]s
RUN_MODE = prod
WORK_PATH = %[2]s
%[3]s
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[4]d
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:%[4]d/
APP_DATA_PATH = %[5]s
STATIC_ROOT_PATH = %[6]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = %[7]s
SQLITE_JOURNAL_MODE = WAL
LOG_SQL = false

[repository]
ROOT = %[8]s
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = ferry-test-secret-key-not-secret-at-all-0123456789
INTERNAL_TOKEN = eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJuYmYiOjE3MDAwMDAwMDB9.ferry-test-internal-token-0123456789
PASSWORD_HASH_ALGO = pbkdf2
MIN_PASSWORD_LENGTH = 8
PASSWORD_COMPLEXITY = off

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false
DEFAULT_ALLOW_CREATE_ORGANIZATION = true

[mailer]
ENABLED = false

[queue]
TYPE = channel

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[api]
MAX_RESPONSE_ITEMS = %[9]d
DEFAULT_PAGING_NUM = %[9]d

[ui]
SHOW_USER_EMAIL = false

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = %[10]s

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

; The container registry, 127.0.0.1:PORT/OWNER/IMAGE over plain HTTP
; (the release workflow's tests).
[packages]
ENABLED = true

[other]
SHOW_FOOTER_VERSION = false
`, currentUser(), dir, asRoot, port, p("data"), root, p("data", "gitea.db"), p("repos"), PageSize, p("log")), nil
}

// tokenLine returns the line of out that is an access token (40 hex
// digits), "" if none is.
func tokenLine(out string) string {
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if tokenRE.MatchString(line) {
			return line
		}
	}
	return ""
}

var tokenRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Client returns an SDK client acting with token.
func (g *Gitea) Client(t testing.TB, token string) *gitea.Client {
	t.Helper()
	c, err := gitea.NewClient(strings.TrimSuffix(g.URL, "/"), gitea.SetToken(token))
	if err != nil {
		t.Fatalf("giteatest: client: %v", err)
	}
	return c
}

// CreateUser creates a user (password Password) and returns an access
// token of it with every scope.
func (g *Gitea) CreateUser(t testing.TB, login string) string {
	t.Helper()
	admin := g.Client(t, g.AdminToken)
	no := false
	if _, _, err := admin.AdminCreateUser(gitea.CreateUserOption{
		Username:           login,
		Email:              login + "@example.test",
		Password:           Password,
		MustChangePassword: &no,
	}); err != nil {
		t.Fatalf("giteatest: creating user %s: %v", login, err)
	}
	c, err := gitea.NewClient(strings.TrimSuffix(g.URL, "/"), gitea.SetBasicAuth(login, Password))
	if err != nil {
		t.Fatalf("giteatest: client for %s: %v", login, err)
	}
	tok, _, err := c.CreateAccessToken(gitea.CreateAccessTokenOption{
		Name:   "ferry-test",
		Scopes: []gitea.AccessTokenScope{gitea.AccessTokenScopeAll},
	})
	if err != nil {
		t.Fatalf("giteatest: token for %s: %v", login, err)
	}
	g.mu.Lock()
	g.users[login] = tok.Token
	g.mu.Unlock()
	return tok.Token
}

// Token returns the token of a user this server created (AdminUser or one
// made by CreateUser), "" for others.
func (g *Gitea) Token(login string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.users[login]
}

// CreateRepo creates an empty public repository owned by owner (a user).
func (g *Gitea) CreateRepo(t testing.TB, owner, name string) {
	t.Helper()
	admin := g.Client(t, g.AdminToken)
	opt := gitea.CreateRepoOption{Name: name, DefaultBranch: "main"}
	var err error
	if owner == AdminUser {
		_, _, err = admin.CreateRepo(opt)
	} else {
		_, _, err = admin.AdminCreateRepo(owner, opt)
	}
	if err != nil {
		t.Fatalf("giteatest: creating repository %s/%s: %v", owner, name, err)
	}
}

// CloneURL is the HTTP clone URL of a repository (no credentials in it).
func (g *Gitea) CloneURL(owner, repo string) string {
	return g.URL + owner + "/" + repo + ".git"
}

// Unique returns prefix with a suffix no other call in this test binary
// returns, for names of users and repositories.
func Unique(prefix string) string {
	uniqueMu.Lock()
	defer uniqueMu.Unlock()
	uniqueN++
	return prefix + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(uniqueN)
}

var (
	uniqueMu sync.Mutex
	uniqueN  int
)
