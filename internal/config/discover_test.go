package config_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// fleet is a repository as `flux bootstrap` leaves it for two clusters,
// each with an "apps" Kustomization for its own overlay.
func fleet() map[string]string {
	files := map[string]string{}
	for _, c := range []string{"staging", "production"} {
		files["clusters/"+c+"/flux-system/gotk-sync.yaml"] = gotkSync("clusters/" + c)
		files["clusters/"+c+"/apps.yaml"] = fluxKustomization("apps", "apps/"+c, "  prune: true\n")
		files["apps/"+c+"/settings.yaml"] = configMap("shop", "settings", "env", c)
	}
	return files
}

// Without ferry.yaml, every Kustomization a cluster's root renders is a
// target. The same name in two clusters is qualified by the cluster.
func TestDiscoverFleet(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, fleet()))

	want := []target{
		{
			Name: "production/apps", Cluster: "production", Namespace: "flux-system",
			Path: "apps/production", Prune: true,
			Origin: "clusters/production/apps.yaml:1", Root: ".",
		},
		{
			Name: "staging/apps", Cluster: "staging", Namespace: "flux-system",
			Path: "apps/staging", Prune: true,
			Origin: "clusters/staging/apps.yaml:1", Root: ".",
		},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	wantClusters := []config.Cluster{
		{Name: "production", Path: "clusters/production", Origin: "clusters/production/flux-system/gotk-sync.yaml:12", From: config.ClusterFromSync},
		{Name: "staging", Path: "clusters/staging", Origin: "clusters/staging/flux-system/gotk-sync.yaml:12", From: config.ClusterFromSync},
	}
	if diff := cmp.Diff(wantClusters, repo.Clusters); diff != "" {
		t.Errorf("Clusters (-want +got):\n%s", diff)
	}
	if len(repo.Skipped) != 0 {
		t.Errorf("Skipped = %+v, want none", repo.Skipped)
	}
	if repo.File != nil {
		t.Errorf("File = %+v, want nil without ferry.yaml", repo.File)
	}

	_, err := repo.Target("apps")
	wantError(t, err, `"apps" is ambiguous`, "production/apps", "staging/apps")
	staging := mustTarget(t, repo, "staging/apps")
	if staging.Cluster != "staging" {
		t.Errorf(`Target("staging/apps").Cluster = %q`, staging.Cluster)
	}
	if got := renderedData(t, repo, staging, "shop", "settings")["env"]; got != "staging" {
		t.Errorf("staging/apps renders env=%q, want staging", got)
	}
	_, err = repo.Target("development/apps")
	wantError(t, err, `unknown target "development/apps"`, "known: production/apps, staging/apps")

	// The discovered Kustomization is the object from the repository.
	ks := staging.Kustomization
	if ks.GetName() != "apps" || ks.GetNamespace() != "flux-system" {
		t.Errorf("Kustomization = %s/%s, want flux-system/apps", ks.GetNamespace(), ks.GetName())
	}
}

