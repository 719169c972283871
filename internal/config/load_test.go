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

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// A ferry.yaml that declares targets replaces discovery: each entry is a
// target, in dependency order, reaching its cluster as the clusters map
// says unless the target says otherwise.
func TestLoadFerryYAMLTargets(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"ferry.yaml": `
clusters:
  staging:
    kubeconfig: ~/.kube/staging
    context: stg
targets:
  - name: web
    cluster: staging
    path: ./apps/web/
    prune: true
    dependsOn: [infra]
  - name: infra
    cluster: staging
    kubeconfigEnv: INFRA_KUBECONFIG
    path: infra
  - name: tools
    namespace: platform
    path: tools
    targetNamespace: tools
`,
		// A Flux Kustomization in the repository does not become a
		// target: ferry.yaml's targets replace discovery.
		"clusters/staging/ignored.yaml": fluxKustomization("ignored", "apps/web", ""),
	})
	repo := load(t, dir)
	want := []target{
		{
			Name: "infra", Cluster: "staging", Namespace: "flux-system", Path: "infra",
			KubeconfigEnv: "INFRA_KUBECONFIG", Context: "stg",
			Origin: "ferry.yaml targets[1]", Root: ".",
		},
		{
			Name: "tools", Namespace: "platform", Path: "tools", TargetNamespace: "tools",
			Origin: "ferry.yaml targets[2]", Root: ".",
		},
		{
			Name: "web", Cluster: "staging", Namespace: "flux-system", Path: "apps/web", Prune: true,
			DependsOn:  []string{"infra"},
			Kubeconfig: "~/.kube/staging", Context: "stg",
			Origin: "ferry.yaml targets[0]", Root: ".",
		},
	}
	if diff := cmp.Diff(want, targets(t, repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if len(repo.Clusters) != 0 || len(repo.Skipped) != 0 {
		t.Errorf("ferry.yaml targets: Clusters = %v, Skipped = %v; want none (no discovery)", repo.Clusters, repo.Skipped)
	}
	if repo.File == nil || len(repo.File.Targets) != 3 {
		t.Errorf("repo.File = %+v, want the parsed ferry.yaml", repo.File)
	}
	// The synthesized Kustomization carries the Flux spec, not ferry's own fields.
	ks := mustTarget(t, repo, "web").Kustomization
	if ks.GetName() != "web" || ks.GetNamespace() != "flux-system" || ks.GetKind() != "Kustomization" || ks.GetAPIVersion() != "kustomize.toolkit.fluxcd.io/v1" {
		t.Errorf("Kustomization = %s %s %s/%s", ks.GetAPIVersion(), ks.GetKind(), ks.GetNamespace(), ks.GetName())
	}
	spec, _ := ks.Object["spec"].(map[string]any)
	wantSpec := map[string]any{"path": "./apps/web/", "prune": true}
	if diff := cmp.Diff(wantSpec, spec); diff != "" {
		t.Errorf("web Kustomization spec (-want +got):\n%s", diff)
	}
}

func TestLoadOrdersByDependsOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		targets string // ferry.yaml targets, one per line as a flow map
		want    []string
	}{
		{
			name:    "no dependencies: by name",
			targets: "{name: c, path: x}\n{name: a, path: x}\n{name: b, path: x}",
			want:    []string{"a", "b", "c"},
		},
		{
			name:    "dependency first even when its name sorts later",
			targets: "{name: app, path: x, dependsOn: [infra]}\n{name: infra, path: x}",
			want:    []string{"infra", "app"},
		},
		{
			name:    "chain",
			targets: "{name: a, path: x, dependsOn: [b]}\n{name: b, path: x, dependsOn: [c]}\n{name: c, path: x}",
			want:    []string{"c", "b", "a"},
		},
		{
			name:    "diamond: ties broken by name",
			targets: "{name: d, path: x, dependsOn: [c, b]}\n{name: c, path: x, dependsOn: [a]}\n{name: b, path: x, dependsOn: [a]}\n{name: a, path: x}",
			want:    []string{"a", "b", "c", "d"},
		},
		{
			// b and z are both ready first; b is the smaller name.
			name:    "a target free to go is not held behind an unrelated dependency",
			targets: "{name: a, path: x, dependsOn: [z]}\n{name: b, path: x}\n{name: z, path: x}",
			want:    []string{"b", "z", "a"},
		},
		{
			name:    "dependsOn with a namespace",
			targets: "{name: app, path: x, dependsOn: [{name: db, namespace: data}]}\n{name: db, namespace: data, path: x}",
			want:    []string{"db", "app"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			yml := "targets:\n"
			for _, l := range strings.Split(tc.targets, "\n") {
				yml += "  - " + l + "\n"
			}
			repo := load(t, testtree.New(t, map[string]string{"ferry.yaml": yml}))
			if diff := cmp.Diff(tc.want, targetNames(repo.Targets)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			assertDependencyOrder(t, repo)
		})
	}
}

