package main

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/actions/actionstest"
	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/gittest"
)

// bumpGitRepo commits everything in the scenario on main, and returns
// its Git repository.
func bumpGitRepo(s *scenario) *gittest.Repo {
	s.t.Helper()
	s.commit("gitops repository")
	return s.repo()
}

// branchCommit returns the commit a branch of repo points at, with its
// parent.
func branchCommit(t *testing.T, repo *gittest.Bare, branch string) (hash, parent string) {
	t.Helper()
	c := repo.Tip(t, branch)
	if len(c.Parents) != 1 {
		t.Fatalf("branch %s: commit has %d parents", branch, len(c.Parents))
	}
	return c.Hash, c.Parents[0]
}

// withEdits returns files with edits (file -> old -> new) applied.
func withEdits(t *testing.T, files map[string]string, edits map[string][2]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for k, e := range edits {
		if !strings.Contains(out[k], e[0]) {
			t.Fatalf("%s has no %q", k, e[0])
		}
		out[k] = strings.Replace(out[k], e[0], e[1], 1)
	}
	return out
}

// bareRemote commits the scenario (bumpGitRepo) and gives it a new bare
// repository as origin, and returns both.
func bareRemote(s *scenario) (local *gittest.Repo, remote *gittest.Bare) {
	s.t.Helper()
	local = bumpGitRepo(s)
	return local, local.BareRemote(s.t, "origin")
}

// startGitHubBump starts the bump registry and a GitHub test server with
// the repository org/gitops, and returns them with the bot's token.
func startGitHubBump(t *testing.T) (*bumpRegistry, *githubtest.Server, string) {
	t.Helper()
	reg := startBumpRegistry(t)
	gh := githubtest.New(t)
	token := gh.AddUser("ferry-bot")
	gh.AddRepo("org", "gitops")
	return reg, gh, token
}

// githubBumpEnv is the environment of a bump --pr run against the GitHub
// test server's org/gitops.
func githubBumpEnv(reg *bumpRegistry, gh *githubtest.Server, token string) map[string]string {
	env := reg.env()
	env["GITHUB_API_URL"] = gh.URL
	env["GITHUB_REPOSITORY"] = "org/gitops"
	env["GITHUB_TOKEN"] = token
	return env
}

