package config_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/origin/origintest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

const chartUser, chartPass = "chart-reader", "chart-pass-5521"

var chartAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(chartUser+":"+chartPass))

// webRepo serves the web chart (an index.yaml and its archive, at a
// relative URL) for every Host it is asked for, asking the hosts in
// private for the test's credentials.
func webRepo(t *testing.T, private ...string) *origintest.Server {
	t.Helper()
	archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n    - name: web\n      version: 1.0.0\n      urls: [web-1.0.0.tgz]\n      digest: %s\n", helmtest.Digest(archive))
	return origintest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); slices.Contains(private, r.Host) && (!ok || u != chartUser || p != chartPass) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/index.yaml":
			_, _ = w.Write([]byte(index))
		case "/web-1.0.0.tgz":
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
}

// fromSource is a spec.chart of web 1.0.0 from the HelmRepository
// flux-system/source.
func fromSource(source string) string {
	return "  chart:\n    spec:\n      chart: web\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: " + source + ", namespace: flux-system}\n"
}

// privateHost asks the requests for host for the test's credentials.
func privateHost(h http.Handler, host string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); r.Host == host && (!ok || u != chartUser || p != chartPass) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// FERRY_REGISTRY_CHARTS_EXAMPLE_COM_* are charts.example.com's variables,
// never charts-example.com's: they are read for charts-example.com
// (their former spelling, with a warning) only when no chart source of
// the repository is at charts.example.com. The hosts are reached through
// an HTTP proxy that records the Host of each request.
func TestHelmSourceCredentialsCollidingHosts(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME": chartUser,
		"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_PASSWORD": chartPass,
	}
	for _, tc := range []struct {
		name string
		// fleet is the URL of helmFleet's sources; dashed adds a source
		// dashed at http://charts-example.com.
		fleet    string
		dashed   bool
		private  string
		want     map[string][]string
		warnings []string
	}{
		{name: "both hosts configured", fleet: "http://charts.example.com", dashed: true, private: "charts.example.com",
			want: map[string][]string{"charts.example.com": {chartAuth}, "charts-example.com": nil},
			warnings: []string{"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME is not read for host charts-example.com: that former spelling also stands for host charts.example.com; " +
				"name the variables of charts-example.com FERRY_REGISTRY_CHARTS__EXAMPLE_COM_USERNAME and _PASSWORD"}},
		{name: "only charts-example.com configured", fleet: "http://charts-example.com", private: "charts-example.com",
			want: map[string][]string{"charts.example.com": nil, "charts-example.com": {chartAuth}},
			warnings: []string{"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME and _PASSWORD are the former spelling for host charts-example.com, read while no other host spells the same way; " +
				"rename them FERRY_REGISTRY_CHARTS__EXAMPLE_COM_USERNAME and _PASSWORD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy := webRepo(t, tc.private)
			apps := map[string]string{"web.yaml": helmRelease("web", fromSource("charts"))}
			if tc.dashed {
				apps["dashed.yaml"] = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: dashed, namespace: flux-system}\nspec: {interval: 1h, url: \"http://charts-example.com\"}\n"
				apps["web2.yaml"] = helmRelease("web2", fromSource("dashed"))
			}
			proxyURL, err := url.Parse(proxy.URL)
			if err != nil {
				t.Fatal(err)
			}
			creds := images.NewEnvCredentials(func(k string) string { return env[k] })
			sources := helm.NewSources(helm.SourcesOptions{HTTPClient: &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}})
			repo, err := config.Load(t.Context(), testtree.New(t, helmFleet(tc.fleet, apps)), render.Options{HelmSources: sources, ChartCredentials: creds})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Render(t.Context(), mustTarget(t, repo, "apps")); err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for h := range tc.want {
				got[h] = proxy.AuthorizationsFor(h)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Authorization headers received by host (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.warnings, creds.Warnings()); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}