// assertDependencyOrder checks that every target comes after the targets
// it depends on, and that its DependsOn names targets.
func assertDependencyOrder(t *testing.T, repo *config.Repo) {
	t.Helper()
	pos := map[string]int{}
	for i, tg := range repo.Targets {
		pos[tg.Name] = i
	}
	for i, tg := range repo.Targets {
		for _, d := range tg.DependsOn {
			j, ok := pos[d]
			if !ok {
				t.Errorf("target %q depends on %q, which is not a target name", tg.Name, d)
			} else if j >= i {
				t.Errorf("target %q (at %d) comes before its dependency %q (at %d)", tg.Name, i, d, j)
			}
		}
	}
}

// A dependsOn that cannot be resolved is an error of the target that
// declares it (and, for a cycle, of every target in it), never of the
// repository: Load succeeds, the other targets are fine, and a target
// that only depends on a broken one is blocked (for apply) but renders.
func TestLoadDependsOnErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		yaml    string
		broken  []string // targets whose own Err holds want
		blocked []string // targets without an error of their own that cannot be applied
		fine    []string
		want    []string
	}{
		{
			name:   "unknown dependency",
			yaml:   "targets:\n  - {name: app, path: x, dependsOn: [infra]}\n  - {name: other, path: x}\n",
			broken: []string{"app"}, fine: []string{"other"},
			want: []string{`target "app"`, "ferry.yaml targets[0]", `dependsOn "infra"`, "not a target"},
		},
		{
			name:   "cycle of two",
			yaml:   "targets:\n  - {name: a, path: x, dependsOn: [b]}\n  - {name: b, path: x, dependsOn: [a]}\n",
			broken: []string{"a", "b"},
			want:   []string{"dependsOn cycle", "a -> b -> a"},
		},
		{
			name:    "cycle of three, entered from outside",
			yaml:    "targets:\n  - {name: a, path: x, dependsOn: [b]}\n  - {name: b, path: x, dependsOn: [c]}\n  - {name: c, path: x, dependsOn: [d]}\n  - {name: d, path: x, dependsOn: [b]}\n  - {name: e, path: x}\n",
			broken:  []string{"b", "c", "d"},
			blocked: []string{"a"},
			fine:    []string{"e"},
			want:    []string{"dependsOn cycle", "b -> c -> d -> b"},
		},
		{
			name:   "depends on itself",
			yaml:   "targets:\n  - {name: a, path: x, dependsOn: [a]}\n",
			broken: []string{"a"},
			want:   []string{`target "a"`, `dependsOn "a"`},
		},
		{
			name:   "dependency in another cluster",
			yaml:   "targets:\n  - {name: app, cluster: prod, path: x, dependsOn: [infra]}\n  - {name: infra, cluster: staging, path: x}\n",
			broken: []string{"app"}, fine: []string{"infra"},
			want: []string{`target "app"`, `dependsOn "infra"`, "not a target"},
		},
		{
			name:   "dependency in another namespace",
			yaml:   "targets:\n  - {name: app, path: x, dependsOn: [{name: infra, namespace: other}]}\n  - {name: infra, path: x}\n",
			broken: []string{"app"}, fine: []string{"infra"},
			want: []string{`target "app"`, `dependsOn "infra" (namespace other)`, "not a target"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testtree.New(t, map[string]string{"ferry.yaml": tc.yaml, "x/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"})
			repo := load(t, dir)
			for _, n := range tc.broken {
				tg := mustTarget(t, repo, n)
				wantError(t, tg.Err, tc.want...)
				_, err := repo.Render(t.Context(), tg)
				wantError(t, err, tc.want...)
				wantError(t, repo.Blocked(tg), tc.want...)
			}
			for _, n := range tc.blocked {
				tg := mustTarget(t, repo, n)
				if tg.Err != nil {
					t.Errorf("target %s: own error %v, want none", n, tg.Err)
				}
				if _, err := repo.Render(t.Context(), tg); err != nil {
					t.Errorf("target %s does not render: %v", n, err)
				}
				wantError(t, repo.Blocked(tg), fmt.Sprintf("target %q depends on", n), "dependsOn cycle")
			}
			for _, n := range tc.fine {
				tg := mustTarget(t, repo, n)
				if err := repo.Blocked(tg); err != nil {
					t.Errorf("target %s: %v, want no error", n, err)
				}
				if _, err := repo.Render(t.Context(), tg); err != nil {
					t.Errorf("target %s does not render: %v", n, err)
				}
			}
		})
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{"ferry.yaml": `
targets:
  - {name: web, path: x, dependsOn: [db]}
  - {name: db, path: x}
  - {name: cache, path: x}
`})
	repo := load(t, dir)
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{"nil selects all, in dependency order", nil, []string{"cache", "db", "web"}},
		{"empty selects all", []string{}, []string{"cache", "db", "web"}},
		{"one", []string{"db"}, []string{"db"}},
		{"dependency order, not the order asked", []string{"web", "db"}, []string{"db", "web"}},
		{"named twice", []string{"cache", "cache"}, []string{"cache"}},
		{"a selected target does not pull in its dependencies", []string{"web"}, []string{"web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := repo.Select(tc.names)
			if err != nil {
				t.Fatalf("Select(%q): %v", tc.names, err)
			}
			if diff := cmp.Diff(tc.want, targetNames(got)); diff != "" {
				t.Errorf("Select(%q) (-want +got):\n%s", tc.names, diff)
			}
		})
	}
	t.Run("unknown name", func(t *testing.T) {
		got, err := repo.Select([]string{"nope"})
		if got != nil {
			t.Errorf("Select returned %v along with the error", targetNames(got))
		}
		wantError(t, err, `unknown target "nope"`, "known: cache, db, web")
	})
	t.Run("every unknown name is reported", func(t *testing.T) {
		_, err := repo.Select([]string{"nope", "web", "nada"})
		wantError(t, err, `unknown target "nope"`, `unknown target "nada"`)
	})
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	t.Run("no such directory", func(t *testing.T) {
		t.Parallel()
		_, err := config.Load(t.Context(), filepath.Join(t.TempDir(), "missing"), render.Options{})
		wantError(t, err, "not a directory")
	})
	t.Run("a file, not a directory", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{"file.yaml": "a: b\n"})
		_, err := config.Load(t.Context(), filepath.Join(dir, "file.yaml"), render.Options{})
		wantError(t, err, "not a directory")
	})
	t.Run("invalid ferry.yaml", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{"ferry.yaml": "targets: [{name: a, pth: x}]\n"})
		_, err := config.Load(t.Context(), dir, render.Options{})
		wantError(t, err, "ferry.yaml", "pth")
	})
}

