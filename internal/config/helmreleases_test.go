package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testbin"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// helmFleet is a one-cluster Flux repository whose root holds a
// HelmRepository at url and whose apps target holds the given files.
func helmFleet(url string, apps map[string]string) map[string]string {
	files := map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml": gotkSync("clusters/prod"),
		"clusters/prod/apps.yaml":                  fluxKustomization("apps", "apps", "  prune: true\n"),
		"clusters/prod/sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: flux-system
spec:
  interval: 1h
  url: ` + url + `
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: private
  namespace: flux-system
spec:
  interval: 1h
  url: ` + url + `
  secretRef: {name: creds}
`,
	}
	for k, v := range apps {
		files["apps/"+k] = v
	}
	return files
}

// helmRelease is a HelmRelease web in namespace shop; spec holds its spec
// fields, indented by two spaces.
func helmRelease(name, spec string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ` + name + `
  namespace: shop
spec:
  interval: 10m
` + spec
}

const fromCharts = `  chart:
    spec:
      chart: web
      version: "%s"
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
`

// A HelmRelease of a HelmRepository chart is rendered into its chart's
// objects, after the HelmRelease, with values from a ConfigMap and inline
// values over them; the hooks come before (pre) and after (post) the
// objects. Two releases of one chart version fetch it once.
func TestRenderHelmReleaseFromHelmRepository(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0", "1.1.0", "2.0.0")
	spec := fmt.Sprintf(fromCharts, ">=1.0.0 <2.0.0") + `  valuesFrom:
    - kind: ConfigMap
      name: web-values
  values:
    replicas: 3
    greeting: hi
`
	repo := load(t, testtree.New(t, helmFleet(charts.URL, map[string]string{
		"web.yaml":        helmRelease("web", spec),
		"other.yaml":      helmRelease("other", fmt.Sprintf(fromCharts, "1.1.0")),
		"web-values.yaml": configMap("shop", "web-values", "values.yaml", `"team: payments\ngreeting: from-configmap\n"`),
	})))
	apps := mustTarget(t, repo, "apps")

	// Each HelmRelease is followed by its pre hooks, its chart's objects
	// in Helm's install order, and its post hooks.
	want := []string{
		"ConfigMap/shop/web-values",
		"HelmRelease.helm.toolkit.fluxcd.io/shop/other",
		"Job.batch/shop/other-migrate",
		"ConfigMap/shop/other-config",
		"ClusterRole.rbac.authorization.k8s.io/other-reader",
		"Deployment.apps/shop/other",
		"ConfigMap/shop/other-done",
		"HelmRelease.helm.toolkit.fluxcd.io/shop/web",
		"Job.batch/shop/web-migrate",
		"ConfigMap/shop/web-config",
		"ClusterRole.rbac.authorization.k8s.io/web-reader",
		"Deployment.apps/shop/web",
		"ConfigMap/shop/web-done",
	}
	if diff := cmp.Diff(want, renderIDs(t, repo, apps)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	wantData := map[string]string{"greeting": "hi", "team": "payments", "chart": "1.1.0"}
	if diff := cmp.Diff(wantData, renderedData(t, repo, apps, "shop", "web-config")); diff != "" {
		t.Errorf("web-config (-want +got):\n%s", diff)
	}
	res, err := repo.Render(t.Context(), apps)
	if err != nil {
		t.Fatal(err)
	}
	for id, phase := range map[manifest.ID]string{
		{Group: "batch", Kind: "Job", Namespace: "shop", Name: "web-migrate"}: config.HookPre,
		{Kind: "ConfigMap", Namespace: "shop", Name: "web-done"}:              config.HookPost,
		{Kind: "ConfigMap", Namespace: "shop", Name: "web-config"}:            "",
	} {
		if got := res.Set.Get(id).GetAnnotations()[config.HelmHookAnnotation]; got != phase {
			t.Errorf("%s: %s = %q, want %q", id, config.HelmHookAnnotation, got, phase)
		}
	}
	// The render names each release and the version its range resolved to.
	wantReleases := []render.Release{
		{ID: "HelmRelease/shop/other", Name: "other", Namespace: "shop", Chart: "web", Version: "1.1.0"},
		{ID: "HelmRelease/shop/web", Name: "web", Namespace: "shop", Chart: "web", Version: "1.1.0"},
	}
	if diff := cmp.Diff(wantReleases, res.Releases, cmpopts.IgnoreFields(render.Release{}, "Objects")); diff != "" {
		t.Errorf("releases (-want +got):\n%s", diff)
	}
	checkReleaseObjects(t, res)
	if n := charts.Requests("/web-1.1.0.tgz"); n != 1 {
		t.Errorf("web-1.1.0.tgz fetched %d times, want once for two releases", n)
	}

	// The same chart and values through helm template.
	values := "replicas: 3\ngreeting: hi\nteam: payments\n"
	chartDir := testtree.New(t, helmtest.WebChart(""))
	helmOracle(t, res.Set.Objects, "web", "shop", chartDir, "1.1.0", values)
}

// A HelmRelease whose spec.chartRef is an OCIRepository renders the chart
// the registry holds at the OCIRepository's semver range, logged in with
// the username and password of its secretRef.
func TestRenderHelmReleaseFromOCIRepository(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	for _, v := range []string{"1.0.0", "1.2.0", "2.0.0"} {
		archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), v)
		helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
	}
	repo := load(t, testtree.New(t, helmFleet("http://127.0.0.1:1", map[string]string{
		"web.yaml": helmRelease("web", "  chartRef: {kind: OCIRepository, name: web}\n"),
		"source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: shop
spec:
  interval: 1h
  url: oci://` + reg.Host + `/charts/web
  insecure: true
  ref: {semver: "^1.0.0"}
  secretRef: {name: registry}
`,
		"secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: registry
  namespace: shop
stringData:
  username: ` + reg.Username + `
  password: ` + reg.Password + `
`,
	})))
	apps := mustTarget(t, repo, "apps")
	if got := renderedData(t, repo, apps, "shop", "web-config")["chart"]; got != "1.2.0" {
		t.Errorf("chart version %q rendered, want 1.2.0, the newest of ^1.0.0", got)
	}
}

