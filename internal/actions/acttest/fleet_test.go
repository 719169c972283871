package acttest

import (
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// fleet is a generated GitOps repository on the test Gitea, with a local
// checkout (Dir) for act to run in: its origin is the Gitea repository.
type fleet struct {
	t     *testing.T
	gitea *giteatest.Gitea
	owner string
	token string // the owner's token: the job's GITHUB_TOKEN
	name  string
	dir   string
	key   secretstest.Key
}

func newFleet(t *testing.T, g *giteatest.Gitea) *fleet {
	t.Helper()
	return newRepo(t, g, "fleet")
}

// newRepo is newFleet for a repository called name.
func newRepo(t *testing.T, g *giteatest.Gitea, name string) *fleet {
	t.Helper()
	started.add(func() { started.gitea = g })
	f := &fleet{t: t, gitea: g, owner: giteatest.Unique("acme"), name: name, key: secretstest.NewKey(t)}
	f.token = g.CreateUser(t, f.owner)
	g.CreateRepo(t, f.owner, f.name)
	f.dir = filepath.Join(t.TempDir(), f.name)
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.git("init", "-q", "-b", "main")
	f.git("remote", "add", "origin", g.CloneURL(f.owner, f.name))
	return f
}

// git runs git in the checkout and returns its trimmed output.
func (f *fleet) git(args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=ferry test", "-c", "user.email=test@ferry.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (f *fleet) write(files map[string]string) { testtree.Write(f.t, f.dir, files) }

func (f *fleet) remove(rel string) {
	f.t.Helper()
	if err := os.Remove(filepath.Join(f.dir, rel)); err != nil {
		f.t.Fatal(err)
	}
}

// commit commits everything and returns the commit.
func (f *fleet) commit(msg string) string {
	f.t.Helper()
	f.git("add", "-A")
	f.git("commit", "-q", "-m", msg)
	return f.git("rev-parse", "HEAD")
}

// push pushes HEAD to branch on Gitea as the owner.
func (f *fleet) push(branch string) {
	f.t.Helper()
	u, err := url.Parse(f.gitea.CloneURL(f.owner, f.name))
	if err != nil {
		f.t.Fatal(err)
	}
	u.User = url.UserPassword(f.owner, f.token)
	f.git("push", "-q", "--force", u.String(), "HEAD:refs/heads/"+branch)
}

// encrypt returns a SOPS file (YAML) of plaintext for the fleet's key,
// data and stringData encrypted, as .sops.yaml would ask.
func (f *fleet) encrypt(path, plaintext string) string {
	return string(secretstest.Encrypt(f.t, path, []byte(plaintext), "^(data|stringData)$", f.key.Recipient))
}

// change commits what before writes on main and pushes it, then what
// after writes on a new branch "change", pushed too: the two sides of a
// pull request. It returns both commits.
func (f *fleet) change(before, after func()) (base, head string) {
	f.t.Helper()
	before()
	base = f.commit("fleet")
	f.push("main")
	f.git("checkout", "-q", "-b", "change")
	after()
	head = f.commit("the change")
	f.push("change")
	return base, head
}

// pullRequestEvent is the payload of a pull_request event from branch
// change into main.
func (f *fleet) pullRequestEvent(action string, number int64, base, head string) map[string]any {
	return map[string]any{
		"action": action,
		"number": number,
		"pull_request": map[string]any{
			"number": number,
			"base":   map[string]any{"ref": "main", "sha": base, "repo": f.repositoryPayload()},
			"head":   map[string]any{"ref": "change", "sha": head, "repo": f.repositoryPayload()},
		},
		"repository": f.repositoryPayload(),
	}
}

// repository is owner/name.
func (f *fleet) repository() string { return f.owner + "/" + f.name }

// host is Gitea's host:port.
func (f *fleet) host() string {
	u, _ := url.Parse(f.gitea.URL)
	return u.Host
}

// giteaEnv is what Gitea's runner (act_runner) sets for every job, besides
// what act sets itself: the server and API URLs and GITEA_ACTIONS.
func (f *fleet) giteaEnv() map[string]string {
	server := strings.TrimSuffix(f.gitea.URL, "/")
	return map[string]string{
		"GITHUB_SERVER_URL":            server,
		"GITHUB_API_URL":               server + "/api/v1",
		"GITEA_ACTIONS":                "true",
		"GITEA_ACTIONS_RUNNER_VERSION": "v0.2.11",
	}
}

// repositoryPayload is the event's repository object.
func (f *fleet) repositoryPayload() map[string]any {
	return map[string]any{
		"name":           f.name,
		"full_name":      f.repository(),
		"owner":          map[string]any{"login": f.owner},
		"default_branch": "main",
		"clone_url":      f.gitea.CloneURL(f.owner, f.name),
	}
}

// giteaContext matches the gitea context in expressions: Gitea's runner
// (a fork of act) gives it as another name of github, nektos/act does not.
var giteaContext = regexp.MustCompile(`\bgitea\.`)

// installWorkflow copies examples/workflows/<flavour>/<name>.yaml into the
// checkout's .github/workflows or .gitea/workflows, as a user copies it,
// with probe steps (if any) appended to the workflow's last job, and
// returns its path relative to the checkout. A Gitea workflow's gitea.
// context is written github. for nektos/act.
func (f *fleet) installWorkflow(flavour, name string, probes ...string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "examples", "workflows", flavour, name+".yaml"))
	if err != nil {
		f.t.Fatal(err)
	}
	text := string(b)
	folder := ".github/workflows"
	if flavour == "gitea" {
		folder = ".gitea/workflows"
		text = rewriteExpressions(text, func(e string) string { return giteaContext.ReplaceAllString(e, "github.") })
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	for _, p := range probes {
		text += p
	}
	rel := folder + "/" + name + ".yaml"
	f.write(map[string]string{rel: text})
	return rel
}

var expression = regexp.MustCompile(`\$\{\{.*?\}\}`)

func rewriteExpressions(text string, fn func(string) string) string {
	return expression.ReplaceAllStringFunc(text, fn)
}

// probe is a step appended to a workflow's last job that prints values of
// the steps before it (their outputs) for the test to read in the log:
// each line "probe NAME=VALUE".
func probe(values map[string]string) string {
	var b strings.Builder
	b.WriteString("      - name: probe (ferry's runner test)\n        if: always()\n        env:\n")
	keys := slices.Sorted(maps.Keys(values))
	for _, k := range keys {
		b.WriteString("          " + k + ": " + values[k] + "\n")
	}
	b.WriteString("        run: |\n")
	for _, k := range keys {
		b.WriteString(`          echo "probe ` + k + `=$` + k + `"` + "\n")
	}
	return b.String()
}

// probed returns the values probe steps printed: NAME -> VALUE, the last
// one when a probe ran more than once.
func probed(log string) map[string]string {
	out := map[string]string{}
	for _, line := range StepLines(log) {
		if rest, ok := strings.CutPrefix(line, "probe "); ok {
			if k, v, ok := strings.Cut(rest, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// runOK fails the test with the job's log when act failed.
func runOK(t *testing.T, res Result) {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("act: %v\n%s", res.Err, res.Log)
	}
}

// noSecrets fails the test when any of values appears in any of texts.
func noSecrets(t *testing.T, where string, text string, values ...string) {
	t.Helper()
	for _, v := range values {
		if v != "" && strings.Contains(text, v) {
			t.Errorf("%s holds the secret value %q", where, v)
		}
	}
}
