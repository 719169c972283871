package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// chartVersions are the versions of the bump tests' chart, as published:
// a minor, a release candidate and a major above the pinned 1.0.0.
var chartVersions = []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0"}

// webChartAt is the chart "web" at version: a Deployment whose image tag
// is the version, and a ConfigMap of a value a Secret gives.
func webChartAt(version string) map[string]string {
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: " + version + "\nhome: https://charts.example.test/web\nsources: [https://git.example.test/web]\n" +
			"annotations:\n  artifacthub.io/changes: |\n    - kind: changed\n      description: web " + version + " moves its image\n",
		"values.yaml": "image: {repository: registry.example.test/web, tag: \"" + version + "\"}\ntoken: none\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {helm.sh/chart: "web-{{ .Chart.Version }}"}
spec:
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - name: web
          image: {{ .Values.image.repository }}:{{ .Values.image.tag }}
`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  token: {{ .Values.token | quote }}
  version: {{ .Chart.Version | quote }}
`,
	}
}

// chartBumpServers are the chart sources of the bump tests: a real
// docker-registry (basic auth) holding charts/web, and an HTTP chart
// repository holding web, both at chartVersions.
type chartBumpServers struct {
	reg  *registrytest.Registry
	http *helmtest.Repo
}

func startChartBumpServers(t *testing.T) *chartBumpServers {
	t.Helper()
	s := &chartBumpServers{reg: registrytest.Start(t), http: helmtest.NewRepo(t, helmtest.RepoOptions{})}
	for _, v := range chartVersions {
		s.publish(t, v)
	}
	return s
}

// publish pushes the chart at version to both sources; a broken one
// fails to render.
func (s *chartBumpServers) publish(t *testing.T, version string, broken ...bool) {
	t.Helper()
	files := webChartAt(version)
	if len(broken) > 0 && broken[0] {
		files["templates/broken.yaml"] = "{{ fail \"web " + version + " cannot render\" }}\n"
	}
	dir := testtree.New(t, files)
	archive, md := helmtest.Package(t, dir, version)
	helmtest.Push(t, s.reg.Host, "charts", archive, s.reg.Username, s.reg.Password)
	s.http.AddArchive(t, md, archive, helmtest.Digest(archive))
}

// env: the OCI sources' secretRef, as a CI job's variables; the age key
// of the scenario is added by the scenario.
func (s *chartBumpServers) env() map[string]string {
	return map[string]string{
		"FERRY_SECRET_REGISTRY__CREDS_USERNAME": s.reg.Username,
		"FERRY_SECRET_REGISTRY__CREDS_PASSWORD": s.reg.Password,
	}
}

// chartBumpSecret is the value the Secret web-token gives the releases'
// values: it must reach no output of bump.
const chartBumpSecret = "s3cr3t-chart-token-value"

// chartFleet is a Flux repository whose app folder pins the chart web at
// 1.0.0 every way ferry bump moves: a HelmRelease on an OCI
// HelmRepository (web-oci, taking a value from a Secret) and one on an
// HTTP HelmRepository (web-http), an OCIRepository behind a chartRef
// (web-chart, used by web-ref), a HelmChart behind a chartRef (web-hc,
// used by web-hcref); and a release whose version is a range (web-range).
func (s *chartBumpServers) chartFleet() map[string]string {
	release := appsRelease
	app := `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: oci-charts
  namespace: apps
spec:
  type: oci
  url: oci://` + s.reg.Host + `/charts
  secretRef: {name: registry-creds}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: http-charts
  namespace: apps
spec:
  url: ` + s.http.URL + `
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web-chart
  namespace: apps
spec:
  url: oci://` + s.reg.Host + `/charts/web
  ref:
    tag: "1.0.0" # the chart of web-ref
  secretRef: {name: registry-creds}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: web-hc
  namespace: apps
spec:
  chart: web
  version: 1.0.0
  sourceRef: {kind: HelmRepository, name: http-charts}
---
apiVersion: v1
kind: Secret
metadata:
  name: web-token
  namespace: apps
stringData:
  token: ` + chartBumpSecret + `
` + release("web-oci", `  chart:
    spec:
      chart: web
      version: 1.0.0
      sourceRef: {kind: HelmRepository, name: oci-charts}
  valuesFrom:
    - {kind: Secret, name: web-token, valuesKey: token, targetPath: token}
`) + release("web-http", `  chart:
    spec:
      chart: web
      version: '1.0.0'
      sourceRef:
        kind: HelmRepository
        name: http-charts
`) + release("web-ref", `  chartRef: {kind: OCIRepository, name: web-chart}
`) + release("web-hcref", `  chartRef: {kind: HelmChart, name: web-hc}
`) + release("web-range", `  chart:
    spec:
      chart: web
      version: ">=1.0.0 <2.0.0"
      sourceRef: {kind: HelmRepository, name: http-charts}
`)
	return helmtest.FluxFleet("prod", "apps", map[string]string{
		"kustomization.yaml": "resources: [namespace.yaml, app.yaml]\n",
		"namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
		"app.yaml":           app,
	})
}