// A relative repository path is made absolute, so targets' Roots do not
// depend on the working directory at render time.
func TestLoadRelativeRoot(t *testing.T) {
	// Not parallel: it changes the working directory.
	dir := testtree.New(t, map[string]string{
		"repo/ferry.yaml":  "targets: [{name: a, path: app}]\n",
		"repo/app/cm.yaml": configMap("default", "a"),
		"elsewhere/.keep":  "",
	})
	t.Chdir(dir)
	repo := load(t, "repo")
	want := filepath.Join(dir, "repo")
	if repo.Root != want {
		t.Errorf("Root = %q, want %q", repo.Root, want)
	}
	if got := repo.Targets[0].Root; got != want {
		t.Errorf("target Root = %q, want %q", got, want)
	}
	t.Chdir(filepath.Join(dir, "elsewhere"))
	if diff := cmp.Diff([]string{"ConfigMap/default/a"}, renderIDs(t, repo, repo.Targets[0])); diff != "" {
		t.Errorf("render after chdir (-want +got):\n%s", diff)
	}
}

// ferry.yaml targets render with the Flux spec fields they declare, and
// substituteFrom finds a ConfigMap that another target of the same
// cluster renders.
func TestRenderFerryYAMLTarget(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"ferry.yaml": `
targets:
  - name: vars
    cluster: staging
    path: vars
  - name: web
    cluster: staging
    path: web
    targetNamespace: web
    namePrefix: staging-
    commonMetadata:
      labels:
        team: shop
    postBuild:
      substitute:
        env: staging
      substituteFrom:
        - kind: ConfigMap
          name: cluster-vars
  - name: other-cluster
    cluster: production
    path: web
    postBuild:
      substituteFrom:
        - kind: ConfigMap
          name: cluster-vars
`,
		"vars/cm.yaml": configMap("flux-system", "cluster-vars", "region", "eu-west-1"),
		"web/cm.yaml":  configMap("", "settings", "env", "'${env}'", "region", "'${region}'"),
	})
	repo := load(t, dir)
	web := mustTarget(t, repo, "web")
	if diff := cmp.Diff([]string{"ConfigMap/web/staging-settings"}, renderIDs(t, repo, web)); diff != "" {
		t.Errorf("rendered IDs (-want +got):\n%s", diff)
	}
	want := map[string]string{"env": "staging", "region": "eu-west-1"}
	if diff := cmp.Diff(want, renderedData(t, repo, web, "web", "staging-settings")); diff != "" {
		t.Errorf("substituted data (-want +got):\n%s", diff)
	}
	res, err := repo.Render(t.Context(), web)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Set.Objects[0].GetLabels()["team"]; got != "shop" {
		t.Errorf("commonMetadata label team = %q, want shop", got)
	}
	if res.Name != "web" {
		t.Errorf("Result.Name = %q, want web", res.Name)
	}
	// The ConfigMap is rendered by a target of cluster staging only: the
	// other cluster's target renders without it.
	other, err := repo.Render(t.Context(), mustTarget(t, repo, "other-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Without) != 1 || !strings.HasSuffix(other.Without[0], "/cluster-vars") {
		t.Errorf("other-cluster rendered without %v, want the ConfigMap cluster-vars", other.Without)
	}
}

