package acttest

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
)

// diffFleet writes a two-target fleet: web (a ConfigMap and a SOPS
// Secret) and db (a ConfigMap), each in its own namespace.
func diffFleet(f *fleet, greeting, password string) {
	f.write(map[string]string{
		"ferry.yaml": "targets:\n  - name: web\n    path: apps/web\n  - name: db\n    path: apps/db\n",
		"apps/web/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: web
resources:
  - config.yaml
  - secret.sops.yaml
`,
		"apps/web/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: ` + greeting + `
`,
		"apps/web/secret.sops.yaml": f.encrypt("secret.sops.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: web-credentials
stringData:
  password: `+password+`
`),
		"apps/db/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: db\nresources:\n  - config.yaml\n",
		"apps/db/config.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-config\ndata:\n  size: small\n",
	})
}

// TestDiffWorkflowOnGitea runs examples/workflows/gitea/diff.yaml for a
// pull request on a real Gitea: ferry's diff step posts the one comment,
// a second push edits that same comment, the outputs reach a later step,
// the step summary holds the report, and no decrypted value reaches the
// job's log, the comment or the summary.
func TestDiffWorkflowOnGitea(t *testing.T) {
	t.Parallel()
	r := Require(t)
	g := giteatest.Require(t)
	f := newFleet(t, g)
	const (
		oldPassword  = "s3cret-before-7f2a"
		newPassword  = "s3cret-after-91cd"
		newPassword2 = "s3cret-third-44be"
	)
	wf := f.installWorkflow("gitea", "diff", probe(map[string]string{
		"CHANGED":     "${{ steps.diff.outputs.changed }}",
		"TARGETS":     "${{ steps.diff.outputs.targets }}",
		"REPORT_PATH": "${{ steps.diff.outputs.report-path }}",
	}))
	base, head := f.change(func() { diffFleet(f, "hello", oldPassword) }, func() { diffFleet(f, "hello-v2", newPassword) })
	pr := g.CreatePullRequest(t, f.token, f.owner, f.name, "change", "main", "web: greeting v2")

	ferry := r.StageFerry(t, nil)
	run := func(action, head string) Result {
		return r.Run(t, f.giteaPullRequest(wf, ferry, action, pr.Number, base, head))
	}
	secrets := func(extra ...string) []string {
		vals := []string{f.key.Identity}
		for _, p := range append([]string{oldPassword, newPassword}, extra...) {
			vals = append(vals, p, base64.StdEncoding.EncodeToString([]byte(p)))
		}
		return vals
	}

	res := run("opened", head)
	runOK(t, res)
	comments := ferryComments(t, g, f, pr.Number)
	if len(comments) != 1 {
		t.Fatalf("%d ferry comments after the first run, want 1:\n%v", len(comments), comments)
	}
	first := comments[0]
	for _, want := range []string{"web", "ConfigMap/web/web-config", "hello-v2", "Secret/web/web-credentials"} {
		if !strings.Contains(first.Body, want) {
			t.Errorf("the comment does not name %q:\n%s", want, first.Body)
		}
	}
	if strings.Contains(first.Body, "db-config") {
		t.Errorf("the comment shows the unchanged target db:\n%s", first.Body)
	}
	got := probed(res.Log)
	if got["CHANGED"] != "true" || got["TARGETS"] != `["web"]` || got["REPORT_PATH"] == "" {
		t.Errorf("outputs seen by the later step: %v; want CHANGED=true TARGETS=[\"web\"] and a REPORT_PATH", got)
	}
	if !strings.Contains(res.Log, "artifact ferry-diff: "+got["REPORT_PATH"]) {
		t.Errorf("upload-artifact did not get the report path %q:\n%s", got["REPORT_PATH"], res.Log)
	}
	summary := strings.Join(res.Summaries, "\n")
	if !strings.Contains(summary, "web-config") {
		t.Errorf("no step summary holds the report; summaries seen:\n%s", summary)
	}
	for where, text := range map[string]string{"the job log": res.Log, "the comment": first.Body, "the step summary": summary} {
		noSecrets(t, where, text, secrets()...)
	}

	// A second push to the pull request: the same comment is edited.
	diffFleet(f, "hello-v3", newPassword2)
	head2 := f.commit("web: greeting v3")
	f.push("change")
	res = run("synchronize", head2)
	runOK(t, res)
	comments = ferryComments(t, g, f, pr.Number)
	if len(comments) != 1 {
		t.Fatalf("%d ferry comments after the second push, want the one edited:\n%v", len(comments), comments)
	}
	if comments[0].ID != first.ID {
		t.Errorf("the comment after the second push is %d, want %d edited", comments[0].ID, first.ID)
	}
	if !strings.Contains(comments[0].Body, "hello-v3") || comments[0].Body == first.Body {
		t.Errorf("the comment was not brought up to date:\n%s", comments[0].Body)
	}
	noSecrets(t, "the second job log", res.Log, secrets(newPassword2)...)
	noSecrets(t, "the edited comment", comments[0].Body, secrets(newPassword2)...)
}

// giteaPullRequest is the job of a pull_request event on Gitea for the
// fleet's workflow wf, with the job token and the age key as secrets and
// ferry's staged copy.
func (f *fleet) giteaPullRequest(wf, ferry, action string, number int64, base, head string) Job {
	return Job{
		Dir:        f.dir,
		Workflow:   wf,
		Event:      "pull_request",
		ServerHost: f.host(),
		Env:        f.giteaEnv(),
		Secrets:    map[string]string{"GITHUB_TOKEN": f.token, "SOPS_AGE_KEY": f.key.Identity},
		Actions:    Actions(ferry),
		Payload:    f.pullRequestEvent(action, number, base, head),
	}
}

// ferryComments returns the pull request's comments that ferry wrote.
func ferryComments(t *testing.T, g *giteatest.Gitea, f *fleet, number int64) []giteatest.Comment {
	t.Helper()
	var out []giteatest.Comment
	for _, c := range g.Comments(t, f.token, f.owner, f.name, number) {
		if strings.Contains(c.Body, "ferry") {
			out = append(out, c)
		}
	}
	return out
}

// TestRenamedInputIsNoticed breaks ferry's diff step the way the env
// contract tests cannot see: its token input renamed in action.yml alone
// (the image unchanged). The runner then gives the step no INPUT_TOKEN
// (the default ${{ github.token }} now belongs to another name), and the
// job must fail with a message naming the input, before anything is
// posted.
func TestRenamedInputIsNoticed(t *testing.T) {
	t.Parallel()
	r := Require(t)
	g := giteatest.Require(t)
	f := newFleet(t, g)
	wf := f.installWorkflow("gitea", "diff")
	base, head := f.change(func() { diffFleet(f, "hello", "renamed-pa55-1") }, func() { diffFleet(f, "hello-v2", "renamed-pa55-1") })
	pr := g.CreatePullRequest(t, f.token, f.owner, f.name, "change", "main", "web: greeting v2")

	ferry := r.StageFerry(t, func(dir string) {
		path := filepath.Join(dir, "steps", "diff", "action.yml")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		renamed := strings.Replace(string(b), "\n  token:\n", "\n  forge-token:\n", 1)
		if renamed == string(b) {
			t.Fatal("steps/diff/action.yml has no token input to rename")
		}
		if err := os.WriteFile(path, []byte(renamed), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	res := r.Run(t, f.giteaPullRequest(wf, ferry, "opened", pr.Number, base, head))
	if res.Err == nil {
		t.Fatalf("the diff job passed with the token input renamed in action.yml:\n%s", res.Log)
	}
	t.Logf("the job failed as it must:\n%s", strings.Join(errorLines(res.Log), "\n"))
	if !strings.Contains(strings.Join(errorLines(res.Log), "\n"), "the step's token input") {
		t.Errorf("the failure does not name the token input:\n%s", res.Log)
	}
	if n := len(ferryComments(t, g, f, pr.Number)); n != 0 {
		t.Errorf("%d comments posted by the broken step", n)
	}
}

// errorLines returns the ::error:: lines of a job log.
func errorLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "::error") {
			out = append(out, line)
		}
	}
	return out
}

// TestDiffWorkflowOnGitHub runs examples/workflows/github/diff.yaml for a
// pull request whose API is the GitHub test server (github.com cannot be
// reached; the Git repository itself is on Gitea): the one comment is
// written by the job token's user, the fork check of the workflow lets it
// comment, and upload-artifact v4 gets the report.
func TestDiffWorkflowOnGitHub(t *testing.T) {
	t.Parallel()
	r := Require(t)
	g := giteatest.Require(t)
	f := newFleet(t, g)
	gh := githubtest.New(t)
	token := gh.AddUser("github-actions[bot]")
	const password = "github-pa55-5a0e"
	wf := f.installWorkflow("github", "diff", probe(map[string]string{"CHANGED": "${{ steps.diff.outputs.changed }}"}))
	base, head := f.change(func() { diffFleet(f, "hello", password) }, func() { diffFleet(f, "hello-github", password) })
	number := gh.AddPullRequest(f.owner, f.name, "octocat", "change", "main", "web: greeting", "")

	res := r.Run(t, Job{
		Dir:        f.dir,
		Workflow:   wf,
		Event:      "pull_request",
		ServerHost: f.host(),
		// The clone comes from Gitea's server URL, the API from the test
		// server, as on GitHub Enterprise.
		Env:     map[string]string{"GITHUB_SERVER_URL": strings.TrimSuffix(g.URL, "/"), "GITHUB_API_URL": gh.URL},
		Secrets: map[string]string{"GITHUB_TOKEN": token, "SOPS_AGE_KEY": f.key.Identity},
		Actions: Actions(r.StageFerry(t, nil)),
		Payload: f.pullRequestEvent("opened", int64(number), base, head),
	})
	runOK(t, res)
	var ours []githubtest.Comment
	for _, c := range gh.Comments(f.owner, f.name, number) {
		if c.Author == "github-actions[bot]" {
			ours = append(ours, c)
		}
	}
	if len(ours) != 1 || !strings.Contains(ours[0].Body, "hello-github") || !strings.Contains(ours[0].Body, "ConfigMap/web/web-config") {
		t.Fatalf("the job token's comments: %+v, want one with the ConfigMap's diff", ours)
	}
	if got := probed(res.Log)["CHANGED"]; got != "true" {
		t.Errorf("changed output seen by the later step: %q", got)
	}
	if !strings.Contains(res.Log, "artifact ferry-diff: ferry-diff.md") {
		t.Errorf("upload-artifact@v4 did not get the report:\n%s", res.Log)
	}
	if !strings.Contains(strings.Join(res.Summaries, "\n"), "web-config") {
		t.Errorf("no step summary holds the report: %q", res.Summaries)
	}
	noSecrets(t, "the job log", res.Log, password, f.key.Identity)
	noSecrets(t, "the comment", ours[0].Body, password)
}