// appsRelease is a HelmRelease document of the namespace apps, its spec
// the lines of spec after its interval.
func appsRelease(name, spec string) string {
	return `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ` + name + `
  namespace: apps
spec:
  interval: 10m
` + spec
}

// chartScenario is the chart fleet, committed, with the servers'
// variables.
func chartScenario(t *testing.T, s *chartBumpServers) *scenario {
	t.Helper()
	sc := newScenario(t)
	sc.writeAll(s.chartFleet())
	sc.set(s.env())
	sc.commit("fleet")
	return sc
}

type dryRunJSON struct {
	Updates []struct {
		Key     string `json:"key"`
		Kind    string `json:"kind"`
		Changes []struct {
			File    string   `json:"file"`
			Line    int      `json:"line"`
			Object  string   `json:"object"`
			Objects []string `json:"objects"`
			Field   string   `json:"field"`
			Old     string   `json:"old"`
			New     string   `json:"new"`
		} `json:"changes"`
		Diff *struct {
			Targets []struct {
				Name    string `json:"name"`
				Objects []struct {
					ID struct {
						Kind string `json:"kind"`
						Name string `json:"name"`
					} `json:"id"`
					Diff string `json:"diff"`
				} `json:"objects"`
			} `json:"targets"`
		} `json:"diff"`
		RenderError string `json:"renderError"`
		Notes       []struct {
			Chart, Version, Home string
			Changes              []string
		} `json:"notes"`
	} `json:"updates"`
	Errors   []string `json:"errors"`
	Floating []string `json:"floating"`
}

// parseDryRun reads the JSON of bump --dry-run --format json.
func parseDryRun(t *testing.T, stdout string) dryRunJSON {
	t.Helper()
	var got dryRunJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return got
}

// moves lists a dry run's changes as "object field old->new file:line".
func (d dryRunJSON) moves() []string {
	var out []string
	for _, u := range d.Updates {
		for _, c := range u.Changes {
			out = append(out, fmt.Sprintf("%s %s %s->%s %s:%d", strings.Join(c.Objects, "+"), c.Field, c.Old, c.New, c.File, c.Line))
		}
	}
	sort.Strings(out)
	return out
}

// noSecret fails the test when text holds the Secret's value or the
// registry's password, in clear or in base64.
func noSecret(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range append(secrets, chartBumpSecret) {
		for _, enc := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawStdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(text, enc) {
				t.Errorf("%s holds a secret value (%q)", what, enc)
			}
		}
	}
}