// A HelmRelease whose chart is a folder of the repository's own
// GitRepository renders from the checkout.
func TestRenderHelmReleaseFromGitRepository(t *testing.T) {
	t.Parallel()
	files := helmFleet("http://127.0.0.1:1", map[string]string{
		"web.yaml": helmRelease("web", `  targetNamespace: web
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  values: {team: git}
`),
	})
	for k, v := range helmtest.WebChart("charts/web/") {
		files[k] = v
	}
	repo := load(t, testtree.New(t, files))
	apps := mustTarget(t, repo, "apps")
	want := []string{
		"HelmRelease.helm.toolkit.fluxcd.io/shop/web",
		"Job.batch/web/web-web-migrate",
		"ConfigMap/web/web-web-config",
		"ClusterRole.rbac.authorization.k8s.io/web-web-reader",
		"Deployment.apps/web/web-web",
		"ConfigMap/web/web-web-done",
	}
	if diff := cmp.Diff(want, renderIDs(t, repo, apps)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	wantData := map[string]string{"greeting": "hello", "team": "git", "chart": "1.0.0"}
	if diff := cmp.Diff(wantData, renderedData(t, repo, apps, "web", "web-web-config")); diff != "" {
		t.Errorf("web-web-config (-want +got):\n%s", diff)
	}

	// The chart folder is among the files the render read, so a change of
	// the chart is a change of the target; the target's inputs are not
	// bounded without rendering it.
	res, err := repo.Render(t.Context(), apps)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"apps/web.yaml", "charts/web/Chart.yaml", "charts/web/templates/deployment.yaml"} {
		if !slices.Contains(res.Files, f) {
			t.Errorf("Files %v lack %s", res.Files, f)
		}
	}
	wantReleases := []render.Release{{ID: "HelmRelease/shop/web", Name: "web-web", Namespace: "web", Chart: "web", Version: "1.0.0"}}
	if diff := cmp.Diff(wantReleases, res.Releases, cmpopts.IgnoreFields(render.Release{}, "Objects")); diff != "" {
		t.Errorf("releases (-want +got):\n%s", diff)
	}
	checkReleaseObjects(t, res)
	if !repo.Inputs(apps).Touches([]string{"charts/web/values.yaml"}) {
		t.Error("Inputs of a target holding a HelmRelease do not include its chart folder")
	}
}

