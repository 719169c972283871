package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testbin"
)

// oracleCase is one chart rendered with one HelmRelease (and the values
// ComposeValues gives it), by ferry and by `helm template`.
type oracleCase struct {
	name, chart string
	release     string // the HelmRelease's spec, YAML
	opts        helm.RenderOptions
}

var oracleCases = []oracleCase{
	{name: "umbrella/defaults", chart: "umbrella", release: `chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}`},
	{name: "umbrella/conditions-flipped", chart: "umbrella", release: `
chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}
values:
  backend: {enabled: false}
  cache: {enabled: true, size: 128Mi}
  image: {tag: 2.1.0}
  global: {team: payments}
  replicas: 2`},
	{name: "umbrella/target-namespace", chart: "umbrella", release: `
chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}
targetNamespace: prod
values: {backend: {port: 9100}}`},
	{name: "withcrds/create", chart: "withcrds", release: `
chart: {spec: {chart: withcrds, sourceRef: {kind: HelmRepository, name: charts}}}
values: {widget: {size: 5}}`},
	{name: "withcrds/skip", chart: "withcrds", release: `
chart: {spec: {chart: withcrds, sourceRef: {kind: HelmRepository, name: charts}}}
install: {crds: Skip}`},
	{name: "hooks/defaults", chart: "hooks", release: `chart: {spec: {chart: hooks, sourceRef: {kind: GitRepository, name: fleet}}}`},
	{name: "hooks/no-migrate", chart: "hooks", release: `
chart: {spec: {chart: hooks, sourceRef: {kind: GitRepository, name: fleet}}}
releaseName: hooks-only
values: {migrate: false}`},
	{name: "funcs/required-set", chart: "funcs", release: `
chart: {spec: {chart: funcs, sourceRef: {kind: HelmRepository, name: charts}}}
values:
  host: app.example.com
  extraLabels: {tier: web}`},
	{name: "funcs/capabilities", chart: "funcs", release: `
chart: {spec: {chart: funcs, sourceRef: {kind: HelmRepository, name: charts}}}
values:
  host: app.example.com
  greeting: "{{ .Chart.Name }}-{{ .Chart.Version }}"`,
		opts: helm.RenderOptions{KubeVersion: "v1.31.4", APIVersions: []string{"example.com/v1"}}},
}

// TestRenderMatchesHelmTemplate renders each case with ferry and with
// `helm template` of Helm v4.3.2 (release name, namespace, the composed
// values as a values file, --include-crds as install.crds implies, the
// same capabilities) and compares the two as sets of objects: ferry's
// objects and its hooks (each once, whatever its phases) against helm's
// output without test hooks.
func TestRenderMatchesHelmTemplate(t *testing.T) {
	bin := testbin.Tool(t, "helm", "tools")
	charts := helm.NewLoadedCharts()
	for _, tc := range oracleCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := parseRelease(t, "web", "apps", tc.release)
			values, err := helm.ComposeValues(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.Charts = charts
			dir := chartDir(t, tc.chart)
			got, err := helm.Render(t.Context(), r, &helm.Fetched{Dir: dir}, values, opts)
			if err != nil {
				t.Fatal(err)
			}
			objs := append([]*unstructured.Unstructured{}, got.Objects...)
			for _, h := range got.Hooks {
				objs = append(objs, h.Object)
			}
			want := helmTemplate(t, bin, r, dir, values, opts)
			if len(want) == 0 {
				t.Fatal("helm template rendered nothing")
			}
			if diff := cmp.Diff(want, byKey(t, objs)); diff != "" {
				t.Errorf("ferry differs from helm template (-helm +ferry):\n%s", diff)
			}
		})
	}
}

func helmTemplate(t *testing.T, bin string, r *helm.Release, dir string, values map[string]any, opts helm.RenderOptions) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	kube := opts.KubeVersion
	if kube == "" {
		kube = helm.DefaultKubeVersion
	}
	args := []string{"template", helm.ReleaseName(r), dir, "--namespace", r.ReleaseNamespace(),
		"-f", file, "--kube-version", kube, "--skip-tests"}
	if r.InstallCRDs != helm.SkipCRDs {
		args = append(args, "--include-crds")
	}
	for _, v := range opts.APIVersions {
		args = append(args, "--api-versions", v)
	}
	objs := helmtest.Template(t, bin, args...)
	return byKey(t, objs)
}

// byKey indexes objects by apiVersion, Kind, namespace and name; a key
// seen twice fails the test.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range objs {
		k := fmt.Sprintf("%s %s %s/%s", o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName())
		if _, dup := out[k]; dup {
			t.Fatalf("%s twice", k)
		}
		out[k] = o.Object
	}
	return out
}