// Render caches: the same result comes back, and so does an error.
func TestRenderCaches(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"ferry.yaml": "targets:\n  - {name: ok, path: ok}\n  - {name: broken, path: missing}\n",
		"ok/cm.yaml": configMap("default", "a"),
	})
	repo := load(t, dir)
	ok := mustTarget(t, repo, "ok")
	first, err := repo.Render(t.Context(), ok)
	if err != nil {
		t.Fatal(err)
	}
	// Files changed after the first render are not read again.
	if err := os.WriteFile(filepath.Join(dir, "ok", "cm2.yaml"), []byte(configMap("default", "b")), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := repo.Render(t.Context(), ok)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("second Render returned a new result")
	}
	broken := mustTarget(t, repo, "broken")
	_, err1 := repo.Render(t.Context(), broken)
	wantError(t, err1, `target "broken"`, `"missing" does not exist`)
	if err := os.MkdirAll(filepath.Join(dir, "missing"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err2 := repo.Render(t.Context(), broken)
	if err2 == nil || err2.Error() != err1.Error() {
		t.Errorf("second Render error = %v, want the cached %v", err2, err1)
	}
}

// LoadRevisions says which revision failed, and loads what Load and
// LoadProposed load one after the other.
func TestLoadRevisions(t *testing.T) {
	t.Parallel()
	good := map[string]string{"ferry.yaml": "targets: [{name: a, path: x}]\n", "x/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"}
	bad := map[string]string{"ferry.yaml": "targets: [{name: a, pth: x}]\n"}
	t.Run("base fails", func(t *testing.T) {
		t.Parallel()
		base, head, berr, herr := config.LoadRevisions(t.Context(), testtree.New(t, bad), testtree.New(t, good), render.Options{})
		wantError(t, berr, "ferry.yaml", "pth")
		if base != nil || head != nil || herr != nil {
			t.Errorf("base %v, head %v, head error %v: want none", base, head, herr)
		}
	})
	t.Run("head fails", func(t *testing.T) {
		t.Parallel()
		base, head, berr, herr := config.LoadRevisions(t.Context(), testtree.New(t, good), testtree.New(t, bad), render.Options{})
		wantError(t, herr, "ferry.yaml", "pth")
		if base != nil || head != nil || berr != nil {
			t.Errorf("base %v, head %v, base error %v: want none", base, head, berr)
		}
	})
	t.Run("both load", func(t *testing.T) {
		t.Parallel()
		bdir, hdir := testtree.New(t, good), testtree.New(t, good)
		base, head, berr, herr := config.LoadRevisions(t.Context(), bdir, hdir, render.Options{})
		if berr != nil || herr != nil {
			t.Fatal(berr, herr)
		}
		sb, err := config.Load(t.Context(), bdir, render.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := config.LoadProposed(t.Context(), hdir, render.Options{}, sb)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]*config.Repo{{base, sb}, {head, sh}} {
			if got, want := targetNames(pair[0].Targets), targetNames(pair[1].Targets); !slices.Equal(got, want) {
				t.Errorf("targets %v, want %v", got, want)
			}
		}
	})
}
