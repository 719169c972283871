package helm_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
)

func render(t *testing.T, r *helm.Release, f *helm.Fetched, opts helm.RenderOptions) *helm.Rendered {
	t.Helper()
	values, err := helm.ComposeValues(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := helm.Render(t.Context(), r, f, values, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s/%s in %v", kind, name, names(objs))
	return nil
}

func TestRenderRelease(t *testing.T) {
	t.Parallel()
	r := parseRelease(t, "web", "apps", `
chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}
targetNamespace: prod`)
	got := render(t, r, &helm.Fetched{Dir: chartDir(t, "umbrella")}, helm.RenderOptions{})
	if got.Chart != "umbrella" || got.Version != "1.2.0" || got.Name != "prod-web" || got.Namespace != "prod" {
		t.Errorf("chart %s %s, release %s in %s; want umbrella 1.2.0, prod-web in prod", got.Chart, got.Version, got.Name, got.Namespace)
	}
	want := []string{"ConfigMap/prod-web-backend", "Service/prod-web-umbrella", "Deployment/prod-web-umbrella"}
	if diff := cmp.Diff(want, names(got.Objects)); diff != "" {
		t.Errorf("objects in install order (-want +got):\n%s", diff)
	}
}

// hookPhases lists hooks as Kind/name, the phases each runs in, and the
// chart file it came from.
func hookPhases(hooks []helm.Hook) []string {
	var out []string
	for _, h := range hooks {
		phases := []string{}
		if h.Pre {
			phases = append(phases, "pre")
		}
		if h.Post {
			phases = append(phases, "post")
		}
		out = append(out, h.Object.GetKind()+"/"+h.Object.GetName()+" "+strings.Join(phases, ",")+" "+h.Source)
	}
	return out
}

// hookObject finds a hook by kind and name.
func hookObject(t *testing.T, hooks []helm.Hook, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, h := range hooks {
		objs = append(objs, h.Object)
	}
	return find(t, objs, kind, name)
}

// TestRenderHooks: hooks apart from the objects, in weight order, each
// once with its phases (a hook of both pre and post events is one hook
// of both phases) and the chart file it came from, their annotations
// kept, test hooks left out.
func TestRenderHooks(t *testing.T) {
	t.Parallel()
	r := parseRelease(t, "app", "apps", `chart: {spec: {chart: hooks, sourceRef: {kind: GitRepository, name: fleet}}}`)
	got := render(t, r, &helm.Fetched{Dir: chartDir(t, "hooks")}, helm.RenderOptions{})
	for name, tc := range map[string]struct{ want, got []string }{
		"objects": {[]string{"Deployment/app"}, names(got.Objects)},
		"sources": {[]string{"templates/deployment.yaml"}, got.Sources},
		"hooks": {[]string{
			"ConfigMap/app-schema pre templates/migrate.yaml",
			"Job/app-migrate pre templates/migrate.yaml",
			"ConfigMap/app-lock pre,post templates/lock.yaml",
			"Job/app-notify post templates/notify.yaml",
		}, hookPhases(got.Hooks)},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	migrate := hookObject(t, got.Hooks, "Job", "app-migrate")
	if p := migrate.GetAnnotations()["helm.sh/hook-delete-policy"]; p != "before-hook-creation,hook-succeeded" {
		t.Errorf("hook-delete-policy %q", p)
	}

	r.DisableHooks = true
	if got := render(t, r, &helm.Fetched{Dir: chartDir(t, "hooks")}, helm.RenderOptions{}); len(got.Hooks) != 0 {
		t.Errorf("install.disableHooks: hooks %v", hookPhases(got.Hooks))
	}
}

func TestRenderCRDs(t *testing.T) {
	t.Parallel()
	f := &helm.Fetched{Dir: chartDir(t, "withcrds")}
	create := render(t, parseRelease(t, "w", "apps", `chart: {spec: {chart: withcrds, sourceRef: {kind: HelmRepository, name: charts}}}`), f, helm.RenderOptions{})
	if diff := cmp.Diff([]string{"CustomResourceDefinition/widgets.example.com", "ServiceAccount/w-operator", "Widget/w"}, names(create.Objects)); diff != "" {
		t.Errorf("install.crds Create: CRDs first (-want +got):\n%s", diff)
	}
	skip := render(t, parseRelease(t, "w", "apps", `{chart: {spec: {chart: withcrds, sourceRef: {kind: HelmRepository, name: charts}}}, install: {crds: Skip}}`), f, helm.RenderOptions{})
	if diff := cmp.Diff([]string{"ServiceAccount/w-operator", "Widget/w"}, names(skip.Objects)); diff != "" {
		t.Errorf("install.crds Skip (-want +got):\n%s", diff)
	}
}

// TestRenderPostRenderers: kustomize patches and images change the
// chart's objects, in the order of the post-renderers, and not its hooks.
func TestRenderPostRenderers(t *testing.T) {
	t.Parallel()
	r := parseRelease(t, "app", "apps", `
chart: {spec: {chart: hooks, sourceRef: {kind: GitRepository, name: fleet}}}
postRenderers:
  - kustomize:
      patches:
        - target: {kind: Deployment}
          patch: |
            - op: add
              path: /spec/replicas
              value: 4
        - patch: |
            apiVersion: apps/v1
            kind: Deployment
            metadata:
              name: app
              labels: {patched: "strategic"}
      images:
        - name: ghcr.io/example/app
          newName: registry.example.com/app
          newTag: 1.0.1
  - kustomize:
      images:
        - name: registry.example.com/app
          digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
`)
	got := render(t, r, &helm.Fetched{Dir: chartDir(t, "hooks")}, helm.RenderOptions{})
	d := find(t, got.Objects, "Deployment", "app")
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 4 {
		t.Errorf("replicas %d, want 4 from the JSON 6902 patch", n)
	}
	if l := d.GetLabels()["patched"]; l != "strategic" {
		t.Errorf("label %q, want the strategic merge patch's", l)
	}
	image := container(d)["image"]
	if want := "registry.example.com/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; image != want {
		t.Errorf("image %v, want %s", image, want)
	}
	migrate := hookObject(t, got.Hooks, "Job", "app-migrate")
	if image := container(migrate)["image"]; image != "ghcr.io/example/app:1.0.0" {
		t.Errorf("hook image %v: post-renderers changed a hook", image)
	}

	r.PostRenderStrategy = helm.PostRenderCombined
	got = render(t, r, &helm.Fetched{Dir: chartDir(t, "hooks")}, helm.RenderOptions{})
	migrate = hookObject(t, got.Hooks, "Job", "app-migrate")
	if image := container(migrate)["image"]; !strings.HasPrefix(image.(string), "registry.example.com/app@") {
		t.Errorf("postRenderStrategy combined: hook image %v", image)
	}
}

func TestRenderTemplateErrors(t *testing.T) {
	t.Parallel()
	broken := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(broken, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: broken\nversion: 0.0.1\n")
	write("templates/ok.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n")
	write("templates/bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  x: {{ .Values.missing.deeper }}\n")

	for name, tc := range map[string]struct {
		chart, spec string
		want        []string
	}{
		"required": {chartDir(t, "funcs"), `chart: {spec: {chart: funcs, sourceRef: {kind: HelmRepository, name: charts}}}`,
			[]string{"HelmRelease/apps/web: rendering chart funcs 0.9.0: ", "funcs/templates/configmap.yaml:11:", "host is required"}},
		"nil pointer": {broken, `chart: {spec: {chart: broken, sourceRef: {kind: GitRepository, name: fleet}}}`,
			[]string{"HelmRelease/apps/web: rendering chart broken 0.0.1: ", "broken/templates/bad.yaml:6:", "nil pointer"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := parseRelease(t, "web", "apps", tc.spec)
			_, err := helm.Render(t.Context(), r, &helm.Fetched{Dir: tc.chart}, map[string]any{}, helm.RenderOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestRenderValuesFiles: spec.chart.spec.valuesFiles replace the chart's
// values.yaml, merged in order, as source-controller packages the chart.
func TestRenderValuesFiles(t *testing.T) {
	t.Parallel()
	image := func(got *helm.Rendered) (any, int64) {
		d := find(t, got.Objects, "Deployment", "web-umbrella")
		n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return container(d)["image"], n
	}
	f := &helm.Fetched{Dir: chartDir(t, "umbrella")}
	r := parseRelease(t, "web", "apps", `
chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}, valuesFiles: [values.yaml, values-prod.yaml]}}
values: {replicas: 5}`)
	if img, n := image(render(t, r, f, helm.RenderOptions{})); img != "ghcr.io/example/web:2.0.1" || n != 5 {
		t.Errorf("image %v, replicas %d; want values-prod.yaml's image and the inline replicas", img, n)
	}

	archive := packageChart(t, "umbrella")
	if img, n := image(render(t, r, archive, helm.RenderOptions{})); img != "ghcr.io/example/web:2.0.1" || n != 5 {
		t.Errorf("archive: image %v, replicas %d", img, n)
	}

	r.Chart.ValuesFiles = []string{"values-prod.yaml", "absent.yaml"}
	values, _ := helm.ComposeValues(r, nil)
	_, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{})
	if err == nil || !strings.Contains(err.Error(), "HelmRelease/apps/web: chart umbrella 1.2.0: no values file absent.yaml") {
		t.Errorf("missing values file: error %v", err)
	}
	r.Chart.IgnoreMissingValuesFiles = true
	// values.yaml is not listed: its global.team is gone (and backend,
	// enabled by default, exports its port).
	got := render(t, r, f, helm.RenderOptions{})
	env := container(find(t, got.Objects, "Deployment", "web-umbrella"))["env"]
	if diff := cmp.Diff([]any{
		map[string]any{"name": "TEAM", "value": "none"},
		map[string]any{"name": "BACKEND_PORT", "value": "9000"},
	}, env); diff != "" {
		t.Errorf("values.yaml not replaced (-want +got):\n%s", diff)
	}

	r.Chart.ValuesFiles = []string{"../../../../go.mod"}
	_, err = helm.Render(t.Context(), r, f, values, helm.RenderOptions{})
	if err == nil || !strings.Contains(err.Error(), "values file ../../../../go.mod") {
		t.Errorf("values file outside the chart: error %v", err)
	}
}

// TestRenderArchiveEqualsFolder: a packaged chart renders as its folder.
func TestRenderArchiveEqualsFolder(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"umbrella", "withcrds", "hooks"} {
		r := parseRelease(t, "x", "apps", `chart: {spec: {chart: `+c+`, sourceRef: {kind: HelmRepository, name: charts}}}`)
		dir := render(t, r, &helm.Fetched{Dir: chartDir(t, c)}, helm.RenderOptions{})
		arc := render(t, r, packageChart(t, c), helm.RenderOptions{})
		if diff := cmp.Diff(dir, arc); diff != "" {
			t.Errorf("%s: archive differs from folder (-folder +archive):\n%s", c, diff)
		}
	}
}

// TestRenderLoadsOnce: 50 releases of one chart, rendered at once with
// different values, load it once and each see only their own values.
func TestRenderLoadsOnce(t *testing.T) {
	t.Parallel()
	charts := helm.NewLoadedCharts()
	f := packageChart(t, "umbrella")
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range 50 {
		wg.Go(func() {
			spec := `chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}`
			if i%2 == 1 {
				spec += "\nvalues: {backend: {enabled: false}, cache: {enabled: true}}"
			}
			r := parseRelease(t, "web", "apps", spec)
			values, _ := helm.ComposeValues(r, nil)
			got, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{Charts: charts})
			if err != nil {
				errs[i] = err
				return
			}
			want := []string{"ConfigMap/web-backend", "Service/web-umbrella", "Deployment/web-umbrella"}
			if i%2 == 1 {
				want = []string{"Service/web-umbrella", "Deployment/web-umbrella", "StatefulSet/web-cache"}
			}
			if diff := cmp.Diff(want, names(got.Objects)); diff != "" {
				t.Errorf("release %d (-want +got):\n%s", i, diff)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("release %d: %v", i, err)
		}
	}
	if n := charts.Len(); n != 1 {
		t.Errorf("%d charts loaded, want 1", n)
	}
}

func TestRenderCapabilities(t *testing.T) {
	t.Parallel()
	r := parseRelease(t, "web", "apps", `
chart: {spec: {chart: funcs, sourceRef: {kind: HelmRepository, name: charts}}}
values: {host: a.example.com}`)
	f := &helm.Fetched{Dir: chartDir(t, "funcs")}
	cm := func(got *helm.Rendered) map[string]string {
		data, _, _ := unstructured.NestedStringMap(find(t, got.Objects, "ConfigMap", "web-config").Object, "data")
		return data
	}
	got := cm(render(t, r, f, helm.RenderOptions{}))
	if got["kube"] != helm.DefaultKubeVersion || got["widgets"] != "" || got["state"] != "fresh" {
		t.Errorf("default capabilities: %v", got)
	}
	got = cm(render(t, r, f, helm.RenderOptions{KubeVersion: "1.33.2", APIVersions: []string{"example.com/v1"}}))
	if got["kube"] != "v1.33.2" || got["widgets"] != "supported" {
		t.Errorf("given capabilities: %v", got)
	}
	values, _ := helm.ComposeValues(r, nil)
	_, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{KubeVersion: "v1.29.0"})
	if err == nil || !strings.Contains(err.Error(), "chart requires kubeVersion: >=1.30.0-0") {
		t.Errorf("kubeVersion constraint: error %v", err)
	}
}

// TestDefaultKubeVersion: the default is the Kubernetes version of the
// client-go in go.mod.
func TestDefaultKubeVersion(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "k8s.io/client-go" {
			minor := strings.Split(strings.TrimPrefix(f[1], "v0."), ".")[0]
			if want := "v1." + minor + ".0"; helm.DefaultKubeVersion != want {
				t.Errorf("DefaultKubeVersion %s, want %s for client-go %s", helm.DefaultKubeVersion, want, f[1])
			}
			return
		}
	}
	t.Fatal("no k8s.io/client-go in go.mod")
}

// packageChart packs a chart folder of testdata as a .tgz, as a chart
// repository serves it.
func packageChart(t *testing.T, name string) *helm.Fetched {
	t.Helper()
	ch, err := loader.LoadDir(chartDir(t, name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return &helm.Fetched{Name: ch.Name(), Version: ch.Metadata.Version, Archive: b}
}

// container is the first container of a workload's pod template.
func container(u *unstructured.Unstructured) map[string]any {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return nil
	}
	return containers[0].(map[string]any)
}