// TestBumpCharts moves the chart versions of the fleet against a real
// docker-registry and an HTTP chart repository: each pinned 1.0.0 to
// 1.1.0 (not the release candidate, not 2.0.0), only those lines; a
// range left alone but said to float; a ferry.yaml rule allowing any
// newer version moving the OCI ones to 2.0.0.
func TestBumpCharts(t *testing.T) {
	srv := startChartBumpServers(t)
	insecure := []string{"--insecure-registry", srv.reg.Host}

	t.Run("dry run", func(t *testing.T) {
		sc := chartScenario(t, srv)
		before := readTree(t, sc.dir)
		res := sc.ferry(append([]string{"bump", "--dry-run", "--format", "json", "--repo", sc.dir}, insecure...)...)
		if res.code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s", res.code, res.stderr)
		}
		got := parseDryRun(t, res.stdout)
		want := []string{
			"HelmChart/apps/web-hc spec.version 1.0.0->1.1.0 apps/app.yaml:38",
			"HelmRelease/apps/web-http spec.chart.spec.version 1.0.0->1.1.0 apps/app.yaml:74",
			"HelmRelease/apps/web-oci spec.chart.spec.version 1.0.0->1.1.0 apps/app.yaml:59",
			"OCIRepository/apps/web-chart spec.ref.tag 1.0.0->1.1.0 apps/app.yaml:27",
		}
		if diff := cmp.Diff(want, got.moves()); diff != "" {
			t.Errorf("moves (-want +got):\n%s", diff)
		}
		if len(got.Floating) != 1 || !strings.Contains(got.Floating[0], "HelmRelease/apps/web-range") || !strings.Contains(got.Floating[0], "1.1.0") {
			t.Errorf("floating: %q", got.Floating)
		}
		if len(got.Errors) != 0 {
			t.Errorf("errors: %q", got.Errors)
		}
		// One update per chart source; each renders the new image of
		// the Deployments of its releases, and of those alone.
		wantDeployments := map[string][]string{
			"chart oci://" + srv.reg.Host + "/charts web":     {"web-oci"},
			"chart oci://" + srv.reg.Host + "/charts/web web": {"web-ref"},
			"chart " + srv.http.URL + " web":                  {"web-hcref", "web-http"},
		}
		if len(got.Updates) != len(wantDeployments) {
			t.Errorf("%d updates, want %d", len(got.Updates), len(wantDeployments))
		}
		tokenLines := 0
		for _, u := range got.Updates {
			if u.Diff == nil || u.RenderError != "" {
				t.Errorf("%s: not rendered: %q", u.Key, u.RenderError)
				continue
			}
			var deployments []string
			for _, tg := range u.Diff.Targets {
				for _, o := range tg.Objects {
					if o.ID.Kind == "Deployment" && strings.Contains(o.Diff, "\n+      - image: registry.example.test/web:1.1.0\n") {
						deployments = append(deployments, o.ID.Name)
					}
				}
			}
			// The ConfigMap of web-oci changes beside the value its
			// Secret gives: that line is in the diff, masked.
			for _, tg := range u.Diff.Targets {
				for _, o := range tg.Objects {
					if o.ID.Name == "web-oci-config" && strings.Contains(o.Diff, "\n   token: ") {
						tokenLines++
					}
				}
			}
			if diff := cmp.Diff(wantDeployments[u.Key], deployments); diff != "" {
				t.Errorf("%s: Deployments moving to the 1.1.0 image (-want +got):\n%s", u.Key, diff)
			}
			if len(u.Notes) != 1 || u.Notes[0].Home != "https://charts.example.test/web" || len(u.Notes[0].Changes) != 1 || !strings.Contains(u.Notes[0].Changes[0], "web 1.1.0 moves its image") {
				t.Errorf("%s: notes %+v", u.Key, u.Notes)
			}
		}
		if tokenLines != 1 {
			t.Errorf("web-oci-config's diff shows its token line in %d updates, want 1", tokenLines)
		}
		if diff := cmp.Diff(before, readTree(t, sc.dir)); diff != "" {
			t.Errorf("--dry-run changed files:\n%s", diff)
		}
		noSecret(t, "stdout", res.stdout, srv.reg.Password)
		noSecret(t, "stderr", res.stderr, srv.reg.Password)

		// The text and markdown forms say the same.
		for _, f := range []string{"text", "markdown"} {
			out := sc.ferry(append([]string{"bump", "--dry-run", "--format", f, "--repo", sc.dir}, insecure...)...)
			if out.code != exitOK || !strings.Contains(out.stdout, "registry.example.test/web:1.1.0") || !strings.Contains(out.stdout, "1.0.0") {
				t.Errorf("--format %s: exit %d\n%s\n%s", f, out.code, out.stdout, out.stderr)
			}
			noSecret(t, f, out.stdout+out.stderr, srv.reg.Password)
		}
	})

	t.Run("plain run rewrites only the version lines", func(t *testing.T) {
		sc := chartScenario(t, srv)
		before := readTree(t, sc.dir)
		summary := filepath.Join(t.TempDir(), "summary")
		vars := sc.vars()
		vars["GITHUB_ACTIONS"], vars["GITHUB_STEP_SUMMARY"], vars["GITHUB_OUTPUT"] = "true", summary, filepath.Join(t.TempDir(), "output")
		res := ferry(t, vars, append([]string{"bump", "--repo", sc.dir}, insecure...)...)
		if res.code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s", res.code, res.stderr)
		}
		md, err := os.ReadFile(summary)
		if err != nil || !strings.Contains(string(md), "### ferry bump: charts\n") ||
			!strings.Contains(string(md), "| `apps/app.yaml:59` | HelmRelease/apps/web-oci | `web oci://"+srv.reg.Host+"/charts` | `1.0.0` → `1.1.0` |") ||
			!strings.Contains(string(md), "HelmRelease/apps/web-range (apps/app.yaml:107): range") {
			t.Errorf("step summary (%v):\n%s", err, md)
		}
		app := before["apps/app.yaml"]
		for _, e := range [][2]string{
			{`tag: "1.0.0" # the chart of web-ref`, `tag: "1.1.0" # the chart of web-ref`},
			{"  chart: web\n  version: 1.0.0\n", "  chart: web\n  version: 1.1.0\n"},
			{"      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: oci-charts}", "      version: 1.1.0\n      sourceRef: {kind: HelmRepository, name: oci-charts}"},
			{"      version: '1.0.0'\n", "      version: '1.1.0'\n"},
		} {
			if !strings.Contains(app, e[0]) {
				t.Fatalf("fixture has no %q", e[0])
			}
			app = strings.Replace(app, e[0], e[1], 1)
		}
		before["apps/app.yaml"] = app
		if diff := cmp.Diff(before, readTree(t, sc.dir)); diff != "" {
			t.Errorf("repository (-want +got):\n%s", diff)
		}
		again := sc.ferry(append([]string{"bump", "--dry-run", "--repo", sc.dir}, insecure...)...)
		if again.code != exitOK || strings.Contains(again.stdout, "+++") {
			t.Errorf("second run: exit %d\n%s\n%s", again.code, again.stdout, again.stderr)
		}
	})

	t.Run("a pull request moving an OCIRepository's tag keeps its credentials", func(t *testing.T) {
		sc := chartScenario(t, srv)
		base := sc.repo().Tip(t, "main").Hash
		sc.replace("apps/app.yaml", `tag: "1.0.0"`, `tag: "1.1.0"`)
		head := sc.commit("the tag")
		res := sc.ferry(append([]string{"diff", "--repo", sc.dir, "--base", base, "--head", head}, insecure...)...)
		if res.code != exitOK || !strings.Contains(res.stdout, "registry.example.test/web:1.1.0") {
			t.Errorf("diff of the tag: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		// Any other change of its spec withholds them.
		sc.replace("apps/app.yaml", "url: oci://"+srv.reg.Host+"/charts/web\n", "url: oci://"+srv.reg.Host+"/charts/web\n  interval: 5m\n")
		head = sc.commit("the tag and the interval")
		res = sc.ferry(append([]string{"diff", "--repo", sc.dir, "--base", base, "--head", head}, insecure...)...)
		if res.code != exitError || !strings.Contains(res.stdout+res.stderr, "the registry refused access without credentials") {
			t.Errorf("diff of the tag and another field: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
	})

	t.Run("a rule allowing any newer version", func(t *testing.T) {
		sc := chartScenario(t, srv)
		sc.write("ferry.yaml", "charts:\n  - url: oci://"+srv.reg.Host+"/*\n    range: \">=1.0.0\"\n")
		sc.commit("rule")
		res := sc.ferry(append([]string{"bump", "--dry-run", "--format", "json", "--diff=false", "--repo", sc.dir}, insecure...)...)
		if res.code != exitOK {
			t.Fatalf("exit %d\nstderr:\n%s", res.code, res.stderr)
		}
		got := parseDryRun(t, res.stdout)
		want := []string{
			"HelmChart/apps/web-hc spec.version 1.0.0->1.1.0 apps/app.yaml:38",
			"HelmRelease/apps/web-http spec.chart.spec.version 1.0.0->1.1.0 apps/app.yaml:74",
			"HelmRelease/apps/web-oci spec.chart.spec.version 1.0.0->2.0.0 apps/app.yaml:59",
			"OCIRepository/apps/web-chart spec.ref.tag 1.0.0->2.0.0 apps/app.yaml:27",
		}
		if diff := cmp.Diff(want, got.moves()); diff != "" {
			t.Errorf("moves (-want +got):\n%s", diff)
		}
	})
}

// chartBumpPR is a bump pull request as a forge shows it.
type chartBumpPR struct {
	number      int
	title, body string
	labels      []string
	comments    []string
}

// chartForge runs bump --pr of a chart scenario against one forge.
type chartForge struct {
	name  string
	env   func(sc *scenario) map[string]string      // the forge's variables; pushes main
	pulls func(t *testing.T) map[string]chartBumpPR // open pull requests by head branch
}

func githubChartForge(t *testing.T) chartForge {
	gh := githubtest.New(t)
	token := gh.AddUser("ferry-bot")
	gh.AddRepo("org", "gitops")
	return chartForge{
		name: "github",
		env: func(sc *scenario) map[string]string {
			local := sc.repo()
			local.BareRemote(t, "origin")
			local.PushHead(t, "origin", "main", gittest.Auth{})
			return map[string]string{"GITHUB_API_URL": gh.URL, "GITHUB_REPOSITORY": "org/gitops", "GITHUB_TOKEN": token}
		},
		pulls: func(t *testing.T) map[string]chartBumpPR {
			out := map[string]chartBumpPR{}
			for _, p := range gh.PullRequests("org", "gitops") {
				pr := chartBumpPR{number: p.Number, title: p.Title, body: p.Body, labels: gh.Labels("org", "gitops", p.Number)}
				for _, c := range gh.Comments("org", "gitops", p.Number) {
					pr.comments = append(pr.comments, c.Body)
				}
				out[p.PullRequest.Head] = pr
			}
			return out
		},
	}
}

func giteaChartForge(t *testing.T) chartForge {
	g := giteatest.Require(t)
	bot := giteatest.Unique("ferry-bot")
	token := g.CreateUser(t, bot)
	name := giteatest.Unique("gitops")
	g.CreateRepo(t, bot, name)
	return chartForge{
		name: "gitea",
		env: func(sc *scenario) map[string]string {
			local := sc.repo()
			local.AddRemote(t, "origin", g.CloneURL(bot, name))
			local.PushHead(t, "origin", "main", gittest.Auth{User: bot, Password: token})
			g.WaitPushed(t, bot, name, "main", local.Tip(t, "main").Hash)
			return map[string]string{
				"GITEA_ACTIONS": "true", "GITHUB_SERVER_URL": strings.TrimSuffix(g.URL, "/"), "GITHUB_API_URL": g.URL + "api/v1",
				"GITHUB_REPOSITORY": bot + "/" + name, "GITHUB_TOKEN": token,
			}
		},
		pulls: func(t *testing.T) map[string]chartBumpPR {
			c := g.Client(t, token)
			out := map[string]chartBumpPR{}
			for _, p := range g.OpenPullRequests(t, token, bot, name) {
				pr := chartBumpPR{number: int(p.Number), title: p.Title, body: p.Body}
				labels, _, err := c.GetIssueLabels(bot, name, p.Number, gitea.ListLabelsOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range labels {
					pr.labels = append(pr.labels, l.Name)
				}
				for _, cm := range g.Comments(t, token, bot, name, p.Number) {
					pr.comments = append(pr.comments, cm.Body)
				}
				out[p.Head] = pr
			}
			return out
		},
	}
}

// TestBumpChartPullRequests opens the chart bumps of the fleet as pull
// requests on Gitea and on the GitHub test server: one per chart source,
// each body holding the rendered change of its Deployments and no secret
// value; a re-run after 1.1.1 is published updates the same pull
// requests; a version that does not render opens its pull request with
// the failure first and the "ferry: render fails" label, which a run
// that renders takes off again.
func TestBumpChartPullRequests(t *testing.T) {
	for _, mk := range []func(*testing.T) chartForge{githubChartForge, giteaChartForge} {
		f := mk(t)
		t.Run(f.name, func(t *testing.T) {
			srv := startChartBumpServers(t) // its own: the test publishes
			sc := chartScenario(t, srv)
			vars := sc.vars()
			for k, v := range f.env(sc) {
				vars[k] = v
			}
			bump := func() {
				t.Helper()
				args := []string{"bump", "--pr", "--repo", sc.dir, "--insecure-registry", srv.reg.Host}
				if f.name == "github" {
					args = append(args, "--images=false") // charts alone
				}
				res := ferry(t, vars, args...)
				if res.code != exitOK {
					t.Fatalf("bump --pr: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
				}
				noSecret(t, "bump --pr output", res.stdout+res.stderr, srv.reg.Password)
			}
			branch := func(source string) string {
				return "ferry/bump/chart/" + strings.NewReplacer("http://", "", "oci://", "", ":", "-", "/", "-").Replace(source) + "/web"
			}
			ociRepo, ociChart, httpRepo := "oci://"+srv.reg.Host+"/charts", "oci://"+srv.reg.Host+"/charts/web", srv.http.URL
			check := func(pulls map[string]chartBumpPR, version string, deployments map[string][]string) {
				t.Helper()
				if len(pulls) != 3 {
					t.Fatalf("%d pull requests, want 3: %v", len(pulls), pulls)
				}
				for source, deps := range deployments {
					p, ok := pulls[branch(source)]
					if !ok {
						t.Errorf("no pull request from %s among %v", branch(source), pulls)
						continue
					}
					if want := "Bump web chart from " + source + " to " + version; p.title != want {
						t.Errorf("%s: title %q, want %q", source, p.title, want)
					}
					for _, d := range deps {
						if !strings.Contains(p.body, "Deployment.apps/apps/"+d) || !strings.Contains(p.body, "+      - image: registry.example.test/web:"+version) {
							t.Errorf("%s: body lacks Deployment %s's change to %s:\n%s", source, d, version, p.body)
						}
					}
					if !strings.Contains(p.body, "web "+version+" moves its image") {
						t.Errorf("%s: body lacks the chart's changes:\n%s", source, p.body)
					}
					if len(p.labels) != 0 {
						t.Errorf("%s: labels %q", source, p.labels)
					}
					noSecret(t, source+" pull request", p.title+p.body+strings.Join(p.comments, ""), srv.reg.Password)
				}
			}
			deployments := map[string][]string{ociRepo: {"web-oci"}, ociChart: {"web-ref"}, httpRepo: {"web-hcref", "web-http"}}
			bump()
			first := f.pulls(t)
			check(first, "1.1.0", deployments)

			// 1.1.1 is published: the same pull requests, moved on.
			srv.publish(t, "1.1.1")
			bump()
			second := f.pulls(t)
			check(second, "1.1.1", deployments)
			for head, p := range second {
				if first[head].number != p.number {
					t.Errorf("%s: pull request #%d, was #%d", head, p.number, first[head].number)
				}
			}

			// 1.2.0 does not render: its pull requests say so first, and
			// carry the label; 1.2.1 renders, and the label goes.
			srv.publish(t, "1.2.0", true)
			bump()
			for head, p := range f.pulls(t) {
				if !strings.HasPrefix(p.body, "> [!CAUTION]\n> **This change does not render**") || !strings.Contains(p.body, "web 1.2.0 cannot render") {
					t.Errorf("%s: body does not start with the failure:\n%s", head, p.body)
				}
				if diff := cmp.Diff([]string{"ferry: render fails"}, p.labels); diff != "" {
					t.Errorf("%s: labels (-want +got):\n%s", head, diff)
				}
				if !strings.Contains(p.title, " to 1.2.0") {
					t.Errorf("%s: title %q", head, p.title)
				}
			}
			srv.publish(t, "1.2.1")
			bump()
			check(f.pulls(t), "1.2.1", deployments)
		})
	}
}

// TestBumpChartBadInputs: each chart version that cannot move is named
// with its object and line (exit 2), and the others still move: an
// index listing a version that is no version (a warning), a chart the
// registry does not have, a registry refusing the credentials, a range
// matching no version, a marker whose range does not parse.
func TestBumpChartBadInputs(t *testing.T) {
	srv := startChartBumpServers(t)
	// The index also lists a version that is no semantic version.
	indexFile := filepath.Join(srv.http.Dir, "index.yaml")
	index, err := os.ReadFile(indexFile)
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]any
	if err := yaml.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	entries := idx["entries"].(map[string]any)["web"].([]any)
	bad := maps.Clone(entries[0].(map[string]any))
	bad["version"] = "1.1.0.beta"
	idx["entries"].(map[string]any)["web"] = append(entries, bad)
	if index, err = yaml.Marshal(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(indexFile, index, 0o644); err != nil {
		t.Fatal(err)
	}

	sc := chartScenario(t, srv)
	release := func(name, repo, chart, version string) string {
		return appsRelease(name, `  chart:
    spec:
      chart: `+chart+`
      version: `+version+`
      sourceRef: {kind: HelmRepository, name: `+repo+`}
`)
	}
	sc.write("apps/bad.yaml", `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: refused
  namespace: apps
spec:
  type: oci
  url: oci://`+srv.reg.Host+`/charts
  secretRef: {name: wrong-creds}
`+release("gone", "oci-charts", "gone", "1.0.0")+
		release("refused", "refused", "web", "1.0.0")+
		release("nothing", "http-charts", "web", `1.0.0 # {"$chartpolicy": "^5.0.0"}`)+
		release("badmarker", "http-charts", "web", `1.0.0 # {"$chartpolicy": "not a range"}`))
	sc.replace("apps/kustomization.yaml", "app.yaml]", "app.yaml, bad.yaml]")
	// A target that does not build: a warning, and the others scanned.
	sc.write("clusters/prod/broken.yaml", helmtest.FluxKustomization("broken", "./broken", ""))
	sc.write("broken/kustomization.yaml", "resources: [missing.yaml]\n")
	sc.commit("bad inputs")
	vars := sc.vars()
	vars["FERRY_SECRET_WRONG__CREDS_USERNAME"] = srv.reg.Username
	vars["FERRY_SECRET_WRONG__CREDS_PASSWORD"] = "not-the-password"

	res := ferry(t, vars, "bump", "--dry-run", "--format", "json", "--diff=false", "--repo", sc.dir, "--insecure-registry", srv.reg.Host)
	if res.code != exitError {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", res.code, exitError, res.stderr)
	}
	got := parseDryRun(t, res.stdout)
	// The good ones still move.
	if n := len(got.moves()); n != 4 {
		t.Errorf("%d moves, want the fleet's 4: %q", n, got.moves())
	}
	wantErrors := map[string]string{
		"apps/bad.yaml:21: HelmRelease/apps/gone: ":      "does not exist",
		"apps/bad.yaml:34: HelmRelease/apps/refused: ":   "refused the credentials",
		"apps/bad.yaml:47: HelmRelease/apps/nothing: ":   `the $chartpolicy marker: range "^5.0.0" matches none of the versions of chart web`,
		"apps/bad.yaml:60: HelmRelease/apps/badmarker: ": `marker {"$chartpolicy": "not a range"}: range "not a range"`,
	}
	for prefix, why := range wantErrors {
		found := false
		for _, e := range got.Errors {
			found = found || strings.Contains(e, prefix) && strings.Contains(e, why)
		}
		if !found {
			t.Errorf("no error %q ... %q among:\n%s", prefix, why, strings.Join(got.Errors, "\n"))
		}
	}
	if len(got.Errors) != len(wantErrors) {
		t.Errorf("%d errors, want %d:\n%s", len(got.Errors), len(wantErrors), strings.Join(got.Errors, "\n"))
	}
	for _, want := range []string{"chart version(s) could not be moved", "HelmRelease/apps/gone", "HelmRelease/apps/badmarker"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if !strings.Contains(res.stderr, "ferry: warning: target broken does not build, so its chart versions are not scanned: ") {
		t.Errorf("stderr does not warn of the target that does not build:\n%s", res.stderr)
	}
	if !strings.Contains(res.stderr, `"1.1.0.beta", not semantic versions; skipped`) || !strings.Contains(res.stderr, "HelmRelease/apps/web-http (apps/app.yaml:74)") {
		t.Errorf("stderr does not warn of the bad index version with its object and line:\n%s", res.stderr)
	}
	noSecret(t, "output", res.stdout+res.stderr, srv.reg.Password, "not-the-password")

	// Without --dry-run the good ones are written, and the run still
	// fails.
	plain := ferry(t, vars, "bump", "--repo", sc.dir, "--insecure-registry", srv.reg.Host)
	if plain.code != exitError || strings.Count(sc.read("apps/app.yaml"), "1.1.0") != 4 {
		t.Errorf("plain run: exit %d, app.yaml:\n%s\nstderr:\n%s", plain.code, sc.read("apps/app.yaml"), plain.stderr)
	}
}
