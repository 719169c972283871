package main

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
)

// Values of the SOPS-encrypted Secret the HelmRelease takes its values
// from; the chart renders them into a Secret of its own. No output may
// hold them, in plain text or base64.
const (
	helmPassword = "chart-pa55word-3f9d1c"
	helmToken    = "chart-t0ken-8e27ab"
)

// shopChart is a chart web at version: a Deployment labelled with the
// chart's version whose image tag comes from its values, a Secret of the
// password value (and from 1.1.0 on, of the token value too) and a
// ConfigMap.
func shopChart(version, tag string, token bool) map[string]string {
	secret := "  password: {{ .Values.password | b64enc | quote }}\n"
	if token {
		secret += "  token: {{ .Values.token | b64enc | quote }}\n"
	}
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: " + version + "\n",
		"values.yaml": "replicas: 1\nimage: {repository: nginx, tag: \"" + tag + "\"}\npassword: \"\"\ntoken: \"\"\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {helm.sh/chart: "web-{{ .Chart.Version }}"}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - name: web
          image: {{ .Values.image.repository }}:{{ .Values.image.tag }}
          envFrom: [{secretRef: {name: {{ .Release.Name }}-auth}}]
`,
		"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-auth
  labels: {helm.sh/chart: "web-{{ .Chart.Version }}"}
data:
` + secret,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: hello
`,
	}
}

// helmPR is a one-cluster Flux repository whose apps target holds a
// HelmRelease of chart web at 1.0.0 from an HTTP chart repository that
// also has 1.1.0, its values from a SOPS-encrypted Secret (a plain
// ConfigMap unless encrypted), committed as the base; the pull request
// bumps spec.chart.spec.version to 1.1.0.
func helmPR(t *testing.T, encrypted bool) (p *scenario, base, head string) {
	t.Helper()
	p = newScenario(t).withExampleKey()
	charts := p.charts(map[string]map[string]string{"1.0.0": shopChart("1.0.0", "1.27", false), "1.1.0": shopChart("1.1.0", "1.28", true)})
	return bumpPR(p, charts.URL, encrypted)
}

// bumpPR writes helmPR's repository and pull request in p, with the
// charts of the chart repository at url.
func bumpPR(p *scenario, url string, encrypted bool) (_ *scenario, base, head string) {
	t := p.t
	t.Helper()
	kind, field := "ConfigMap", "data"
	if encrypted {
		kind, field = "Secret", "stringData"
	}
	values := "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: web-values\n  namespace: shop\n" + field + ":\n" +
		"  values.yaml: |\n    password: " + helmPassword + "\n    token: " + helmToken + "\n"
	if encrypted {
		p.encrypt("apps/web-values.yaml", values, "^(data|stringData)$")
	} else {
		p.write("apps/web-values.yaml", values)
	}
	p.bootstrap("prod", "https://example.com/fleet.git")
	p.writeAll(map[string]string{
		"clusters/prod/apps.yaml": helmtest.FluxKustomization("apps", "./apps", "  decryption: {provider: sops}\n"),
		"clusters/prod/charts.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: flux-system
spec:
  interval: 1h
  url: ` + url + "\n",
		"apps/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n",
		"apps/web.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: shop
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: "1.0.0"
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
  valuesFrom:
    - kind: ` + kind + `
      name: web-values
`,
	})
	base = p.commit("base")
	p.replace("apps/web.yaml", `version: "1.0.0"`, `version: "1.1.0"`)
	head = p.commit("bump web to 1.1.0")
	return p, base, head
}

// TestDiffHelmChartBump diffs a pull request that bumps a HelmRelease's
// chart version: the report names the release's old and new chart
// versions and shows the rendered objects that change with their hunks,
// the chart's Secret by key only, in every format (reviewed golden files);
// no value of the Secret reaches any output.
func TestDiffHelmChartBump(t *testing.T) {
	p, base, head := helmPR(t, true)
	vars := map[string]string{"SOPS_AGE_KEY": exampleKeyText(t)}
	var outputs []string
	for _, format := range []string{"text", "json", "markdown"} {
		res := ferry(t, vars, "diff", "--repo", p.dir, "--base", base, "--head", head, "--format", format)
		if res.code != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", format, res.code, res.stderr)
		}
		got := strings.NewReplacer(base, "BASE", head, "HEAD", base[:12], "BASE", head[:12], "HEAD").Replace(res.stdout)
		golden(t, filepath.Join("diff", "helm-chart-bump."+format+".golden"), []byte(got))
		outputs = append(outputs, res.stdout, res.stderr)
	}

	text, markdown := outputs[0], outputs[4]
	for _, want := range []string{
		"target apps (changed: apps/web.yaml): 0 added, 3 changed, 0 removed,",
		"  HelmRelease/shop/web: web 1.0.0 -> 1.1.0\n",
		"--- Deployment.apps/shop/web (changed)\n",
		"-        image: nginx:1.27\n+        image: nginx:1.28\n",
		"--- Secret/shop/web-auth (changed)\n  Secret keys: added token\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	for _, want := range []string{
		"- `HelmRelease/shop/web`: chart `web 1.0.0 -> 1.1.0`",
		"<details><summary><code>Deployment.apps/shop/web</code> (changed)</summary>",
		"-        image: nginx:1.27\n+        image: nginx:1.28\n",
	} {
		if !strings.Contains(markdown, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, markdown)
		}
	}
	// The chart does render the values into its Secret (ferry render
	// prints decrypted values), so their absence above is not vacuous.
	rendered := ferry(t, vars, "render", "--repo", p.dir, "apps")
	if rendered.code != 0 {
		t.Fatalf("render: exit %d: %s", rendered.code, rendered.stderr)
	}
	for _, s := range []string{helmPassword, helmToken} {
		if !strings.Contains(rendered.stdout, base64.StdEncoding.EncodeToString([]byte(s))) {
			t.Fatalf("the chart's Secret does not hold a value of the values Secret:\n%s", rendered.stdout)
		}
	}
	for _, s := range []string{helmPassword, helmToken} {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			for _, out := range outputs {
				if strings.Contains(out, form) {
					t.Fatalf("a Secret value reached the output")
				}
			}
		}
	}
}

// TestRenderListHelmCharts lists the chart and resolved version each
// HelmRelease of a target installs (reviewed golden files), at the head of
// the chart bump, its values from a ConfigMap. render --list decrypts
// nothing: a HelmRelease taking values from an encrypted Secret is listed
// too, rendered without them, as diff without a key compares it.
func TestRenderListHelmCharts(t *testing.T) {
	p, _, _ := helmPR(t, false)
	for _, format := range []string{"text", "json"} {
		res := ferry(t, nil, "render", "--list", "--repo", p.dir, "--format", format)
		if res.code != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", format, res.code, res.stderr)
		}
		golden(t, filepath.Join("render", "helm.list."+format+".golden"), []byte(res.stdout))
	}

	p, base, head := helmPR(t, true)
	res := ferry(t, nil, "render", "--list", "--repo", p.dir)
	if res.code != 0 || !strings.Contains(res.stdout, "HelmRelease/shop/web installs web 1.1.0") {
		t.Errorf("render --list of a release with encrypted values: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", head)
	if res.code != 0 || !strings.Contains(res.stdout, "HelmRelease/shop/web: web 1.0.0 -> 1.1.0") || !strings.Contains(res.stdout, "+        image: nginx:1.28") {
		t.Errorf("diff without a key: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// labelledChart is a chart web whose image tag comes from tag and whose
// objects all carry the labels Helm charts stamp (helm.sh/chart,
// app.kubernetes.io/version), the pod templates too, with the checksum of
// the config on them: a ConfigMap, a Service and two Deployments, web
// (image nginx:<tag>) and worker. It takes a password value into a
// Secret, as shopChart does.
func labelledChart(tag string) map[string]string {
	labels := `
    helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"
    app.kubernetes.io/version: "{{ .Chart.Version }}"
    app.kubernetes.io/name: web`
	deployment := func(name, image string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  labels:` + labels + `
spec:
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata:
      labels:
        app: ` + name + strings.ReplaceAll(labels, "\n    ", "\n        ") + `
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/config.yaml") . | sha256sum }}
    spec:
      containers:
        - name: ` + name + `
          image: ` + image + `
`
	}
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.0.0\n",
		"values.yaml": "tag: \"" + tag + "\"\npassword: \"\"\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  labels:` + labels + `
