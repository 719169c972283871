package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// The head of a pull request is data: what ferry reads outside the
// revision, which hosts it contacts, whose credentials go where, and
// which Providers hear of it are the base's to decide. These tests make
// a base, then a head that tries to widen each, and diff the two.

// url is the trap's address as an http URL.
func (tr *trap) url() string { return "http://" + tr.ln.Addr().String() }

// TestDiffNotifyBaseProviders: diff --notify sends through the base's
// Providers and Alerts. A head that points the Provider elsewhere and
// adds a Provider of its own reaches neither address; the base's
// Provider hears of the change.
func TestDiffNotifyBaseProviders(t *testing.T) {
	base, moved, added := newHookServer(t), newHookServer(t), newHookServer(t)
	r := newScenario(t)
	dir := r.dir
	notifications := func(addr, extra string) string {
		return "targets:\n  - {name: app, path: app}\nnotifications:\n  providers:\n    - {name: hook, type: generic, address: " + addr + "/base}\n" + extra +
			"  alerts:\n    - {name: all, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n"
	}
	r.write("ferry.yaml", notifications(base.URL, ""))
	r.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: apps}\ndata: {k: v}\n")
	b := r.commit("base")
	r.write("ferry.yaml", notifications(moved.URL, "    - {name: mine, type: generic, address: "+added.URL+"/head}\n")+
		"    - {name: mine, providerRef: {name: mine}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n")
	r.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: apps}\ndata: {k: v2}\n")
	h := r.commit("head: move the provider, add one")

	res := ferry(t, nil, "diff", "--repo", dir, "--base", b, "--head", h, "--notify")
	if res.code != 0 {
		t.Fatalf("exit %d:\n%s", res.code, res.stderr)
	}
	if got := base.take("/base"); len(got) != 1 || got[0].Reason != "DiffChanged" {
		t.Errorf("the base's Provider received %+v, want one DiffChanged", got)
	}
	if got := moved.take("/base"); len(got) > 0 {
		t.Errorf("the address the head moved the Provider to received %+v", got)
	}
	if got := added.take("/head"); len(got) > 0 {
		t.Errorf("the Provider the head added received %+v", got)
	}
}

// TestDiffSourcesFromBase: a head that maps a source to a folder outside
// the workspace (or to another checkout) is rendered with the base's
// sources:, and the report says so; a base mapping outside the workspace
// is an error naming it.
func TestDiffSourcesFromBase(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	testtree.Write(t, filepath.Join(ws, "app-repo"), map[string]string{
		"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-app-repo, namespace: apps}\ndata: {k: v}\n"})
	testtree.Write(t, filepath.Join(top, "outside"), map[string]string{
		"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: outside-canary-b41d, namespace: apps}\ndata: {k: outside-canary-b41d}\n"})
	dir := filepath.Join(ws, "fleet")
	r := scenarioIn(t, dir)
	fleet := helmtest.FluxFleet("prod", "apps", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, namespace: apps}\ndata: {k: v}\n"})
	fleet["clusters/prod/app.yaml"] = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app-repo, namespace: flux-system}