// Targets are rendered during discovery, before their names are final;
// what Render returns afterwards carries the final name.
func TestRenderUsesFinalTargetName(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, fleet()))
	res, err := repo.Render(t.Context(), mustTarget(t, repo, "staging/apps"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != "staging/apps" {
		t.Errorf("Result.Name = %q, want staging/apps", res.Name)
	}

	files := fleet()
	delete(files, "apps/staging/settings.yaml") // apps/staging no longer exists
	repo = load(t, testtree.New(t, files))
	_, err = repo.Render(t.Context(), mustTarget(t, repo, "staging/apps"))
	wantError(t, err, `target "staging/apps"`, "apps/staging")
}

// Clusters are the trees that sync Kustomizations point at, wherever they
// are, and otherwise the folders under clusters/.
func TestDiscoverClusterRoots(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		// A sync Kustomization outside clusters/: the cluster is named
		// after the folder it points at.
		"fleets/eu/flux-system/gotk-sync.yaml": gotkSync("fleets/eu"),
		"fleets/eu/web.yaml":                   fluxKustomization("web", "apps/web", ""),
		// A clusters/ folder without Flux's sync files.
		"clusters/dev/api.yaml": fluxKustomization("api", "apps/api", ""),
		// Hidden folders are neither clusters nor scanned.
		"clusters/.template/tpl.yaml": fluxKustomization("tpl", "apps/tpl", ""),
		".github/ks.yaml":             fluxKustomization("ci", "apps/ci", ""),
		"apps/web/cm.yaml":            configMap("default", "web"),
		"apps/api/cm.yaml":            configMap("default", "api"),
	}))
	wantClusters := []config.Cluster{
		{Name: "dev", Path: "clusters/dev", Origin: "clusters/dev/", From: config.ClusterFromFolder},
		{Name: "eu", Path: "fleets/eu", Origin: "fleets/eu/flux-system/gotk-sync.yaml:12", From: config.ClusterFromSync},
	}
	if diff := cmp.Diff(wantClusters, repo.Clusters); diff != "" {
		t.Errorf("Clusters (-want +got):\n%s", diff)
	}
	want := []target{
		{Name: "api", Cluster: "dev", Namespace: "flux-system", Path: "apps/api", Origin: "clusters/dev/api.yaml:1", Root: "."},
		{Name: "web", Cluster: "eu", Namespace: "flux-system", Path: "apps/web", Origin: "fleets/eu/web.yaml:1", Root: "."},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}