// TestBumpPRGitHub runs ferry bump --pr against a server speaking GitHub's
// REST API, with a local bare repository as the remote:
// one branch and pull request per policy whose marked lines change, then
// the same pull request updated when a newer tag appears, and nothing at
// all on a run with nothing new.
func TestBumpPRGitHub(t *testing.T) {
	reg, gh, token := startGitHubBump(t)

	sc := bumpScenario(t, reg.Host, "fleet", nil)
	dir := sc.dir
	local, remote := bareRemote(sc)
	local.PushHead(t, "origin", "main", gittest.Auth{})
	head := local.Tip(t, "main").Hash
	before := readTree(t, dir)
	base := remote.Files(t, head)

	env := githubBumpEnv(reg, gh, token)
	bump := func() result {
		t.Helper()
		res := ferry(t, env, "bump", "--pr", "--repo", dir)
		if res.code != exitOK {
			t.Fatalf("bump --pr: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
		return res
	}

	// 1: three pull requests (sherpa is at its latest tag already).
	res := bump()
	pulls := gh.PullRequests("org", "gitops")
	var got []string
	for _, p := range pulls {
		got = append(got, p.PullRequest.Head+" -> "+p.PullRequest.Base+": "+p.Title)
	}
	sort.Strings(got)
	want := []string{
		"ferry/bump/apps/build -> main: Bump " + reg.Host + "/team/build to 03300208",
		"ferry/bump/flux-system/api -> main: Bump " + reg.Host + "/team/mono to api-0.21.0",
		"ferry/bump/flux-system/app -> main: Bump " + reg.Host + "/team/app to 1.25.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pull requests (-want +got):\n%s\nstdout:\n%s", diff, res.stdout)
	}
	// Each branch is one commit on main changing only its policy's lines.
	for branch, edits := range map[string]map[string][2]string{
		"ferry/bump/flux-system/app": {"apps/app/deployment.yaml": {"app:1.24.0 #", "app:1.25.0 #"}},
		"ferry/bump/flux-system/api": {"apps/mono/kustomization.yaml": {`"api-0.20.0"`, `"api-0.21.0"`}},
		"ferry/bump/apps/build":      {"apps/build/values.yaml": {"'03300207'", "'03300208'"}},
	} {
		hash, parent := branchCommit(t, remote, branch)
		if parent != head {
			t.Errorf("%s: parent %s, want main's %s", branch, parent, head)
		}
		if diff := cmp.Diff(withEdits(t, base, edits), remote.Files(t, hash)); diff != "" {
			t.Errorf("%s: files (-want +got):\n%s", branch, diff)
		}
	}
	// The body's table names file, image, old -> new and digest.
	for _, p := range pulls {
		if p.PullRequest.Head == "ferry/bump/flux-system/app" {
			row := "| `apps/app/deployment.yaml:17` | `" + reg.Host + "/team/app` | `" + reg.Host + "/team/app:1.24.0` → `" + reg.Host + "/team/app:1.25.0` | digest `" + reg.digests["team/app:1.25.0"] + "` |"
			if !strings.Contains(p.Body, row) {
				t.Errorf("body of %s lacks the row\n%s\nbody:\n%s", p.PullRequest.Head, row, p.Body)
			}
		}
	}
	if diff := cmp.Diff(before, readTree(t, dir)); diff != "" {
		t.Errorf("--pr changed the work tree (-before +after):\n%s", diff)
	}

	// 2: nothing new: no push moves a branch, no pull request changes.
	gh.ResetRequests()
	appHash, _ := branchCommit(t, remote, "ferry/bump/flux-system/app")
	bump()
	if w := gh.Writes(); len(w) != 0 {
		t.Errorf("a run with nothing new wrote to the forge: %+v", w)
	}
	if again, _ := branchCommit(t, remote, "ferry/bump/flux-system/app"); again != appHash {
		t.Errorf("a run with nothing new moved the branch from %s to %s", appHash, again)
	}

	// 3: a newer tag updates the same pull request.
	reg.MustPush(t, "team/app", "1.26.0")
	gh.ResetRequests()
	res = bump()
	pulls = gh.PullRequests("org", "gitops")
	if len(pulls) != 3 {
		t.Fatalf("%d pull requests after the newer tag, want the same 3", len(pulls))
	}
	for _, p := range pulls {
		if p.PullRequest.Head == "ferry/bump/flux-system/app" && p.Title != "Bump "+reg.Host+"/team/app to 1.26.0" {
			t.Errorf("app pull request title %q after the newer tag", p.Title)
		}
	}
	var writes []string
	for _, w := range gh.Writes() {
		writes = append(writes, w.Method+" "+w.Path)
	}
	if len(writes) != 1 || !strings.HasPrefix(writes[0], "PATCH /repos/org/gitops/pulls/") {
		t.Errorf("forge writes after the newer tag = %q, want one PATCH of the app pull request", writes)
	}
	hash, _ := branchCommit(t, remote, "ferry/bump/flux-system/app")
	if diff := cmp.Diff(withEdits(t, base, map[string][2]string{"apps/app/deployment.yaml": {"app:1.24.0 #", "app:1.26.0 #"}}), remote.Files(t, hash)); diff != "" {
		t.Errorf("app branch after the newer tag (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.stdout, "flux-system:app: pull request #") || !strings.Contains(res.stdout, " updated: ") {
		t.Errorf("stdout does not report the update:\n%s", res.stdout)
	}
}

// TestBumpPRGitea runs ferry bump --pr as a Gitea Actions job would, on a
// real Gitea: one pull request per policy, updated in place by a later
// run, each touching only its policy's marked lines.
func TestBumpPRGitea(t *testing.T) {
	reg := startBumpRegistry(t)
	g := giteatest.Require(t)
	bot := giteatest.Unique("ferry-bot")
	token := g.CreateUser(t, bot)
	name := giteatest.Unique("gitops")
	g.CreateRepo(t, bot, name)

	sc := bumpScenario(t, reg.Host, "fleet", nil)
	dir := sc.dir
	local := bumpGitRepo(sc)
	local.AddRemote(t, "origin", g.CloneURL(bot, name))
	auth := gittest.Auth{User: bot, Password: token}
	local.PushHead(t, "origin", "main", auth)
	base := local.Files(t, local.Tip(t, "main").Hash)

	env := reg.env()
	output := filepath.Join(t.TempDir(), "output")
	env["GITHUB_ACTIONS"] = "true"
	env["GITHUB_OUTPUT"] = output
	env["GITHUB_STEP_SUMMARY"] = filepath.Join(t.TempDir(), "summary")
	env["GITEA_ACTIONS"] = "true"
	env["GITHUB_SERVER_URL"] = strings.TrimSuffix(g.URL, "/")
	env["GITHUB_API_URL"] = g.URL + "api/v1"
	env["GITHUB_REPOSITORY"] = bot + "/" + name
	env["GITHUB_TOKEN"] = token
	// bump runs the step and returns its pull-requests output by policy.
	bump := func() map[string]openedPR {
		t.Helper()
		if res := ferry(t, env, "bump", "--pr", "--repo", dir); res.code != exitOK {
			t.Fatalf("bump --pr: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
		var list []openedPR
		if err := json.Unmarshal([]byte(actionstest.Outputs(t, output)["pull-requests"]), &list); err != nil {
			t.Fatalf("pull-requests output: %v", err)
		}
		out := map[string]openedPR{}
		for _, p := range list {
			out[p.Policy] = p
		}
		return out
	}
	pulls := func() map[string]*giteatest.PullRequest {
		t.Helper()
		out := map[string]*giteatest.PullRequest{}
		for _, p := range g.OpenPullRequests(t, token, bot, name) {
			out[p.Head] = &p
		}
		return out
	}
	// clone reads a branch back from Gitea.
	clone := func(branch string) map[string]string {
		t.Helper()
		r := gittest.Clone(t, g.CloneURL(bot, name), branch, auth)
		return r.Files(t, r.Tip(t, branch).Hash)
	}

	created := bump()
	first := pulls()
	var heads []string
	for h, p := range first {
		heads = append(heads, h+": "+p.Title)
		if p.Base != "main" {
			t.Errorf("%s: base %s, want main", h, p.Base)
		}
	}
	sort.Strings(heads)
	want := []string{
		"ferry/bump/apps/build: Bump " + reg.Host + "/team/build to 03300208",
		"ferry/bump/flux-system/api: Bump " + reg.Host + "/team/mono to api-0.21.0",
		"ferry/bump/flux-system/app: Bump " + reg.Host + "/team/app to 1.25.0",
	}
	if diff := cmp.Diff(want, heads); diff != "" {
		t.Fatalf("pull requests (-want +got):\n%s", diff)
	}
	if o := created["flux-system:app"]; len(created) != 3 || o.Action != "created" || o.Number != int(first["ferry/bump/flux-system/app"].Number) || o.URL != first["ferry/bump/flux-system/app"].URL {
		t.Errorf("pull-requests output after the first run: %+v", created)
	}
	if diff := cmp.Diff(withEdits(t, base, map[string][2]string{"apps/mono/kustomization.yaml": {`"api-0.20.0"`, `"api-0.21.0"`}}), clone("ferry/bump/flux-system/api")); diff != "" {
		t.Errorf("api branch (-want +got):\n%s", diff)
	}

	// A newer tag: the same pull request, retitled, its branch moved.
	reg.MustPush(t, "team/app", "1.26.0")
	updated := bump()
	second := pulls()
	if updated["flux-system:app"].Action != "updated" || updated["flux-system:api"].Action != "unchanged" {
		t.Errorf("pull-requests output after the newer tag: %+v", updated)
	}
	app := second["ferry/bump/flux-system/app"]
	if len(second) != 3 || app == nil || app.Number != first["ferry/bump/flux-system/app"].Number {
		t.Fatalf("after the newer tag: %d pull requests, app %+v; want the same 3", len(second), app)
	}
	if app.Title != "Bump "+reg.Host+"/team/app to 1.26.0" || !strings.Contains(app.Body, "`"+reg.Host+"/team/app:1.26.0`") {
		t.Errorf("app pull request not updated: %q\n%s", app.Title, app.Body)
	}
	if diff := cmp.Diff(withEdits(t, base, map[string][2]string{"apps/app/deployment.yaml": {"app:1.24.0 #", "app:1.26.0 #"}}), clone("ferry/bump/flux-system/app")); diff != "" {
		t.Errorf("app branch after the newer tag (-want +got):\n%s", diff)
	}
	if got := strings.Count(clone("ferry/bump/flux-system/app")["apps/app/deployment.yaml"], "1.26.0"); got != 1 {
		t.Errorf("app branch holds 1.26.0 %d times", got)
	}
}

// TestBumpPRErrors: a bad input stops --pr before anything is pushed or
// asked of the forge.
func TestBumpPRErrors(t *testing.T) {
	reg, gh, token := startGitHubBump(t)
	for _, tc := range []struct {
		name  string
		edits map[string][2]string
		env   map[string]string
		want  string
	}{
		{"invalid regex", map[string][2]string{"clusters/prod/image-automation.yaml": {"'^api-(?P<version>.*)$'", "'^api-(?P<version>.*$'"}}, nil,
			"ImagePolicy/flux-system/api (clusters/prod/image-automation.yaml:35): filterTags.pattern"},
		{"registry 401", nil, map[string]string{"FERRY_SECRET_REGCRED_PASSWORD": "wrong-password"}, "(401 Unauthorized)"},
		{"no token", nil, map[string]string{"GITHUB_TOKEN": ""}, "--pr: no token"},
		{"bad branch template", nil, map[string]string{"branch": "ferry/{{.Nope}}"}, "--branch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := bumpScenario(t, reg.Host, "fleet", tc.edits)
			dir := sc.dir
			_, remote := bareRemote(sc)
			env := githubBumpEnv(reg, gh, token)
			args := []string{"bump", "--pr", "--repo", dir}
			for k, v := range tc.env {
				if k == "branch" {
					args = append(args, "--branch", v)
					continue
				}
				env[k] = v
			}
			gh.ResetRequests()
			res := ferry(t, env, args...)
			if res.code != exitError || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", res.code, res.stderr, tc.want)
			}
			for _, b := range remote.Branches(t) {
				t.Errorf("the remote got branch %s", b)
			}
			if w := gh.Writes(); len(w) != 0 {
				t.Errorf("the forge was written to: %+v", w)
			}
		})
	}
}

// TestBumpPRGrouped: --group makes one branch and pull request holding
// every policy's change, titled and named by the grouped templates, and
// --title/--branch templates name them when given.
func TestBumpPRGrouped(t *testing.T) {
	reg, gh, token := startGitHubBump(t)
	for _, tc := range []struct {
		args          []string
		branch, title string
	}{
		{[]string{"--group"}, "ferry/bump/all", "Bump 3 image(s)"},
		{[]string{"--group", "--branch", "images/{{.Count}}", "--title", "chore: {{.Count}} images"}, "images/3", "chore: 3 images"},
	} {
		t.Run(tc.branch, func(t *testing.T) {
			sc := bumpScenario(t, reg.Host, "fleet", nil)
			dir := sc.dir
			local, remote := bareRemote(sc)
			base := local.Files(t, local.Tip(t, "main").Hash)
			res := ferry(t, githubBumpEnv(reg, gh, token), append([]string{"bump", "--pr", "--repo", dir}, tc.args...)...)
			if res.code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
			}
			var found bool
			for _, p := range gh.PullRequests("org", "gitops") {
				if p.PullRequest.Head != tc.branch {
					continue
				}
				found = true
				if p.Title != tc.title {
					t.Errorf("title %q, want %q", p.Title, tc.title)
				}
				for _, moved := range [][2]string{{"team/app", "1.25.0"}, {"team/mono", "api-0.21.0"}, {"team/build", "03300208"}} {
					if s := "`" + reg.Host + "/" + moved[0] + "` to `" + moved[1] + "`"; !strings.Contains(p.Body, s) {
						t.Errorf("body lacks %s:\n%s", s, p.Body)
					}
				}
			}
			if !found {
				t.Fatalf("no pull request from %s; stdout:\n%s", tc.branch, res.stdout)
			}
			hash, _ := branchCommit(t, remote, tc.branch)
			want := withEdits(t, base, map[string][2]string{
				"apps/app/deployment.yaml":     {"app:1.24.0 #", "app:1.25.0 #"},
				"apps/mono/kustomization.yaml": {`"api-0.20.0"`, `"api-0.21.0"`},
				"apps/build/values.yaml":       {"'03300207'", "'03300208'"},
			})
			if diff := cmp.Diff(want, remote.Files(t, hash)); diff != "" {
				t.Errorf("grouped branch (-want +got):\n%s", diff)
			}
		})
	}
}

// openedPR is one entry of the pull-requests output, as a workflow reads it.
type openedPR struct {
	Policy string `json:"policy"`
	Number int    `json:"number"`
	URL    string `json:"url"`
	Action string `json:"action"`
}