spec: {url: https://example.test/app, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec:
  path: ./deploy
  prune: true
  sourceRef: {kind: GitRepository, name: app-repo}
`
	fleet["ferry.yaml"] = "sources:\n  app-repo: ../app-repo\n"
	for k, v := range fleet {
		r.write(k, v)
	}
	b := r.commit("base")
	r.write("ferry.yaml", "sources:\n  app-repo: ../../outside\n")
	r.write("apps/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, namespace: apps}\ndata: {k: v2}\n")
	h := r.commit("head: map the source outside")

	res := ferry(t, nil, "diff", "--repo", dir, "--base", b, "--head", h, "--format", "json", "--workspace", ws)
	if res.code != 0 {
		t.Fatalf("exit %d:\n%s", res.code, res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, "outside-canary-b41d") {
		t.Errorf("the diff read the folder outside the workspace:\n%s", res.stdout)
	}
	if !strings.Contains(res.stdout, "ferry.yaml changes sources: the diff uses the base's") {
		t.Errorf("the report does not say the head's sources: were not used:\n%s", res.stdout)
	}

	// The same mapping at the base (trusted, and wrong) fails the run.
	r.write("apps/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, namespace: apps}\ndata: {k: v3}\n")
	h2 := r.commit("head 2")
	res = ferry(t, nil, "diff", "--repo", dir, "--base", h, "--head", h2, "--workspace", ws)
	if res.code != exitError || !strings.Contains(res.stderr, `ferry.yaml sources "app-repo": ../../outside is outside the workspace`) {
		t.Errorf("a base mapping outside the workspace: exit %d, want 2 naming it:\n%s", res.code, res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, "outside-canary-b41d") {
		t.Errorf("the outside folder was read")
	}
	// render (the checkout is trusted) refuses it too.
	res = ferry(t, nil, "render", "--repo", dir, "--workspace", ws)
	if res.code != exitError || !strings.Contains(res.stderr, "outside the workspace") {
		t.Errorf("render: exit %d, want 2 naming the workspace:\n%s", res.code, res.stderr)
	}
}

// chartPR is a one-cluster fleet whose apps target installs chart web
// from HelmRepository charts (at charts.URL), committed as the base, with
// files of the head written over it and committed. It returns the
// repository folder and both revisions.
func chartPR(t *testing.T, charts *helmtest.Repo, ferryYAML string, head map[string]string) (dir, base, h string) {
	t.Helper()
	fleet := helmtest.FluxFleet("prod", "apps", map[string]string{
		"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
		"charts.yaml": chartRepo("charts", charts.URL, ""),
		"web.yaml":    webRelease("web", "charts"),
	})
	if ferryYAML != "" {
		fleet["ferry.yaml"] = ferryYAML
	}
	r := newScenario(t)
	dir = r.dir
	for k, v := range fleet {
		r.write(k, v)
	}
	base = r.commit("base")
	for k, v := range head {
		r.write(k, v)
	}
	return dir, base, r.commit("head")
}

// chartRepo is the HelmRepository flux-system/name at u, with a
// secretRef when secret is set.
func chartRepo(name, u, secret string) string {
	s := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: " + name + ", namespace: flux-system}\nspec:\n  url: " + u + "\n"
	if secret != "" {
		s += "  secretRef: {name: " + secret + "}\n"
	}
	return s
}

// webRelease is the HelmRelease shop/name of chart web 1.0.0 from the
// HelmRepository repo.
func webRelease(name, repo string) string {
	return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + name + ", namespace: shop}\nspec:\n  chart:\n    spec:\n      chart: web\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: " + repo + ", namespace: flux-system}\n"
}

// TestDiffNewChartSources: a chart source the base does not have is not
// fetched: the release is reported as not rendered, naming the URL and
// how to allow it, and the rest of the diff goes on. A source whose URL
// the head changed is new too. A host the base's network.allowHosts
// lists is fetched, without credentials.
func TestDiffNewChartSources(t *testing.T) {
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	other := helmtest.NewRepo(t, helmtest.RepoOptions{})
	other.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	trap := newTrap(t)
	creds := map[string]string{"FERRY_SECRET_CREDS_USERNAME": "u", "FERRY_SECRET_CREDS_PASSWORD": "chart-pw-6a1f"}
	otherHost := strings.TrimPrefix(other.URL, "http://")

	for _, tc := range []struct {
		name      string
		ferryYAML string
		head      map[string]string
		vars      map[string]string
		skipped   string // the release the report says is not rendered, with the URL
		fetched   bool   // whether other was fetched from
		// unrendered is an object of the base's release the head
		// cannot render, left out of the comparison.
		unrendered string
	}{
		{name: "a new source", head: map[string]string{
			"apps/evil.yaml": chartRepo("evil", trap.url(), "") + "---\n" + webRelease("evil", "evil")},
			skipped: "not rendered: new chart source " + trap.url()},
		{name: "a source whose URL the head changed", head: map[string]string{
			"apps/charts.yaml": chartRepo("charts", trap.url(), "")},
			skipped: "not rendered: new chart source " + trap.url(), unrendered: "Deployment/shop/web"},
		{name: "a new source on an allowed host gets no credentials", ferryYAML: "network:\n  allowHosts: [\"" + otherHost + "\"]\n",
			head: map[string]string{"apps/other.yaml": chartRepo("other", other.URL, "creds") + "---\n" + webRelease("other", "other")},
			vars: creds, fetched: true},
		{name: "allowHosts added by the head itself", head: map[string]string{
			"ferry.yaml":      "network:\n  allowHosts: [\"" + otherHost + "\"]\n",
			"apps/other.yaml": chartRepo("other", other.URL, "") + "---\n" + webRelease("other", "other")},
			skipped: "not rendered: new chart source " + other.URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := other.Requests("/index.yaml")
			dir, b, h := chartPR(t, charts, tc.ferryYAML, tc.head)
			res := ferry(t, tc.vars, "diff", "--repo", dir, "--base", b, "--head", h, "--format", "json")
			if res.code != 0 {
				t.Fatalf("exit %d:\n%s", res.code, res.stderr)
			}
			if n := trap.count.Load(); n > 0 {
				t.Errorf("%d connections to the host only the head names", n)
			}
			if tc.skipped != "" && !strings.Contains(res.stdout, tc.skipped) {
				t.Errorf("the report lacks %q:\n%s", tc.skipped, res.stdout)
			}
			// The objects of a release the head could not render are
			// left out, never "removed" (and pruned).
			var report struct {
				Targets []struct {
					Objects []struct {
						ID     struct{ Kind, Namespace, Name string }
						Action string
					}
					Unrendered []struct{ Kind, Namespace, Name string }
				}
			}
			if err := json.Unmarshal([]byte(res.stdout), &report); err != nil {
				t.Fatalf("the report is not JSON: %v", err)
			}
			var removed, unrendered []string
			for _, rt := range report.Targets {
				for _, o := range rt.Objects {
					if o.Action == "removed" {
						removed = append(removed, o.ID.Kind+"/"+o.ID.Namespace+"/"+o.ID.Name)
					}
				}
				for _, id := range rt.Unrendered {
					unrendered = append(unrendered, id.Kind+"/"+id.Namespace+"/"+id.Name)
				}
			}
			if len(removed) > 0 {
				t.Errorf("objects reported removed: %q", removed)
			}
			if tc.unrendered != "" && !slices.Contains(unrendered, tc.unrendered) {
				t.Errorf("not compared: %q, want %s among them", unrendered, tc.unrendered)
			}
			if fetched := other.Requests("/index.yaml") > before; fetched != tc.fetched {
				t.Errorf("fetched from the allowed host: %v, want %v", fetched, tc.fetched)
			}
			if n := other.AuthorizationSeen("/index.yaml") + other.AuthorizationSeen("/web-1.0.0.tgz"); n > 0 {
				t.Errorf("credentials were sent %d times to a source new in the head", n)
			}
			if strings.Contains(res.stdout+res.stderr, "chart-pw-6a1f") {
				t.Errorf("the password is in the output")
			}
		})
	}
}

// TestDiffLiveClusterAccessFromBase: a head cannot point a target at
// another kubeconfig (a file it commits, a variable or a context): with
// --live the base's access is used, here none, so the step's own
// --kubeconfig is the one tried.
func TestDiffLiveClusterAccessFromBase(t *testing.T) {
	trap := newTrap(t)
	r := newScenario(t)
	dir := r.dir
	r.write("ferry.yaml", "targets:\n  - {name: app, path: app}\n")
	r.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: apps}\ndata: {k: v}\n")
	b := r.commit("base")
	u, _ := url.Parse(trap.url())
	r.write("evil.kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"http://"+u.Host+"\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	r.write("ferry.yaml", "targets:\n  - {name: app, path: app, kubeconfig: evil.kubeconfig}\n")
	r.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: apps}\ndata: {k: v2}\n")
	h := r.commit("head: a kubeconfig of its own")
	missing := filepath.Join(t.TempDir(), "step.kubeconfig")
	res := ferry(t, nil, "diff", "--repo", dir, "--base", b, "--head", h, "--live", "--kubeconfig", missing, "--format", "json")
	if n := trap.count.Load(); n > 0 {
		t.Errorf("%d connections to the server of the head's kubeconfig", n)
	}
	if !strings.Contains(res.stdout+res.stderr, missing) {
		t.Errorf("the step's --kubeconfig was not the one used (exit %d):\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("ferry created %s", missing)
	}
}