// Flux applies what the cluster root renders, so a target is the
// Kustomization as the root's kustomization.yaml patches it.
func TestDiscoverTargetsAsPatched(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"clusters/staging/flux-system/gotk-sync.yaml": gotkSync("clusters/staging"),
		"clusters/staging/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system/gotk-sync.yaml
  - apps.yaml
patches:
  - target:
      group: kustomize.toolkit.fluxcd.io
      kind: Kustomization
    patch: |
      - op: add
        path: /spec/prune
        value: true
      - op: add
        path: /spec/targetNamespace
        value: patched
`,
		"clusters/staging/apps.yaml": fluxKustomization("apps", "apps", "  prune: false\n"),
		// Not listed in the root's kustomization.yaml: found by the file
		// scan, so not patched.
		"clusters/staging/unlisted.yaml": fluxKustomization("unlisted", "apps", "  prune: false\n"),
		"apps/settings.yaml":             configMap("", "settings"),
	}
	repo := load(t, testtree.New(t, files))
	want := []target{
		{
			Name: "apps", Cluster: "staging", Namespace: "flux-system", Path: "apps",
			Prune: true, TargetNamespace: "patched",
			Origin: "clusters/staging/apps.yaml:1", Root: ".",
		},
		{
			Name: "unlisted", Cluster: "staging", Namespace: "flux-system", Path: "apps",
			Origin: "clusters/staging/unlisted.yaml:1", Root: ".",
		},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	apps := mustTarget(t, repo, "apps")
	if diff := cmp.Diff([]string{"ConfigMap/patched/settings"}, renderIDs(t, repo, apps)); diff != "" {
		t.Errorf("apps renders (-want +got):\n%s", diff)
	}
}

// A Kustomization rendered by a target is a target of the same cluster,
// however deep.
func TestDiscoverNested(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/staging/flux-system/gotk-sync.yaml": gotkSync("clusters/staging"),
		"clusters/staging/infra.yaml":                 fluxKustomization("infra", "infrastructure/staging", ""),
		"infrastructure/staging/controllers.yaml":     fluxKustomization("controllers", "infrastructure/controllers", ""),
		"infrastructure/staging/configs.yaml": fluxKustomization("configs", "infrastructure/configs",
			"  dependsOn:\n    - name: controllers\n"),
		"infrastructure/controllers/ingress.yaml": fluxKustomization("ingress", "infrastructure/ingress", ""),
		"infrastructure/controllers/ns.yaml":      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ingress\n",
		"infrastructure/configs/cm.yaml":          configMap("default", "configs"),
		"infrastructure/ingress/cm.yaml":          configMap("ingress", "controller"),
	}))
	want := []target{
		{Name: "controllers", Cluster: "staging", Namespace: "flux-system", Path: "infrastructure/controllers", Origin: "infrastructure/staging/controllers.yaml:1", Root: "."},
		{Name: "configs", Cluster: "staging", Namespace: "flux-system", Path: "infrastructure/configs", DependsOn: []string{"controllers"}, Origin: "infrastructure/staging/configs.yaml:1", Root: "."},
		{Name: "infra", Cluster: "staging", Namespace: "flux-system", Path: "infrastructure/staging", Origin: "clusters/staging/infra.yaml:1", Root: "."},
		{Name: "ingress", Cluster: "staging", Namespace: "flux-system", Path: "infrastructure/ingress", Origin: "infrastructure/controllers/ingress.yaml:1", Root: "."},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ConfigMap/ingress/controller"}, renderIDs(t, repo, mustTarget(t, repo, "ingress"))); diff != "" {
		t.Errorf("ingress renders (-want +got):\n%s", diff)
	}
}

// Kustomizations in files no cluster root reaches are targets too, found
// by scanning the files; their origin is the document's first line.
func TestDiscoverFileScanFallback(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"other/stack.yaml": configMap("flux-system", "not-flux") + "---\n" +
			fluxKustomization("web", "other/web", "") +
			"--- # a comment on the separator\n" +
			fluxKustomization("api", "other/api", "  dependsOn:\n    - name: web\n"),
		"other/web/cm.yaml": configMap("default", "web"),
	}))
	// The ConfigMap takes lines 1-5 and "---" line 6, so web starts on
	// line 7; web takes 11 lines, so api starts on line 19.
	want := []target{
		{Name: "web", Namespace: "flux-system", Path: "other/web", Origin: "other/stack.yaml:7", Root: "."},
		{Name: "api", Namespace: "flux-system", Path: "other/api", DependsOn: []string{"web"}, Origin: "other/stack.yaml:19", Root: "."},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if len(repo.Clusters) != 0 {
		t.Errorf("Clusters = %+v, want none", repo.Clusters)
	}
	if diff := cmp.Diff([]string{"ConfigMap/default/web"}, renderIDs(t, repo, mustTarget(t, repo, "web"))); diff != "" {
		t.Errorf("web renders (-want +got):\n%s", diff)
	}
}

// A Kustomization in a file no root reaches is a target even when a
// reached Kustomization has the same namespace and name.
func TestDiscoverFileScanFallbackSameName(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/staging/apps.yaml": fluxKustomization("apps", "apps", ""),
		"other/apps.yaml":            fluxKustomization("apps", "other", ""),
	}))
	want := []target{
		{Name: "apps", Namespace: "flux-system", Path: "other", Origin: "other/apps.yaml:1", Root: "."},
		{Name: "staging/apps", Cluster: "staging", Namespace: "flux-system", Path: "apps", Origin: "clusters/staging/apps.yaml:1", Root: "."},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}

// YAML that is not an object (a list, a scalar) is not a Flux object,
// even when it mentions a Flux API group.
func TestDiscoverIgnoresYAMLThatIsNotAnObject(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"docs/links.yaml":            "# see https://toolkit.fluxcd.io\n- getting-started\n- guides\n",
		"docs/word.yaml":             "toolkit.fluxcd.io\n",
		"clusters/staging/apps.yaml": fluxKustomization("apps", "apps", ""),
	}))
	if diff := cmp.Diff([]string{"apps"}, targetNames(repo.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}

// A Flux file that does not parse fails discovery, naming file and line.
func TestDiscoverInvalidFluxYAML(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"clusters/staging/apps.yaml": configMap("flux-system", "ok") + "---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: [\n",
	})
	_, err := config.Load(t.Context(), dir, render.Options{})
	wantError(t, err, "clusters/staging/apps.yaml:9", "invalid YAML")
}

// A cluster root that does not build fails Load, naming the cluster.
func TestDiscoverBrokenClusterRoot(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"clusters/staging/flux-system/gotk-sync.yaml": gotkSync("clusters/staging"),
		"clusters/staging/kustomization.yaml":         "resources: [missing.yaml]\n",
	})
	_, err := config.Load(t.Context(), dir, render.Options{})
	wantError(t, err, `discovering targets of cluster "staging"`, "missing.yaml")
}

// dependsOn between discovered Kustomizations resolves to target names in
// the same cluster (qualified when the names are) and orders the targets.
func TestDiscoverDependsOn(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for _, c := range []string{"staging", "production"} {
		files["clusters/"+c+"/flux-system/gotk-sync.yaml"] = gotkSync("clusters/" + c)
		files["clusters/"+c+"/apps.yaml"] = fluxKustomization("apps", "apps", "  dependsOn:\n    - name: infra\n")
		files["clusters/"+c+"/infra.yaml"] = fluxKustomization("infra", "infra", "")
	}
	// Only staging has monitoring, which names the namespace of its dependency.
	files["clusters/staging/monitoring.yaml"] = fluxKustomization("monitoring", "monitoring",
		"  dependsOn:\n    - name: infra\n      namespace: flux-system\n    - name: apps\n")
	repo := load(t, testtree.New(t, files))
	type deps struct {
		Name      string
		DependsOn []string
	}
	var got []deps
	for _, tg := range repo.Targets {
		got = append(got, deps{tg.Name, tg.DependsOn})
	}
	// Dependencies first; otherwise the smallest name that is ready.
	want := []deps{
		{"production/infra", nil},
		{"production/apps", []string{"production/infra"}},
		{"staging/infra", nil},
		{"staging/apps", []string{"staging/infra"}},
		{"monitoring", []string{"staging/apps", "staging/infra"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets and their dependencies, in order (-want +got):\n%s", diff)
	}
	assertDependencyOrder(t, repo)

	t.Run("unknown dependency", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{
			"clusters/staging/apps.yaml": fluxKustomization("apps", "apps", "  dependsOn:\n    - name: infra\n"),
		})
		wantError(t, mustTarget(t, load(t, dir), "apps").Err, `target "apps"`, "clusters/staging/apps.yaml:1", `dependsOn "infra"`)
	})
	t.Run("dependency in another namespace", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{
			"clusters/staging/apps.yaml":  fluxKustomization("apps", "apps", "  dependsOn:\n    - name: infra\n      namespace: platform\n"),
			"clusters/staging/infra.yaml": fluxKustomization("infra", "infra", ""),
		})
		wantError(t, mustTarget(t, load(t, dir), "apps").Err, `target "apps"`, `dependsOn "infra" (namespace platform)`)
	})
	t.Run("dependsOn without a namespace means the dependent's own namespace", func(t *testing.T) {
		t.Parallel()
		repo := load(t, testtree.New(t, map[string]string{
			"clusters/staging/apps.yaml":    fluxKustomizationIn("team-a", "apps", "apps", "  dependsOn:\n    - name: infra\n"),
			"clusters/staging/infra-a.yaml": fluxKustomizationIn("team-a", "infra", "infra", ""),
			"clusters/staging/infra-b.yaml": fluxKustomizationIn("team-b", "infra", "infra", ""),
		}))
		if diff := cmp.Diff([]string{"staging/team-a/infra"}, mustTarget(t, repo, "apps").DependsOn); diff != "" {
			t.Errorf("apps depends on (-want +got):\n%s", diff)
		}

		dir := testtree.New(t, map[string]string{
			"clusters/staging/apps.yaml":  fluxKustomizationIn("team-a", "apps", "apps", "  dependsOn:\n    - name: infra\n"),
			"clusters/staging/infra.yaml": fluxKustomizationIn("team-b", "infra", "infra", ""),
		})
		wantError(t, mustTarget(t, load(t, dir), "apps").Err, `target "apps"`, `dependsOn "infra" (namespace team-a)`)
	})
	t.Run("cycle", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{
			"clusters/staging/a.yaml": fluxKustomization("a", "x", "  dependsOn:\n    - name: b\n"),
			"clusters/staging/b.yaml": fluxKustomization("b", "x", "  dependsOn:\n    - name: a\n"),
		})
		repo := load(t, dir)
		wantError(t, mustTarget(t, repo, "a").Err, "dependsOn cycle", "a -> b -> a")
		wantError(t, mustTarget(t, repo, "b").Err, "dependsOn cycle", "a -> b -> a")
	})
}

// The same Kustomization name twice in a cluster, in two namespaces, is
// qualified by cluster and namespace.
func TestDiscoverNamesByNamespace(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/staging/a.yaml":    fluxKustomizationIn("team-a", "apps", "apps", ""),
		"clusters/staging/b.yaml":    fluxKustomizationIn("team-b", "apps", "apps", ""),
		"clusters/production/a.yaml": fluxKustomizationIn("team-a", "apps", "apps", ""),
		"other/a.yaml":               fluxKustomizationIn("team-a", "tools", "tools", ""),
		"other/b.yaml":               fluxKustomizationIn("team-b", "tools", "tools", ""),
	}))
	want := []string{"production/apps", "staging/team-a/apps", "staging/team-b/apps", "team-a/tools", "team-b/tools"}
	if diff := cmp.Diff(want, targetNames(repo.Targets)); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if got := mustTarget(t, repo, "staging/team-b/apps").Namespace; got != "team-b" {
		t.Errorf("staging/team-b/apps namespace = %q", got)
	}
	_, err := repo.Target("staging/apps")
	wantError(t, err, "ambiguous", "staging/team-a/apps", "staging/team-b/apps")
	if got := mustTarget(t, repo, "production/apps").Namespace; got != "team-a" {
		t.Errorf("production/apps namespace = %q", got)
	}
}

// ferry.yaml without targets still says how to reach discovered clusters.
func TestDiscoverClusterConfig(t *testing.T) {
	t.Parallel()
	files := fleet()
	files["ferry.yaml"] = `
clusters:
  staging:
    kubeconfig: ~/.kube/staging
    context: stg
  production:
    kubeconfigEnv: PROD_KUBECONFIG
`
	repo := load(t, testtree.New(t, files))
	type reach struct{ Name, Kubeconfig, KubeconfigEnv, Context string }
	var got []reach
	for _, tg := range repo.Targets {
		got = append(got, reach{tg.Name, tg.Kubeconfig, tg.KubeconfigEnv, tg.Context})
	}
	want := []reach{
		{Name: "production/apps", KubeconfigEnv: "PROD_KUBECONFIG"},
		{Name: "staging/apps", Kubeconfig: "~/.kube/staging", Context: "stg"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("how targets reach their cluster (-want +got):\n%s", diff)
	}
}

// A Kustomization of another Git repository renders from where ferry.yaml
// says that repository is checked out; without that it is skipped, as are
// sources ferry cannot read.
func TestDiscoverSources(t *testing.T) {
	t.Parallel()
	// shop.yaml: a GitRepository (10 lines) and, from line 12, a
	// Kustomization that renders from it.
	shop := `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app-repo
  namespace: flux-system
spec:
  interval: 1m
  url: https://example.com/app-repo
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: shop
  namespace: flux-system
spec:
  interval: 10m
  path: ./deploy
  sourceRef:
    kind: GitRepository
    name: app-repo
`
	oci := `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 10m
  path: ./
  sourceRef:
    kind: OCIRepository
    name: podinfo
`
	repoFiles := func(ferryYAML string) map[string]string {
		files := map[string]string{
			"fleet/clusters/staging/flux-system/gotk-sync.yaml": gotkSync("clusters/staging"),
			"fleet/clusters/staging/shop.yaml":                  shop,
			"fleet/clusters/staging/podinfo.yaml":               oci,
			"app-repo/deploy/shop.yaml":                         configMap("shop", "shop-config", "from", "app-repo"),
		}
		if ferryYAML != "" {
			files["fleet/ferry.yaml"] = ferryYAML
		}
		return files
	}
	ociSkipped := config.Skipped{
		Name: "podinfo", Cluster: "staging", Origin: "clusters/staging/podinfo.yaml:1",
		Reason: "source OCIRepository/flux-system/podinfo is an artifact ferry does not fetch: if CI builds it from a folder of this repository, add it to ferry.yaml: sources: {OCIRepository/podinfo: ./<folder>}",
	}

	t.Run("another repository without ferry.yaml sources is skipped", func(t *testing.T) {
		t.Parallel()
		repo := load(t, filepath.Join(testtree.New(t, repoFiles("")), "fleet"))
		if len(repo.Targets) != 0 {
			t.Errorf("targets = %v, want none", targetNames(repo.Targets))
		}
		want := []config.Skipped{
			{
				Name: "shop", Cluster: "staging", Origin: "clusters/staging/shop.yaml:12",
				Reason: "source GitRepository/flux-system/app-repo is another repository: check it out beside this one and add it to ferry.yaml: sources: {app-repo: ../<checkout>}",
			},
			ociSkipped,
		}
		if diff := cmp.Diff(want, repo.Skipped, cmpopts.SortSlices(func(a, b config.Skipped) bool { return a.Name > b.Name })); diff != "" {
			t.Errorf("Skipped (-want +got):\n%s", diff)
		}
		_, err := repo.Target("shop")
		wantError(t, err, `target "shop" is skipped`, "sources: {app-repo: ../<checkout>}")
		_, err = repo.Target("staging/podinfo")
		wantError(t, err, `target "staging/podinfo" is skipped`, "sources: {OCIRepository/podinfo: ./<folder>}")
	})

	t.Run("ferry.yaml sources names where it is checked out", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, repoFiles("sources:\n  app-repo: ../app-repo\n"))
		repo := load(t, filepath.Join(dir, "fleet"))
		want := []target{{
			Name: "shop", Cluster: "staging", Namespace: "flux-system", Path: "deploy",
			Origin: "clusters/staging/shop.yaml:12", Root: "../app-repo",
		}}
		if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("targets (-want +got):\n%s", diff)
		}
		shopTarget := mustTarget(t, repo, "shop")
		if shopTarget.Root != filepath.Join(dir, "app-repo") {
			t.Errorf("Root = %q, want %q", shopTarget.Root, filepath.Join(dir, "app-repo"))
		}
		want2 := map[string]string{"from": "app-repo"}
		if diff := cmp.Diff(want2, renderedData(t, repo, shopTarget, "shop", "shop-config")); diff != "" {
			t.Errorf("rendered from the other repository (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]config.Skipped{ociSkipped}, repo.Skipped); diff != "" {
			t.Errorf("Skipped (-want +got):\n%s", diff)
		}
	})

	t.Run("ferry.yaml sources path that is not there", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, repoFiles("sources:\n  app-repo: ../not-checked-out\n"))
		repo := load(t, filepath.Join(dir, "fleet"))
		var reason string
		for _, s := range repo.Skipped {
			if s.Name == "shop" {
				reason = s.Reason
			}
		}
		want := `source GitRepository/flux-system/app-repo: ferry.yaml sources "app-repo" says it is at ../not-checked-out, which is not a directory`
		if reason != want {
			t.Errorf("shop skipped because %q, want %q", reason, want)
		}
	})
}

// The only GitRepository of a repository stands for the repository, even
// when it is not called flux-system.
func TestDiscoverSingleGitRepositoryIsSelf(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/staging/source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
  namespace: flux-system
spec:
  url: https://example.com/fleet
`,
		"clusters/staging/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  path: ./apps
  sourceRef:
    kind: GitRepository
    name: fleet
`,
		"apps/cm.yaml": configMap("default", "apps"),
	}))
	if len(repo.Skipped) != 0 {
		t.Errorf("Skipped = %+v, want none", repo.Skipped)
	}
	if diff := cmp.Diff([]string{"ConfigMap/default/apps"}, renderIDs(t, repo, mustTarget(t, repo, "apps"))); diff != "" {
		t.Errorf("apps renders (-want +got):\n%s", diff)
	}
}

// postBuild.substituteFrom reads ConfigMaps and Secrets the cluster
// renders, failing as Flux does when one is missing and not optional.
func TestDiscoverSubstituteFrom(t *testing.T) {
	t.Parallel()
	const settings = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  region: "${region:=unset}"
  env: "${env}"
`
	apps := func(substituteFrom string) string {
		return fluxKustomization("apps", "apps", `  postBuild:
    substitute:
      env: staging
    substituteFrom:
`+substituteFrom)
	}
	tests := []struct {
		name  string
		files map[string]string
		want  map[string]string // rendered settings data
		// without: the ConfigMap the render goes without (not in Git
		// where Flux would look for it), its variable left as written
		without string
	}{
		{
			name: "ConfigMap the cluster root renders",
			files: map[string]string{
				"clusters/staging/vars.yaml": configMap("flux-system", "cluster-vars", "region", "eu-west-1"),
				"clusters/staging/apps.yaml": apps("      - kind: ConfigMap\n        name: cluster-vars\n"),
			},
			want: map[string]string{"region": "eu-west-1", "env": "staging"},
		},
		{
			name: "Secret the cluster root renders",
			files: map[string]string{
				"clusters/staging/vars.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nstringData:\n  region: us-east-1\n",
				"clusters/staging/apps.yaml": apps("      - kind: Secret\n        name: cluster-secrets\n"),
			},
			want: map[string]string{"region": "us-east-1", "env": "staging"},
		},
		{
			name: "ConfigMap another target of the cluster renders",
			files: map[string]string{
				"clusters/staging/vars.yaml": fluxKustomization("vars", "vars", ""),
				"vars/cm.yaml":               configMap("flux-system", "cluster-vars", "region", "ap-south-1"),
				"clusters/staging/apps.yaml": apps("      - kind: ConfigMap\n        name: cluster-vars\n"),
			},
			want: map[string]string{"region": "ap-south-1", "env": "staging"},
		},
		{
			// apps is rendered during discovery before vars is found
			// (inside infra); the ConfigMap is still found afterwards.
			name: "ConfigMap a target found later, inside another, renders",
			files: map[string]string{
				"clusters/staging/infra.yaml": fluxKustomization("infra", "infra", ""),
				"infra/vars.yaml":             fluxKustomization("vars", "vars", ""),
				"vars/cm.yaml":                configMap("flux-system", "cluster-vars", "region", "sa-east-1"),
				"clusters/staging/apps.yaml":  apps("      - kind: ConfigMap\n        name: cluster-vars\n"),
			},
			want: map[string]string{"region": "sa-east-1", "env": "staging"},
		},
		{
			// The same with optional: true: discovery's render succeeds
			// without the ConfigMap, and must not be what Render returns.
			name: "optional ConfigMap a target found later renders",
			files: map[string]string{
				"clusters/staging/infra.yaml": fluxKustomization("infra", "infra", ""),
				"infra/vars.yaml":             fluxKustomization("vars", "vars", ""),
				"vars/cm.yaml":                configMap("flux-system", "cluster-vars", "region", "sa-east-1"),
				"clusters/staging/apps.yaml":  apps("      - kind: ConfigMap\n        name: cluster-vars\n        optional: true\n"),
			},
			want: map[string]string{"region": "sa-east-1", "env": "staging"},
		},
		{
			// Not in Git: only the cluster holds it. Offline, the target
			// renders without it, its variable left as written.
			name: "missing ConfigMap",
			files: map[string]string{
				"clusters/staging/apps.yaml": apps("      - kind: ConfigMap\n        name: missing-vars\n"),
			},
			without: "ConfigMap/flux-system/missing-vars",
		},
		{
			name: "ConfigMap of another cluster",
			files: map[string]string{
				"clusters/production/vars.yaml": configMap("flux-system", "cluster-vars", "region", "eu-west-1"),
				"clusters/staging/apps.yaml":    apps("      - kind: ConfigMap\n        name: cluster-vars\n"),
			},
			without: "ConfigMap/flux-system/cluster-vars",
		},
		{
			name: "ConfigMap in another namespace",
			files: map[string]string{
				"clusters/staging/vars.yaml": configMap("default", "cluster-vars", "region", "eu-west-1"),
				"clusters/staging/apps.yaml": apps("      - kind: ConfigMap\n        name: cluster-vars\n"),
			},
			without: "ConfigMap/flux-system/cluster-vars",
		},
		{
			name: "missing optional ConfigMap",
			files: map[string]string{
				"clusters/staging/apps.yaml": apps("      - kind: ConfigMap\n        name: missing-vars\n        optional: true\n"),
			},
			want: map[string]string{"region": "unset", "env": "staging"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.files["apps/settings.yaml"] = settings
			repo := load(t, testtree.New(t, tc.files))
			apps := mustTarget(t, repo, "apps")
			if tc.without != "" {
				res, err := repo.Render(t.Context(), apps)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.Without, []string{tc.without}) {
					t.Errorf("rendered without %v, want %s", res.Without, tc.without)
				}
				want := map[string]string{"region": "${region:=unset}", "env": "staging"}
				if diff := cmp.Diff(want, renderedData(t, repo, apps, "shop", "settings")); diff != "" {
					t.Errorf("substituted data (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tc.want, renderedData(t, repo, apps, "shop", "settings")); diff != "" {
				t.Errorf("substituted data (-want +got):\n%s", diff)
			}
		})
	}
}

// A Flux path without a kustomization.yaml renders every YAML file under
// it, subfolders included; a subfolder with its own kustomization.yaml
// renders what that lists.
func TestRenderPathWithoutKustomizationFile(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"clusters/staging/apps.yaml":         fluxKustomization("apps", "apps", ""),
		"apps/a.yaml":                        configMap("default", "a"),
		"apps/sub/b.yml":                     configMap("default", "b"),
		"apps/sub/deeper/c.yaml":             configMap("default", "c") + "---\n" + configMap("default", "d"),
		"apps/README.md":                     "# not YAML\n",
		"apps/kustomized/kustomization.yaml": "resources: [listed.yaml]\n",
		"apps/kustomized/listed.yaml":        configMap("default", "listed"),
		"apps/kustomized/unlisted.yaml":      configMap("default", "unlisted"),
	}))
	got := renderIDs(t, repo, mustTarget(t, repo, "apps"))
	want := []string{"ConfigMap/default/a", "ConfigMap/default/b", "ConfigMap/default/c", "ConfigMap/default/d", "ConfigMap/default/listed"}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}

// The file scan reads lines of any length up to 16 MiB: a Kustomization
// after a ConfigMap holding a 2 MiB line is still found.
func TestDiscoverFileScanLongLine(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, map[string]string{
		"other/stack.yaml": configMap("flux-system", "big", "blob", strings.Repeat("x", 2<<20)) + "---\n" +
			fluxKustomization("web", "other/web", ""),
		"other/web/cm.yaml": configMap("default", "web"),
	}))
	want := []target{{Name: "web", Namespace: "flux-system", Path: "other/web", Origin: "other/stack.yaml:9", Root: "."}}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}
