package diff_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// changeFleet is a Flux fleet with a target for each kind of dependency
// a change can reach a target through: its own files, a resource outside
// its path, a patch and a generator's file, a component two targets
// share, a chart folder of the repository and its values file, a chart
// repository (HelmRepository) two releases use, a ConfigMap another
// target holds that a release takes values from, the Kustomization
// objects, a patch the cluster's root applies to its children, and a
// variable of the root's cluster-settings. charts is the chart
// repository's URL.
func changeFleet(charts string) map[string]string {
	ks := func(name, path, extra string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: ` + name + `, namespace: flux-system}
spec:
  interval: 10m
  path: ` + path + `
  sourceRef: {kind: GitRepository, name: flux-system}
` + extra
	}
	release := func(name, chart string, extra string) string {
		return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ` + name + `, namespace: apps}
spec:
  interval: 30m
` + chart + extra
	}
	fromRepo := "  chart: {spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}\n"
	return map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: https://example.test/fleet, ref: {branch: main}}
---
` + ks("flux-system", "./clusters/prod", "  prune: true\n"),
		"clusters/prod/kustomization.yaml": "resources: [flux-system/gotk-sync.yaml, settings.yaml, sources.yaml, apps.yaml]\n",
		"clusters/prod/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-settings, namespace: flux-system}\ndata: {DOMAIN: example.com, REGION: eu-1}\n",
		"clusters/prod/sources.yaml":       "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: flux-system}\nspec: {interval: 1h, url: " + charts + "}\n",
		// The root patches every child: variables and pruning.
		"clusters/prod/apps.yaml": ks("apps", "./apps", `  prune: true
  patches:
    - target: {kind: Kustomization, labelSelector: substitution.flux/disabled notin (true)}
      patch: |
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata: {name: all}
        spec:
          prune: true
          postBuild:
            substituteFrom:
              - {kind: ConfigMap, name: cluster-settings}
              - {kind: ConfigMap, name: app-settings, optional: true}