data:
  greeting: hello
`,
		"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
  labels:` + labels + `
spec:
  ports: [{port: 80}]
`,
		"templates/web.yaml":    deployment("web", "nginx:{{ .Values.tag }}"),
		"templates/worker.yaml": deployment("worker", "busybox:1.36"),
		"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: web-auth
data:
  password: {{ .Values.password | b64enc | quote }}
`,
	}
}

// TestDiffChartBumpFolded diffs a chart bump whose objects change only
// in the chart's labels and checksum annotation, but for the web
// Deployment, whose image changes too: the report folds the three into
// one line and shows web in full, in every format (reviewed golden
// files); --show-all-metadata, and the step input show-all-metadata,
// show them all. Folded or not, the target is changed (--exit-code, the
// changed output).
func TestDiffChartBumpFolded(t *testing.T) {
	p := newScenario(t)
	charts := p.charts(map[string]map[string]string{"1.0.0": labelledChart("1.27"), "1.1.0": labelledChart("1.28")})
	p, base, head := bumpPR(p, charts.URL, false)
	args := []string{"diff", "--repo", p.dir, "--base", base, "--head", head}
	hashes := strings.NewReplacer(base, "BASE", head, "HEAD", base[:12], "BASE", head[:12], "HEAD")
	folded := map[string]string{}
	for _, format := range []string{"text", "json", "markdown"} {
		res := ferry(t, nil, append(args, "--format", format)...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", format, res.code, res.stderr)
		}
		folded[format] = res.stdout
		golden(t, filepath.Join("diff", "helm-chart-bump-folded."+format+".golden"), []byte(hashes.Replace(res.stdout)))
	}
	const line = "3 objects: only chart labels and annotations changed (app.kubernetes.io/version, checksum/config, helm.sh/chart); --show-all-metadata shows them"
	for _, want := range []string{
		"target apps (changed: apps/web.yaml): 0 added, 5 changed, 0 removed, 3 unchanged\n",
		"\n  " + line + "\n",
		"--- Deployment.apps/shop/web (changed)\n",
		"-    app.kubernetes.io/version: 1.0.0\n-    helm.sh/chart: web-1.0.0\n+    app.kubernetes.io/version: 1.1.0\n+    helm.sh/chart: web-1.1.0\n",
		"-      - image: nginx:1.27\n+      - image: nginx:1.28\n",
		"--- HelmRelease.helm.toolkit.fluxcd.io/shop/web (changed)\n",
	} {
		if !strings.Contains(folded["text"], want) {
			t.Errorf("text report lacks %q:\n%s", want, folded["text"])
		}
	}
	for _, name := range []string{"ConfigMap/shop/web-config", "Service/shop/web", "Deployment.apps/shop/worker"} {
		if strings.Contains(folded["text"], name) || strings.Contains(folded["markdown"], name) {
			t.Errorf("%s is shown, not folded:\n%s\n%s", name, folded["text"], folded["markdown"])
		}
	}
	var js struct {
		Targets []struct {
			Folded  *diff.Folded  `json:"folded"`
			Objects []diff.Object `json:"objects"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(folded["json"]), &js); err != nil {
		t.Fatal(err)
	}
	want := &diff.Folded{Objects: 3, Keys: []string{"app.kubernetes.io/version", "checksum/config", "helm.sh/chart"}}
	if d := cmp.Diff(want, js.Targets[0].Folded); d != "" {
		t.Errorf("JSON folded (-want +got)\n%s", d)
	}
	var metadataOnly []string
	for _, o := range js.Targets[0].Objects {
		if len(o.MetadataOnly) > 0 {
			metadataOnly = append(metadataOnly, o.ID.String())
		}
	}
	if d := cmp.Diff([]string{"ConfigMap/shop/web-config", "Service/shop/web", "Deployment.apps/shop/worker"}, metadataOnly); d != "" {
		t.Errorf("JSON objects folded (-want +got)\n%s", d)
	}
	if res := ferry(t, nil, append(args, "--exit-code")...); res.code != exitDifferences {
		t.Errorf("--exit-code: exit %d, want %d", res.code, exitDifferences)
	}

	all := ferry(t, nil, append(args, "--show-all-metadata")...)
	if all.code != 0 {
		t.Fatalf("--show-all-metadata: exit %d, stderr:\n%s", all.code, all.stderr)
	}
	for _, want := range []string{
		"--- ConfigMap/shop/web-config (changed)\n", "--- Service/shop/web (changed)\n", "--- Deployment.apps/shop/worker (changed)\n",
		"-        checksum/config: ",
	} {
		if !strings.Contains(all.stdout, want) {
			t.Errorf("--show-all-metadata: the report lacks %q:\n%s", want, all.stdout)
		}
	}
	if strings.Contains(all.stdout, "only chart labels") {
		t.Errorf("--show-all-metadata still folds:\n%s", all.stdout)
	}

	// The step input, as the runner passes it.
	rv := newRunnerVars(t, "github", "pull_request.json").with(map[string]string{
		"command": "diff", "repo": p.dir, "base": base, "head": head, "workspace": filepath.Dir(p.dir), "show-all-metadata": "true",
	})
	s := runStep(t, rv, nil)
	if s.code != 0 {
		t.Fatalf("step: exit %d, stderr:\n%s", s.code, s.stderr)
	}
	if !strings.Contains(s.summary, "<code>Deployment.apps/shop/worker</code> (changed)") || strings.Contains(s.summary, "only chart labels") {
		t.Errorf("input show-all-metadata: the summary folds:\n%s", s.summary)
	}
	if s.outputs["changed"] != "true" {
		t.Errorf("changed output %q, want true", s.outputs["changed"])
	}
}
