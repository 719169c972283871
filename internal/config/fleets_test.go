package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// copyFixture copies testdata/fleets/name into a temp dir and applies
// edits (file -> old -> new, each old must be found), so a test can break
// one thing in an otherwise good repository.
func copyFixture(t *testing.T, name string, edits map[string][2]string) string {
	t.Helper()
	dst := t.TempDir()
	testtree.Copy(t, filepath.Join("testdata", "fleets", name), dst)
	for file, e := range edits {
		p := filepath.Join(dst, filepath.FromSlash(file))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), e[0]) {
			t.Fatalf("%s: %q not found", file, e[0])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e[0], e[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

type nsTarget struct {
	Name, Namespace string
	DependsOn       []string
}

func nsTargets(repo *config.Repo) []nsTarget {
	var out []nsTarget
	for _, tg := range repo.Targets {
		out = append(out, nsTarget{tg.Name, tg.Namespace, tg.DependsOn})
	}
	return out
}

// A Kustomization takes the namespace its parent kustomization.yaml gives
// it, and dependsOn resolves against that namespace (one without a
// namespace means the dependent's own): whether a root reaches the files
// (rendered, as Flux does) or none does (the file scan of a repo whose
// root syncs a source ferry cannot fetch).
func TestNamespacedDependsOn(t *testing.T) {
	t.Parallel()
	reached := []nsTarget{
		{"cilium", "kube-system", nil},
		{"cluster-apps", "flux-system", nil},
		{"echo", "default", nil},
		{"metrics-server", "kube-system", []string{"cilium"}},
		{"exporter", "observability", []string{"metrics-server"}},
		{"web", "default", []string{"cilium", "echo"}},
	}
	repo := load(t, filepath.Join("testdata", "fleets", "namespaced"))
	if diff := cmp.Diff(reached, nsTargets(repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rendered from the root (-want +got):\n%s", diff)
	}
	for _, tg := range repo.Targets {
		if tg.Err != nil {
			t.Errorf("target %s: %v", tg.Name, tg.Err)
		}
	}

	dir := copyFixture(t, "namespaced", map[string][2]string{
		"kubernetes/flux/apps.yaml": {"    kind: GitRepository", "    kind: OCIRepository"},
	})
	repo = load(t, dir)
	// cluster-apps is skipped; its children are found by the file scan
	// (so outside any cluster) with the namespaces their kustomizations
	// give them.
	scanned := []nsTarget{
		{"cilium", "kube-system", nil},
		{"echo", "default", nil},
		{"metrics-server", "kube-system", []string{"cilium"}},
		{"exporter", "observability", []string{"metrics-server"}},
		{"web", "default", []string{"cilium", "echo"}},
	}
	if diff := cmp.Diff(scanned, nsTargets(repo), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("found by the file scan (-want +got):\n%s", diff)
	}
	if len(repo.Skipped) != 1 || repo.Skipped[0].Name != "cluster-apps" || !strings.Contains(repo.Skipped[0].Reason, "sources: {OCIRepository/flux-system: ./<folder>}") {
		t.Errorf("skipped = %+v, want cluster-apps with the ferry.yaml line to add", repo.Skipped)
	}
}

// One broken dependency in an otherwise good repository is an error of
// the target that declares it: every other target loads, renders and can
// be applied, and the broken one's error names its file and the
// dependency. A target that depends on it renders but cannot be applied.
func TestBrokenDependencyIsScopedToItsTarget(t *testing.T) {
	t.Parallel()
	dir := copyFixture(t, "namespaced", map[string][2]string{
		"kubernetes/apps/observability/exporter/ks.yaml": {"      namespace: kube-system", "      namespace: monitoring"},
		"kubernetes/apps/default/web/ks.yaml":            {"    - name: echo\n", "    - name: echo\n    - name: exporter\n      namespace: observability\n"},
	})
	repo := load(t, dir)
	broken := mustTarget(t, repo, "exporter")
	want := []string{`target "exporter"`, "kubernetes/apps/observability/exporter/ks.yaml:1", `dependsOn "metrics-server" (namespace monitoring)`, "not a target"}
	wantError(t, broken.Err, want...)
	_, err := repo.Render(t.Context(), broken)
	wantError(t, err, want...)

	web := mustTarget(t, repo, "web")
	if _, err := repo.Render(t.Context(), web); err != nil {
		t.Errorf("web depends on the broken target and must still render: %v", err)
	}
	wantError(t, repo.Blocked(web), `target "web" depends on target "exporter"`, `dependsOn "metrics-server"`)

	for _, name := range []string{"cilium", "cluster-apps", "echo", "metrics-server"} {
		tg := mustTarget(t, repo, name)
		if err := repo.State(t.Context(), tg); err != nil {
			t.Errorf("target %s: %v", name, err)
		}
		if err := repo.Blocked(tg); err != nil {
			t.Errorf("target %s is blocked: %v", name, err)
		}
	}
}

// A FluxInstance declares its cluster as gotk-sync.yaml does; its sync
// source (an OCIRepository) renders from the folder ferry.yaml maps it
// to; its ResourceSet is expanded, nothing skipped.
func TestFluxInstanceRoot(t *testing.T) {
	t.Parallel()
	repo := load(t, filepath.Join("testdata", "fleets", "operator"))
	want := []config.Cluster{{Name: "lab", Path: "clusters/lab", Origin: "clusters/lab/flux-instance.yaml:1", From: config.ClusterFromInstance}}
	if diff := cmp.Diff(want, repo.Clusters); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"infrastructure", "apps"}, targetNames(repo.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	for _, tg := range repo.Targets {
		if tg.Cluster != "lab" || tg.Root != repo.Root {
			t.Errorf("target %s: cluster %q root %q, want lab and the repository", tg.Name, tg.Cluster, tg.Root)
		}
	}
	if len(repo.Skipped) != 0 {
		t.Errorf("skipped = %+v, want nothing", repo.Skipped)
	}

	// Without the mapping the root cannot render: the cluster is listed,
	// its root skipped with the line to add, its Kustomizations skipped too.
	dir := copyFixture(t, "operator", map[string][2]string{"ferry.yaml": {"  OCIRepository/flux-system: .", "  unrelated: ../elsewhere"}})
	repo = load(t, dir)
	if len(repo.Targets) != 0 {
		t.Errorf("targets = %v, want none", targetNames(repo.Targets))
	}
	var reasons []string
	for _, s := range repo.Skipped {
		reasons = append(reasons, s.Name+": "+s.Reason)
	}
	joined := strings.Join(reasons, "\n")
	for _, w := range []string{"flux-system: cluster root clusters/lab: source OCIRepository/flux-system/flux-system", "apps: source OCIRepository", "sources: {OCIRepository/flux-system: ./<folder>}"} {
		if !strings.Contains(joined, w) {
			t.Errorf("skipped lacks %q:\n%s", w, joined)
		}
	}
}

// A source mapped to a folder of the repository reads files whose paths
// are the repository's (so a change under the folder affects the target).
func TestSourceMappedToAFolder(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"ferry.yaml": "sources:\n  OCIRepository/apps: ./deploy\n",
		"clusters/prod/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\n" +
			"spec:\n  path: ./prod\n  sourceRef: {kind: OCIRepository, name: apps}\n",
		"deploy/prod/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/prod/cm.yaml":            configMap("default", "settings", "k", "v"),
	})
	repo := load(t, dir)
	tg := mustTarget(t, repo, "apps")
	res, err := repo.Render(t.Context(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"deploy/prod/cm.yaml", "deploy/prod/kustomization.yaml"}, res.Files); diff != "" {
		t.Errorf("files read (-want +got):\n%s", diff)
	}
	if w := repo.Inputs(tg); !w.Touches([]string{"deploy/prod/cm.yaml"}) || w.Touches([]string{"prod/cm.yaml"}) {
		t.Errorf("inputs %+v: want deploy/prod/cm.yaml and not prod/cm.yaml", w)
	}

	_, err = config.ParseFile([]byte("sources:\n  HelmRepository/charts: ./charts\n"))
	wantError(t, err, `sources: "HelmRepository/charts"`, "GitRepository, OCIRepository, Bucket")
}

// A SOPS file inside an artifact decrypts as anywhere else (its MAC
// checked on the file as committed), and reports name it by its path in
// the repository.
func TestArtifactWithSOPSSecret(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the artifact is written, and removed from
	key := secretstest.NewKey(t)
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: artifact-canary-7c1}\n"
	dir := testtree.New(t, map[string]string{
		"clusters/prod/gen.yaml": `apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: gen, namespace: flux-system}
spec:
  sources: [{alias: repo, kind: GitRepository, name: flux-system}]
  artifacts:
    - name: app
      copy: [{from: "@repo/apps/app/**", to: "@artifact/"}]
`,
		"clusters/prod/app.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app, namespace: flux-system}\n" +
			"spec:\n  path: ./\n  targetNamespace: app\n  sourceRef: {kind: ExternalArtifact, name: app}\n",
		"apps/app/kustomization.yaml": "resources: [secret.sops.yaml]\n",
		"apps/app/secret.sops.yaml":   string(secretstest.Encrypt(t, "secret.sops.yaml", []byte(secret), "^(data|stringData)$", key.Recipient)),
	})
	ids, err := secrets.ParseIdentities(key.Identity)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := config.Load(t.Context(), dir, render.Options{Decryptor: secrets.NewDecryptor(ids)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := repo.Render(t.Context(), mustTarget(t, repo, "app"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Set.Objects) != 1 || res.Set.Objects[0].GetNamespace() != "app" {
		t.Fatalf("rendered %v, want Secret/app/db", res.Set.IDs())
	}
	if got, _, _ := unstructured.NestedString(res.Set.Objects[0].Object, "stringData", "password"); got != "artifact-canary-7c1" {
		t.Errorf("password = %q, want the decrypted value", got)
	}
	if diff := cmp.Diff([]string{"apps/app/secret.sops.yaml"}, res.Encrypted); diff != "" {
		t.Errorf("encrypted files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"apps/app/kustomization.yaml", "apps/app/secret.sops.yaml"}, res.Files); diff != "" {
		t.Errorf("files read (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("%d entries left in TMPDIR, want none: %v", len(entries), entries[0].Name())
	}
}