`),
		"apps/kustomization.yaml": "resources: [web/ks.yaml, api/ks.yaml, common/ks.yaml, plain/ks.yaml, shared-a/ks.yaml, shared-b/ks.yaml, gitchart/ks.yaml, broken/ks.yaml, settings/ks.yaml]\n",

		// Variables another target holds (not the cluster's root).
		"apps/settings/ks.yaml":                strings.Replace(ks("settings", "./apps/settings/app", ""), "namespace: flux-system}", "namespace: flux-system, labels: {substitution.flux/disabled: \"true\"}}", 1),
		"apps/settings/app/kustomization.yaml": "resources: [app-settings.yaml]\n",
		"apps/settings/app/app-settings.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-settings, namespace: flux-system}\ndata: {TEAM: core}\n",

		"apps/web/ks.yaml":                ks("web", "./apps/web/app", "  targetNamespace: apps\n"),
		"apps/web/app/kustomization.yaml": "resources: [release.yaml]\nconfigMapGenerator:\n  - {name: web-values, namespace: apps, files: [values.yaml=values.yaml]}\ngeneratorOptions: {disableNameSuffixHash: true}\n",
		"apps/web/app/values.yaml":        "replicas: 2\n",
		"apps/web/app/release.yaml":       release("web", fromRepo, "  valuesFrom: [{kind: ConfigMap, name: web-values}]\n"),

		"apps/api/ks.yaml":                ks("api", "./apps/api/app", "  targetNamespace: apps\n  dependsOn: [{name: common}]\n"),
		"apps/api/app/kustomization.yaml": "resources: [release.yaml]\n",
		"apps/api/app/release.yaml":       release("api", fromRepo, "  valuesFrom: [{kind: ConfigMap, name: shared-values}]\n  values: {greeting: hi}\n"),

		"apps/common/ks.yaml":                ks("common", "./apps/common/app", "  targetNamespace: apps\n"),
		"apps/common/app/kustomization.yaml": "resources: [shared-values.yaml]\n",
		"apps/common/app/shared-values.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared-values}\ndata:\n  values.yaml: |\n    replicas: 3\n",

		"apps/plain/ks.yaml":                ks("plain", "./apps/plain/app", "  targetNamespace: apps\n"),
		"apps/plain/app/kustomization.yaml": "resources: [deployment.yaml, ../../../base/plain]\npatches: [{path: patch.yaml}]\n",
		"apps/plain/app/deployment.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {url: \"https://plain.${DOMAIN}\", team: \"${TEAM}\"}\n",
		"apps/plain/app/patch.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {patched: \"yes\"}\n",
		"base/plain/kustomization.yaml":     "resources: [extra.yaml]\n",
		"base/plain/extra.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain-extra}\ndata: {a: \"1\"}\n",

		"apps/shared-a/ks.yaml":                ks("shared-a", "./apps/shared-a/app", "  targetNamespace: apps\n  components: [../../../components/volume]\n  postBuild: {substitute: {APP: shared-a}}\n"),
		"apps/shared-a/app/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/shared-a/app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared-a}\ndata: {a: \"1\"}\n",
		"apps/shared-b/ks.yaml":                ks("shared-b", "./apps/shared-b/app", "  targetNamespace: apps\n  components: [../../../components/volume]\n  postBuild: {substitute: {APP: shared-b}}\n"),
		"apps/shared-b/app/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/shared-b/app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared-b}\ndata: {b: \"1\"}\n",
		"components/volume/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [pvc.yaml]\n",
		"components/volume/pvc.yaml":           "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: \"${APP}-data\"}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",

		"apps/gitchart/ks.yaml":                ks("gitchart", "./apps/gitchart/app", "  targetNamespace: apps\n"),
		"apps/gitchart/app/kustomization.yaml": "resources: [release.yaml]\n",
		"apps/gitchart/app/release.yaml":       release("gitchart", "  chart: {spec: {chart: ./charts/local, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}, valuesFiles: [./charts/local/values.yaml, ./values/gitchart.yaml]}}\n", ""),
		"values/gitchart.yaml":                 "greeting: from-values-file\n",
		"charts/local/Chart.yaml":              "apiVersion: v2\nname: local\nversion: 0.1.0\n",
		"charts/local/values.yaml":             "greeting: hello\n",
		"charts/local/templates/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-greeting'}\ndata: {greeting: '{{ .Values.greeting }}'}\n",

		// A target that fails at every revision: its kustomization lists
		// a file nobody wrote.
		"apps/broken/ks.yaml":                ks("broken", "./apps/broken/app", "  targetNamespace: apps\n"),
		"apps/broken/app/kustomization.yaml": "resources: [missing.yaml]\n",
	}
}

// changedOnly runs the diff of a change to changeFleet twice, changed-
// only and with AllTargets, and returns both reports as JSON and text.
func changedOnly(t *testing.T, change func(t *testing.T, p *gittest.Repo)) (fast, full *diff.Report, fastJSON, fullJSON, fastText, fullText string) {
	t.Helper()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	web := testtree.New(t, helmtest.WebChart(""))
	charts.Add(t, web, "1.0.0")
	dir := filepath.Join(t.TempDir(), "fleet")
	testtree.Write(t, dir, changeFleet(charts.URL))
	p := gittest.Init(t, dir)
	base := p.Commit(t, "base")
	change(t, p)
	head := p.Commit(t, "change")
	run := func(all bool) (*diff.Report, string, string) {
		// The full diff builds every target at each revision; the
		// changed-only one shares the builds both revisions hold alike.
		var builds *render.Builds
		if !all {
			builds = render.NewBuilds()
		}
		opts := diff.Options{Repo: dir, Base: base, Head: head, AllTargets: all, Render: render.Options{
			Builds:        builds,
			NoDecrypt:     true,
			InsecureHosts: []string{strings.TrimPrefix(charts.URL, "http://")},
			HelmSources:   helm.NewSources(helm.SourcesOptions{}),
			HelmLoaded:    helm.NewLoadedCharts(),
			HelmRenders:   helm.NewRenderCache("", 0),
		}}
		r, err := diff.Revisions(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		j, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		if err := diff.Text(&text, r, false); err != nil {
			t.Fatal(err)
		}
		return r, string(j), text.String()
	}
	fast, fastJSON, fastText = run(false)
	full, fullJSON, fullText = run(true)
	return
}

// TestChangedOnlyEqualsTheFullDiff: for every kind of dependency, a
// change that touches only it names exactly the targets it affects, and
// the changed-only diff is the full one (every target confirmed and
// rendered in full when found unaffected), byte for byte.
func TestChangedOnlyEqualsTheFullDiff(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, p *gittest.Repo)
		want   []string
		// broken: the change makes the broken target, which reads the
		// cluster's variables, a candidate: it is listed as broken. A
		// file no target's own files name (a chart folder, a values
		// file) makes every target a candidate.
		broken bool
	}{
		{"a file under its path", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "apps/plain/app/deployment.yaml", "plain.${DOMAIN}", "www.${DOMAIN}")
		}, []string{"plain"}, false},
		{"a resource outside its path", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "base/plain/extra.yaml", `a: "1"`, `a: "2"`)
		}, []string{"plain"}, false},
		{"a patch file", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "apps/plain/app/patch.yaml", `patched: "yes"`, `patched: "twice"`)
		}, []string{"plain"}, false},
		{"a generator's file", func(t *testing.T, p *gittest.Repo) {
			p.Write(t, "apps/web/app/values.yaml", "replicas: 5\n")
		}, []string{"web"}, false},
		{"a component two targets share", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "components/volume/pvc.yaml", "storage: 1Gi", "storage: 2Gi")
		}, []string{"shared-a", "shared-b"}, false},
		{"a chart folder", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "charts/local/templates/cm.yaml", "data: {", "data: {extra: 'x', ")
		}, []string{"gitchart"}, true},
		{"a valuesFiles file outside the chart", func(t *testing.T, p *gittest.Repo) {
			p.Write(t, "values/gitchart.yaml", "greeting: changed\n")
		}, []string{"gitchart"}, true},
		{"the HelmRepository two releases use", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "clusters/prod/sources.yaml", "interval: 1h, url: http://", "interval: 1h, url: http://localhost.")
		}, []string{"web", "api"}, false},
		{"a ConfigMap another target holds, which a release takes values from", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "apps/common/app/shared-values.yaml", "replicas: 3", "replicas: 4")
		}, []string{"api", "common"}, false},
		{"the Kustomization object that defines it", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "apps/shared-b/ks.yaml", "APP: shared-b", "APP: shared-bee")
		}, []string{"apps", "shared-b"}, false},
		{"a patch its cluster's root applies to it", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "clusters/prod/apps.yaml", "    - target: {kind: Kustomization, labelSelector", "    - target: {kind: Kustomization, name: web}\n      patch: |\n        - {op: add, path: /spec/timeout, value: 9m}\n    - target: {kind: Kustomization, labelSelector")
		}, []string{"apps", "web"}, false},
		{"a variable of its cluster", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "clusters/prod/settings.yaml", "DOMAIN: example.com", "DOMAIN: example.org")
		}, []string{"plain"}, true},
		{"a variable another target holds", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "apps/settings/app/app-settings.yaml", "TEAM: core", "TEAM: platform")
		}, []string{"settings", "plain"}, true},
		{"a target that held a variable another reads goes away", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "apps/kustomization.yaml", ", settings/ks.yaml]", "]")
			for _, f := range []string{"apps/settings/ks.yaml", "apps/settings/app/kustomization.yaml", "apps/settings/app/app-settings.yaml"} {
				p.Remove(t, f)
			}
		}, []string{"apps", "plain", "settings"}, true},
		{"a variable no target uses", func(t *testing.T, p *gittest.Repo) {
			p.Replace(t, "clusters/prod/settings.yaml", "REGION: eu-1", "REGION: eu-2")
		}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast, _, fastJSON, fullJSON, fastText, fullText := changedOnly(t, c.change)
			got := fast.TargetNames()
			if !slices.Equal(sorted(got), sorted(c.want)) {
				t.Errorf("affected %v, want %v", got, c.want)
			}
			if fastJSON != fullJSON {
				t.Errorf("changed-only JSON differs from the full diff's:\n%s\n---- full:\n%s", fastJSON, fullJSON)
			}
			if fastText != fullText {
				t.Errorf("changed-only text differs from the full diff's:\n%s\n---- full:\n%s", fastText, fullText)
			}
			// The target broken at both revisions does not fail the
			// diff; it is listed when the change made it a candidate.
			switch {
			case c.broken && (len(fast.Broken) != 1 || fast.Broken[0].Name != "broken" || !strings.Contains(fast.Broken[0].Error, "missing.yaml")):
				t.Errorf("broken targets %+v, want broken (missing.yaml)", fast.Broken)
			case !c.broken && len(fast.Broken) != 0:
				t.Errorf("broken targets %+v, want none: the change does not reach them", fast.Broken)
			}
			if err := fast.Err(); err != nil {
				t.Errorf("a change that does not touch the broken target fails the diff: %v", err)
			}
		})
	}
}

// TestBrokenTargetTouchedFailsTheDiff: a change to a broken target's own
// files, or one that breaks a target, fails the diff.
func TestBrokenTargetTouchedFailsTheDiff(t *testing.T) {
	t.Run("touched, still broken", func(t *testing.T) {
		fast, full, _, _, _, _ := changedOnly(t, func(t *testing.T, p *gittest.Repo) {
			p.Write(t, "apps/broken/app/kustomization.yaml", "resources: [missing.yaml, other.yaml]\n")
		})
		for _, r := range []*diff.Report{fast, full} {
			if r.Err() == nil || len(r.Broken) != 0 || !slices.Contains(r.TargetNames(), "broken") {
				t.Errorf("broken target touched: err %v, broken %+v, targets %v; want it affected and failing", r.Err(), r.Broken, r.TargetNames())
			}
		}
	})
	t.Run("broken by the change", func(t *testing.T) {
		fast, _, _, _, _, _ := changedOnly(t, func(t *testing.T, p *gittest.Repo) {
			p.Write(t, "apps/plain/app/kustomization.yaml", "resources: [deployment.yaml, gone.yaml]\n")
		})
		if fast.Err() == nil || !slices.Contains(fast.TargetNames(), "plain") {
			t.Errorf("a change that breaks plain: err %v, targets %v", fast.Err(), fast.TargetNames())
		}
	})
	t.Run("fixed by the change", func(t *testing.T) {
		fast, _, _, _, _, _ := changedOnly(t, func(t *testing.T, p *gittest.Repo) {
			p.Write(t, "apps/broken/app/missing.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fixed}\n")
		})
		if len(fast.Broken) != 0 || !slices.Contains(fast.TargetNames(), "broken") {
			t.Errorf("a change that fixes broken: broken %+v, targets %v", fast.Broken, fast.TargetNames())
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// TestChangedOnlyArtifacts: a file an ArtifactGenerator copies reaches
// the targets that render its artifact, per cluster, and the
// changed-only diff is the full one.
func TestChangedOnlyArtifacts(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []string
	}{
		{"a file both clusters' generators copy", "deploy/base/deployment.yaml", []string{"production/apps", "staging/apps"}},
		{"a file one cluster's generator copies", "deploy/staging/kustomization.yaml", []string{"staging/apps"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fleet")
			testtree.Copy(t, filepath.Join("..", "config", "testdata", "fleets", "clusterartifacts"), dir)
			p := gittest.Init(t, dir)
			base := p.Commit(t, "base")
			p.Write(t, c.file, p.Read(t, c.file)+"# changed\n")
			if c.file == "deploy/base/deployment.yaml" {
				p.Replace(t, c.file, "replicas: ", "replicas: 1")
			} else {
				p.Write(t, c.file, p.Read(t, c.file)+"labels: [{pairs: {changed: \"yes\"}}]\n")
			}
			head := p.Commit(t, "change")
			var reports [2]string
			var names []string
			for i, all := range []bool{false, true} {
				r, err := diff.Revisions(t.Context(), diff.Options{Repo: dir, Base: base, Head: head, AllTargets: all, Render: render.Options{NoDecrypt: true}})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.MarshalIndent(r, "", "  ")
				reports[i] = string(b)
				if !all {
					names = r.TargetNames()
				}
			}
			if !slices.Equal(sorted(names), c.want) {
				t.Errorf("affected %v, want %v", names, c.want)
			}
			if reports[0] != reports[1] {
				t.Errorf("changed-only JSON differs from the full diff's:\n%s\n---- full:\n%s", reports[0], reports[1])
			}
		})
	}
}
