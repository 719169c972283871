package config_test

import (
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// A spec.chartRef to a HelmChart renders the chart the HelmChart names:
// its chart, version range and sourceRef (in the HelmChart's namespace),
// and its valuesFiles.
func TestRenderHelmReleaseFromHelmChart(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	chart := helmtest.WebChart("")
	chart["prod-values.yaml"] = "greeting: from-prod-values\n"
	charts.Add(t, testtree.New(t, chart), "1.0.0", "1.3.0", "2.0.0")
	repo := load(t, testtree.New(t, helmFleet(charts.URL, map[string]string{
		"web.yaml": helmRelease("web", "  chartRef: {kind: HelmChart, name: web, namespace: flux-system}\n"),
		"chart.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 1h
  chart: web
  version: "~1.0 || ~1.3"
  sourceRef: {kind: HelmRepository, name: charts}
  valuesFiles: [values.yaml, prod-values.yaml]
`,
	})))
	apps := mustTarget(t, repo, "apps")
	got := renderedData(t, repo, apps, "shop", "web-config")
	if got["chart"] != "1.3.0" || got["greeting"] != "from-prod-values" {
		t.Errorf("rendered chart %q greeting %q, want 1.3.0 (the newest of the HelmChart's range) and the HelmChart's valuesFiles", got["chart"], got["greeting"])
	}
	res, err := repo.Render(t.Context(), apps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Releases) != 1 || res.Releases[0].Chart != "web" || res.Releases[0].Version != "1.3.0" {
		t.Errorf("releases %+v, want web 1.3.0", res.Releases)
	}
}

// A chart in a source ferry does not fetch (a Bucket, another Git
// repository) is skipped with the reason, as a target of such a source
// is, and the HelmRelease stays an object; ferry.yaml sources: maps the
// source to a folder, whose chart is then rendered.
func TestRenderHelmReleaseFromUnfetchedSource(t *testing.T) {
	t.Parallel()
	release := func(kind string) string {
		return helmRelease("web", `  chart:
    spec:
      chart: ./web
      sourceRef: {kind: `+kind+`, name: vendor, namespace: flux-system}
`)
	}
	for _, tc := range []struct {
		name, kind, ferryYAML string
		wantSkip              []string
	}{
		{"bucket", "Bucket", "", []string{"Bucket/flux-system/vendor", "sources:"}},
		{"other repository", "GitRepository", "", []string{"GitRepository/flux-system/vendor", "another repository"}},
		{"mapped bucket", "Bucket", "sources:\n  Bucket/vendor: ./vendor\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := helmFleet("http://127.0.0.1:1", map[string]string{"web.yaml": release(tc.kind)})
			for k, v := range helmtest.WebChart("vendor/web/") {
				files[k] = v
			}
			if tc.ferryYAML != "" {
				files["ferry.yaml"] = tc.ferryYAML
			}
			repo := load(t, testtree.New(t, files))
			res, err := repo.Render(t.Context(), mustTarget(t, repo, "apps"))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Releases) != 1 || res.Releases[0].ID != "HelmRelease/shop/web" {
				t.Fatalf("releases %+v, want HelmRelease/shop/web", res.Releases)
			}
			rendered, hasRelease := false, false
			for _, o := range res.Set.Objects {
				rendered = rendered || o.GetKind() == "Deployment" && o.GetName() == "web"
				hasRelease = hasRelease || helm.IsRelease(o)
			}
			if !hasRelease {
				t.Error("the HelmRelease left the render")
			}
			if tc.wantSkip == nil {
				if !rendered || res.Releases[0].Skipped != "" || res.Releases[0].Version != "1.0.0" {
					t.Errorf("mapped source: chart rendered %v, release %+v", rendered, res.Releases[0])
				}
				return
			}
			if rendered {
				t.Error("a chart of a source ferry does not fetch was rendered")
			}
			for _, w := range tc.wantSkip {
				if !strings.Contains(res.Releases[0].Skipped, w) {
					t.Errorf("skip reason %q lacks %q", res.Releases[0].Skipped, w)
				}
			}
		})
	}
}
