package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// helmFlagsRepo is a fleet whose apps target holds a HelmRelease of the
// chart web at version 1.0.0 of the HTTP chart repository url, in
// namespace ns; extra files are added to it.
func helmFlagsRepo(t *testing.T, url, ns string, extra ...string) string {
	files := helmtest.FluxFleet("prod", "apps", map[string]string{
		"release.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {interval: 1h, url: "` + url + `"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: ` + ns + `}
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: "1.0.0"
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
  values: {greeting: hi}
`,
	})
	for i := 0; i+1 < len(extra); i += 2 {
		files[extra[i]] = extra[i+1]
	}
	return testtree.New(t, files)
}

func webChartDir(t *testing.T) string {
	return testtree.New(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-config}
data: {greeting: {{ .Values.greeting | quote }}}
`,
	})
}

// Charts are kept across runs under $RUNNER_TOOL_CACHE (which
// actions/cache can keep), else the user cache folder, else --cache-dir:
// a second run fetches no archive.
func TestRenderChartCacheDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		vars func(dir string) map[string]string
		args func(dir string) []string
		at   string // where the cache is, under dir
	}{
		{"runner tool cache", func(dir string) map[string]string {
			return map[string]string{"RUNNER_TOOL_CACHE": dir, "HOME": filepath.Join(dir, "home")}
		}, nil, "ferry/charts"},
		{"user cache", func(dir string) map[string]string { return map[string]string{"HOME": dir} }, nil, ".cache/ferry/charts"},
		{"XDG", func(dir string) map[string]string {
			return map[string]string{"XDG_CACHE_HOME": dir, "HOME": "/nonexistent"}
		}, nil, "ferry/charts"},
		{"flag", func(dir string) map[string]string { return map[string]string{"RUNNER_TOOL_CACHE": "/nonexistent"} },
			func(dir string) []string { return []string{"--cache-dir", filepath.Join(dir, "mine")} }, "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
			charts.Add(t, webChartDir(t), "1.0.0")
			repo := helmFlagsRepo(t, charts.URL, "shop")
			dir := t.TempDir()
			args := append([]string{"render", "--repo", repo, "apps"}, func() []string {
				if tc.args == nil {
					return nil
				}
				return tc.args(dir)
			}()...)
			for range 2 {
				r := ferry(t, tc.vars(dir), args...)
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				if !strings.Contains(r.stdout, "name: web-config") || !strings.Contains(r.stdout, "greeting: hi") {
					t.Fatalf("the chart's ConfigMap is not rendered:\n%s", r.stdout)
				}
			}
			if n := charts.Requests("/web-1.0.0.tgz"); n != 1 {
				t.Errorf("web-1.0.0.tgz fetched %d times by two runs, want once", n)
			}
			if entries, err := os.ReadDir(filepath.Join(dir, tc.at)); err != nil || len(entries) == 0 {
				t.Errorf("nothing cached in %s (%v)", tc.at, err)
			}
		})
	}
}

// --helm-releases overrides ferry.yaml for every cluster, and refuses a
// value it does not know (exit 2, before anything is read).
func TestHelmReleasesFlag(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, webChartDir(t), "1.0.0")
	repo := helmFlagsRepo(t, charts.URL, "shop")
	cache := t.TempDir()
	r := ferry(t, nil, "render", "--repo", repo, "--cache-dir", cache, "--helm-releases", "controller", "apps")
	if r.code != 0 || strings.Contains(r.stdout, "web-config") || !strings.Contains(r.stdout, "kind: HelmRelease") {
		t.Errorf("--helm-releases controller: exit %d, the chart rendered or the HelmRelease left out:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := charts.Requests("/index.yaml"); n != 0 {
		t.Errorf("--helm-releases controller read the chart repository %d times", n)
	}
	r = ferry(t, nil, "render", "--repo", repo, "--cache-dir", cache, "--helm-releases", "helm", "apps")
	if r.code != 2 || !strings.Contains(r.stderr, "--helm-releases") || !strings.Contains(r.stderr, "render or controller") {
		t.Errorf("--helm-releases helm: exit %d, stderr %q; want 2 naming the flag and its values", r.code, r.stderr)
	}
}

// apply warns when the cluster serves another Kubernetes minor version
// than the one its HelmReleases were rendered for (ferry.yaml's
// kubeVersion, else ferry's client version, which the test control plane
// serves), and applies all the same.
func TestApplyWarnsOfKubeVersion(t *testing.T) {
	vars := applyVars(t)
	ns := cp.Namespace(t)
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, webChartDir(t), "1.0.0")
	for _, tc := range []struct {
		kubeVersion string
		warns       bool
	}{{"v1.20.3", true}, {"", false}} {
		var extra []string
		if tc.kubeVersion != "" {
			extra = []string{"ferry.yaml", "clusters:\n  prod:\n    kubeVersion: " + tc.kubeVersion + "\n"}
		}
		repo := helmFlagsRepo(t, charts.URL, ns, extra...)
		r := ferry(t, vars, "apply", "--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns,
			"--cache-dir", t.TempDir(), "--revision", "0123456789abcdef0123456789abcdef01234567", "apps")
		if r.code != 0 {
			t.Fatalf("kubeVersion %q: exit %d: %s", tc.kubeVersion, r.code, r.stderr)
		}
		warned := strings.Contains(r.stderr, "warning: cluster") && strings.Contains(r.stderr, "serves Kubernetes v1.37") &&
			strings.Contains(r.stderr, "rendered for "+tc.kubeVersion)
		if warned != tc.warns {
			t.Errorf("kubeVersion %q: warned %v, want %v; stderr:\n%s", tc.kubeVersion, warned, tc.warns, r.stderr)
		}
		if !strings.Contains(r.stdout, "ConfigMap/"+ns+"/web-config") {
			t.Errorf("kubeVersion %q: the chart's ConfigMap not applied:\n%s", tc.kubeVersion, r.stdout)
		}
	}
}

// A HelmRelease whose chart is in a source ferry does not fetch is
// rendered as an object, and render says on stderr that its chart was
// not rendered and why; the run succeeds, as for a skipped target.
func TestRenderSaysReleaseSkipped(t *testing.T) {
	t.Parallel()
	repo := testtree.New(t, helmtest.FluxFleet("prod", "apps", map[string]string{
		"release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: shop}
spec:
  interval: 10m
  chart:
    spec:
      chart: ./web
      sourceRef: {kind: Bucket, name: vendor, namespace: flux-system}
`,
	}))
	r := ferry(t, nil, "render", "--repo", repo, "apps")
	if r.code != 0 || !strings.Contains(r.stdout, "kind: HelmRelease") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if want := `ferry: target "apps": HelmRelease/shop/web not rendered: chart ./web: source Bucket/flux-system/vendor`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
}