// On a cluster whose ferry.yaml says helmReleases: controller, the
// HelmRelease stays an object for helm-controller, as before, and no chart
// is fetched.
func TestRenderHelmReleaseLeftToController(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	files := helmFleet(charts.URL, map[string]string{"web.yaml": helmRelease("web", fmt.Sprintf(fromCharts, "1.0.0"))})
	files["ferry.yaml"] = "clusters:\n  prod:\n    helmReleases: controller\n"
	repo := load(t, testtree.New(t, files))
	apps := mustTarget(t, repo, "apps")
	if apps.HelmReleases != config.HelmController {
		t.Errorf("HelmReleases = %q, want %q", apps.HelmReleases, config.HelmController)
	}
	if diff := cmp.Diff([]string{"HelmRelease.helm.toolkit.fluxcd.io/shop/web"}, renderIDs(t, repo, apps)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if n := charts.Requests("/index.yaml"); n != 0 {
		t.Errorf("index.yaml fetched %d times, want none", n)
	}
	res, err := repo.Render(t.Context(), apps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Releases) != 0 {
		t.Errorf("releases %v, want none expanded", res.Releases)
	}
	if w := repo.Inputs(apps); w.Unknown {
		t.Error("Inputs of a target left to helm-controller are unbounded, want its own files")
	}
}

func TestHelmReleasesSettingIsChecked(t *testing.T) {
	t.Parallel()
	_, err := config.ParseFile([]byte("clusters:\n  prod:\n    helmReleases: helm\n"))
	wantError(t, err, `cluster "prod": helmReleases: "helm" is not render or controller`)
}

// A HelmRelease that cannot be rendered fails its target's render, naming
// the HelmRelease and the chart.
func TestRenderHelmReleaseErrors(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	for _, tc := range []struct {
		name, spec string
		parts      []string
	}{
		{"no such version", fmt.Sprintf(fromCharts, "9.9.9"),
			[]string{`target "apps"`, "HelmRelease/shop/web", "chart web", `"9.9.9"`}},
		{"no source", strings.Replace(fmt.Sprintf(fromCharts, "1.0.0"), "name: charts", "name: elsewhere", 1),
			[]string{"HelmRelease/shop/web", "chart web", "HelmRepository/flux-system/elsewhere is not in the renders of its cluster"}},
		{"missing secretRef", strings.Replace(fmt.Sprintf(fromCharts, "1.0.0"), "name: charts", "name: private", 1),
			[]string{"HelmRelease/shop/web", "chart web", "source HelmRepository/flux-system/private: its secretRef Secret/flux-system/creds is not in the renders of its cluster"}},
		{"missing valuesFrom", fmt.Sprintf(fromCharts, "1.0.0") + "  valuesFrom: [{kind: Secret, name: web-secret}]\n",
			[]string{"HelmRelease/shop/web", "Secret/shop/web-secret not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := load(t, testtree.New(t, helmFleet(charts.URL, map[string]string{"web.yaml": helmRelease("web", tc.spec)})))
			_, err := repo.Render(t.Context(), mustTarget(t, repo, "apps"))
			wantError(t, err, tc.parts...)
		})
	}
}

// The chart's objects come from a Repo loaded with a cache folder too,
// which then holds the archive.
func TestRenderHelmReleaseCacheDir(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	cache := t.TempDir()
	dir := testtree.New(t, helmFleet(charts.URL, map[string]string{"web.yaml": helmRelease("web", fmt.Sprintf(fromCharts, "1.0.0"))}))
	for range 2 {
		repo, err := config.Load(t.Context(), dir, render.Options{HelmCacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Render(t.Context(), mustTarget(t, repo, "apps")); err != nil {
			t.Fatal(err)
		}
	}
	if n := charts.Requests("/web-1.0.0.tgz"); n != 1 {
		t.Errorf("web-1.0.0.tgz fetched %d times by two runs sharing a cache, want once", n)
	}
}

// helmOracle compares the objects objs holds for release name in
// namespace with `helm template` of the chart folder at version with the
// values: the same objects, hooks included (without ferry's hook
// annotation), namespaces aside where helm leaves them to the client.
func helmOracle(t *testing.T, objs []*unstructured.Unstructured, name, namespace, chartDir, version, values string) {
	t.Helper()
	bin := testbin.Tool(t, "helm", "tools")
	chart := filepath.Join(chartDir, "Chart.yaml")
	if err := os.WriteFile(chart, []byte("apiVersion: v2\nname: web\nversion: "+version+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for _, u := range helmtest.Template(t, bin, "template", name, chartDir, "--namespace", namespace, "-f", vf, "--skip-tests") {
		want[u.GetKind()+"/"+u.GetName()] = u.Object
	}
	got := map[string]any{}
	for _, o := range objs {
		if !strings.HasPrefix(o.GetName(), name) || o.GetKind() == "HelmRelease" || o.GetName() == name+"-values" {
			continue
		}
		u := o.DeepCopy()
		a := u.GetAnnotations()
		delete(a, config.HelmHookAnnotation)
		u.SetAnnotations(a)
		if len(a) == 0 {
			unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
		}
		if w, ok := want[u.GetKind()+"/"+u.GetName()].(map[string]any); ok {
			if _, has, _ := unstructured.NestedString(w, "metadata", "namespace"); !has {
				unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
			}
		}
		got[u.GetKind()+"/"+u.GetName()] = u.Object
	}
	if len(want) == 0 {
		t.Fatal("helm template rendered nothing")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ferry differs from helm template (-helm +ferry):\n%s", diff)
	}
	if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" }) {
		t.Error("no Deployment rendered")
	}
}

// checkReleaseObjects: each rendered release lists the objects its chart
// rendered, and each of them is in the target's render.
func checkReleaseObjects(t *testing.T, res *render.Result) {
	t.Helper()
	have := map[manifest.ID]bool{}
	for _, o := range res.Set.Objects {
		have[manifest.IDOf(o)] = true
	}
	for _, r := range res.Releases {
		if r.Skipped == "" && len(r.Objects) == 0 {
			t.Errorf("%s lists no objects", r.ID)
		}
		for _, id := range r.Objects {
			if !have[id] {
				t.Errorf("%s lists %s, which the render does not hold", r.ID, id)
			}
		}
	}
}

// TestRenderCacheKeepsNoSecretValues: a release whose values come from a
// Secret is rendered, but its render is not written to the cache folder;
// one of plain values is, and a later run reads it.
func TestRenderCacheKeepsNoSecretValues(t *testing.T) {
	t.Parallel()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	cache := t.TempDir()
	dir := testtree.New(t, helmFleet(charts.URL, map[string]string{
		"web.yaml": helmRelease("web", fmt.Sprintf(fromCharts, "1.0.0")+"  values: {greeting: plain-greeting}\n"),
		"vault.yaml": helmRelease("vault", fmt.Sprintf(fromCharts, "1.0.0")+"  valuesFrom: [{kind: Secret, name: vault-values}]\n") +
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: vault-values, namespace: shop}\nstringData:\n  values.yaml: |\n    greeting: s3cr3t-greeting\n",
	}))
	kept := func() []string {
		var out []string
		_ = filepath.WalkDir(filepath.Join(cache, "renders"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	for run := range 2 {
		repo, err := config.Load(t.Context(), dir, render.Options{HelmCacheDir: cache, HelmRenders: helm.NewRenderCache(cache, 0)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := repo.Render(t.Context(), mustTarget(t, repo, "apps"))
		if err != nil {
			t.Fatal(err)
		}
		var greetings []string
		for _, o := range res.Set.Objects {
			if g, ok, _ := unstructured.NestedString(o.Object, "data", "greeting"); ok {
				greetings = append(greetings, g)
			}
		}
		slices.Sort(greetings)
		if !slices.Equal(greetings, []string{"plain-greeting", "s3cr3t-greeting"}) {
			t.Errorf("run %d: greetings rendered %v", run, greetings)
		}
		files := kept()
		if len(files) != 1 {
			t.Fatalf("run %d: %d renders kept, want 1 (the release of plain values)", run, len(files))
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "s3cr3t") || !strings.Contains(string(b), "plain-greeting") {
			t.Errorf("run %d: the kept render holds the Secret's value, or not the plain release", run)
		}
	}
}
