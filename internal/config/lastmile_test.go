package config_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// renderTarget renders the named target of repo and fails the test on
// error.
func renderTarget(t *testing.T, repo *config.Repo, name string) *render.Result {
	t.Helper()
	tg, err := repo.Target(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := repo.Render(t.Context(), tg)
	if err != nil {
		t.Fatalf("rendering %s: %v", name, err)
	}
	return res
}

func findObject(t *testing.T, res *render.Result, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range res.Set.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("%s has no %s %s", res.Name, kind, name)
	return nil
}

func nested(t *testing.T, u *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if err != nil || !ok {
		t.Fatalf("%s/%s has no %s (%v)", u.GetKind(), u.GetName(), strings.Join(fields, "."), err)
	}
	return v
}

// A cluster whose root only a flux-instance HelmRelease declares (its
// values.instance.sync, given through a valuesFrom ConfigMap the
// release's folder generates): the root is found, so its patches reach
// every child's HelmReleases and its ConfigMap's variables substitute.
func TestInstanceChartRoot(t *testing.T) {
	repo := load(t, filepath.Join("testdata", "fleets", "fluxinstance"))
	want := []config.Cluster{{Name: "cluster", Path: "kubernetes/flux/cluster", Origin: "kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:1", From: config.ClusterFromInstanceChart}}
	if diff := cmp.Diff(want, repo.Clusters); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if len(repo.Skipped) > 0 {
		t.Errorf("skipped: %+v", repo.Skipped)
	}
	for _, app := range []string{"echo", "whoami"} {
		hr := findObject(t, renderTarget(t, repo, app), "HelmRelease", app)
		for field, want := range map[string]any{
			"spec.install.crds":                             "CreateReplace",
			"spec.upgrade.remediation.retries":              int64(3),
			"spec.timeout":                                  "15m",
			"spec.values.host":                              app + ".lab.example.net",
			"spec.values.tz":                                "Europe/Lisbon",
			"metadata.namespace":                            "default",
			"spec.upgrade.remediation.remediateLastFailure": true,
		} {
			if got := nested(t, hr, strings.Split(field, ".")...); got != want {
				t.Errorf("HelmRelease %s: %s = %v, want %v", app, field, got, want)
			}
		}
	}
	tg, err := repo.Target("echo")
	if err != nil {
		t.Fatal(err)
	}
	if got := nested(t, tg.Kustomization, "spec", "timeout"); got != "10m" {
		t.Errorf("Kustomization echo: spec.timeout = %v, want the root's patch, 10m", got)
	}
}

// Without the flux-instance HelmRelease, a layout like that one has no
// root ferry can infer; ferry.yaml's clusters.<name>.path declares it,
// and the cluster takes that name.
func TestClusterPathDeclared(t *testing.T) {
	dir := t.TempDir()
	testtree.Copy(t, filepath.Join("testdata", "fleets", "fluxinstance"), dir)
	if err := os.RemoveAll(filepath.Join(dir, "kubernetes", "apps", "flux-system")); err != nil {
		t.Fatal(err)
	}
	inferred := load(t, dir)
	if tg, err := inferred.Target("echo"); err != nil {
		t.Fatal(err)
	} else if _, ok, _ := unstructured.NestedString(tg.Kustomization.Object, "spec", "timeout"); ok {
		t.Fatal("with no root, echo was patched anyway: the fixture does not test a root")
	}
	testtree.Write(t, dir, map[string]string{config.FileName: "clusters:\n  lab:\n    path: ./kubernetes/flux/cluster/\n    helmReleases: controller\n"})
	repo := load(t, dir)
	want := []config.Cluster{{Name: "lab", Path: "kubernetes/flux/cluster", Origin: "ferry.yaml clusters.lab.path", From: config.ClusterFromFile}}
	if diff := cmp.Diff(want, repo.Clusters); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	hr := findObject(t, renderTarget(t, repo, "echo"), "HelmRelease", "echo")
	if got := nested(t, hr, "spec", "install", "crds"); got != "CreateReplace" {
		t.Errorf("echo's HelmRelease: install.crds = %v, want the root's patch", got)
	}
	if tg, _ := repo.Target("echo"); tg.Cluster != "lab" {
		t.Errorf("echo is of cluster %q, want lab", tg.Cluster)
	}
}

// A declared cluster path outside the repository (by .., or by a
// symlink) is that cluster's problem: it is skipped with the reason, and
// the rest of the repository renders.
func TestClusterPathOutside(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	testtree.Copy(t, filepath.Join("testdata", "fleets", "clusterartifacts"), dir)
	if err := os.Symlink(outside, filepath.Join(dir, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	testtree.Write(t, dir, map[string]string{config.FileName: "clusters:\n  up:\n    path: ../x\n  linked:\n    path: elsewhere\n  missing:\n    path: clusters/none\n"})
	repo := load(t, dir)
	var reasons []string
	for _, s := range repo.Skipped {
		reasons = append(reasons, s.Origin+": "+s.Reason)
	}
	want := []string{
		`ferry.yaml clusters.linked.path: cluster root "elsewhere": leads outside the repository`,
		`ferry.yaml clusters.missing.path: cluster root "clusters/none": is not a folder of the repository`,
		`ferry.yaml clusters.up.path: cluster root "../x": is outside the repository`,
	}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	for _, name := range []string{"staging/apps", "production/apps"} {
		renderTarget(t, repo, name)
	}
}

// Two clusters keep an ArtifactGenerator of the same namespace and name:
// each cluster's ExternalArtifact comes from its own.
func TestArtifactGeneratorsPerCluster(t *testing.T) {
	repo := load(t, filepath.Join("testdata", "fleets", "clusterartifacts"))
	for cluster, replicas := range map[string]int64{"staging": 1, "production": 3} {
		res := renderTarget(t, repo, cluster+"/apps")
		d := findObject(t, res, "Deployment", "web")
		if got := nested(t, d, "spec", "replicas"); got != replicas {
			t.Errorf("%s: replicas %v, want %d", cluster, got, replicas)
		}
		if got := d.GetLabels()["env"]; got != cluster {
			t.Errorf("%s: label env=%q", cluster, got)
		}
		tg, _ := repo.Target(cluster + "/apps")
		if want := "ArtifactGenerator/flux-system/flux-system (clusters/" + cluster + "/apps.yaml:1)"; tg.Artifact == nil || tg.Artifact.Generator != want {
			t.Errorf("%s: generator %+v, want %s", cluster, tg.Artifact, want)
		}
	}
}

// A substituteFrom Secret that is not in Git: offline, the target
// renders with the variables nothing defines left as written (defaults
// and all), and says what it went without.
func TestSubstituteFromOnlyInCluster(t *testing.T) {
	repo := load(t, filepath.Join("testdata", "fleets", "clustervars"))
	res := renderTarget(t, repo, "apps")
	if want := []string{"Secret/flux-system/cluster-secrets"}; !slices.Equal(res.Without, want) {
		t.Errorf("without %v, want %v", res.Without, want)
	}
	if want := []string{"SECRET_ADMIN_EMAIL", "SECRET_DOMAIN", "TITLE"}; !slices.Equal(res.Unresolved, want) {
		t.Errorf("unresolved %v, want %v", res.Unresolved, want)
	}
	cm := findObject(t, res, "ConfigMap", "dashboard")
	want := map[string]any{"url": "https://dash.${SECRET_DOMAIN}", "admin": "${SECRET_ADMIN_EMAIL}", "title": "${TITLE:=Home}"}
	if diff := cmp.Diff(want, nested(t, cm, "data")); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	// An optional ConfigMap that is missing is no loss.
	if infra := renderTarget(t, repo, "infra"); len(infra.Without) > 0 {
		t.Errorf("infra went without %v", infra.Without)
	}
}

// With a cluster (apply, drift, diff --live) the object is read there:
// its variables substitute and its values are hidden; a missing one
// fails the target as in Flux; a failed read fails it too.
func TestSubstituteFromClusterRead(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "cluster-secrets", "namespace": "flux-system"},
		"data":     map[string]any{"SECRET_DOMAIN": "aG9tZS5leGFtcGxlLm9yZw==", "SECRET_ADMIN_EMAIL": "b3BzQGhvbWUuZXhhbXBsZS5vcmc="},
	}}
	for _, tc := range []struct {
		name    string
		read    config.ClusterReader
		wantErr string
	}{
		{name: "found", read: func(_ context.Context, tg *config.Target, kind, ns, name string) (*unstructured.Unstructured, error) {
			if tg.Name != "apps" || kind != "Secret" || ns != "flux-system" || name != "cluster-secrets" {
				t.Errorf("read %s %s/%s/%s", tg.Name, kind, ns, name)
			}
			return secret, nil
		}},
		{name: "missing", read: func(context.Context, *config.Target, string, string, string) (*unstructured.Unstructured, error) {
			return nil, nil
		}, wantErr: `substitute from 'Secret/cluster-secrets' error: secrets "cluster-secrets" not found`},
		{name: "unreadable", read: func(context.Context, *config.Target, string, string, string) (*unstructured.Unstructured, error) {
			return nil, errors.New("forbidden")
		}, wantErr: "reading it from the cluster: forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := load(t, filepath.Join("testdata", "fleets", "clustervars"))
			renderTarget(t, repo, "apps") // offline first: ReadFromClusters drops it
			repo.ReadFromClusters(tc.read)
			tg, _ := repo.Target("apps")
			res, err := repo.Render(t.Context(), tg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Without) > 0 || len(res.Unresolved) > 0 {
				t.Errorf("without %v, unresolved %v", res.Without, res.Unresolved)
			}
			cm := findObject(t, res, "ConfigMap", "dashboard")
			want := map[string]any{"url": "https://dash.home.example.org", "admin": "ops@home.example.org", "title": "Home"}
			if diff := cmp.Diff(want, nested(t, cm, "data")); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

// A proposed revision reads from a cluster only what the base reads.
func TestClusterReadsOnlyWhatTheBaseReads(t *testing.T) {
	base := load(t, filepath.Join("testdata", "fleets", "clustervars"))
	var reads []string
	read := base.ClusterReadsOnly(func(_ context.Context, _ *config.Target, kind, ns, name string) (*unstructured.Unstructured, error) {
		reads = append(reads, kind+"/"+ns+"/"+name)
		return nil, nil
	})
	tg, _ := base.Target("apps")
	if _, err := read(t.Context(), tg, "Secret", "flux-system", "cluster-secrets"); err != nil {
		t.Errorf("the base's own read: %v", err)
	}
	_, err := read(t.Context(), tg, "Secret", "flux-system", "runner-token")
	if want := "the base revision reads no Secret/flux-system/runner-token from the cluster"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if want := []string{"Secret/flux-system/cluster-secrets"}; !slices.Equal(reads, want) {
		t.Errorf("reads %v, want %v", reads, want)
	}
}

// ResourceSets in a cluster root and in a target: the Kustomizations
// they generate are targets, the HelmReleases they generate render, and
// a provider that calls an API takes its inputs from ferry.yaml.
func TestResourceSetsInFleet(t *testing.T) {
	dir := filepath.Join("testdata", "fleets", "resourcesets")
	repo, err := config.Load(t.Context(), dir, render.Options{HelmReleases: "render"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apps", "preview-1042", "preview-1057", "tenant-team-a", "tenant-team-b"}
	if diff := cmp.Diff(want, targetNames(repo.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if len(repo.Skipped) > 0 {
		t.Errorf("skipped: %+v", repo.Skipped)
	}
	res := renderTarget(t, repo, "apps")
	for region, label := range map[string]string{"eu": "EU", "us": "US"} {
		d := findObject(t, res, "Deployment", "podinfo-"+region)
		if got := nested(t, d, "spec", "replicas"); got != int64(2) {
			t.Errorf("podinfo-%s: replicas %v, want the provider's 2", region, got)
		}
		if got := nested(t, d, "spec", "template", "metadata", "labels", "region"); got != label {
			t.Errorf("podinfo-%s: region label %v, want %s", region, got, label)
		}
	}
	if len(res.Releases) != 2 || res.Releases[0].ID != "HelmRelease/web/podinfo-eu" {
		t.Errorf("releases %+v, want the two the ResourceSet generates", res.Releases)
	}
	q := findObject(t, renderTarget(t, repo, "tenant-team-a"), "ResourceQuota", "team-a")
	if got := nested(t, q, "spec", "hard", "pods"); got != int64(4) {
		t.Errorf("team-a quota %v, want its provider's 4", got)
	}
}

// What stops a ResourceSet stops only it: a provider ferry may not call
// (no inputs for it in ferry.yaml) skips it with the way out; a template
// error or a missing input key in a root's ResourceSet is listed, one in
// a target's fails that target alone, naming the ResourceSet.
func TestResourceSetBadInputs(t *testing.T) {
	fixture := filepath.Join("testdata", "fleets", "resourcesets")
	edit := func(t *testing.T, file, from, to string) string {
		t.Helper()
		dir := t.TempDir()
		testtree.Copy(t, fixture, dir)
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), from) {
			t.Fatalf("%s has no %q", file, from)
		}
		testtree.Write(t, dir, map[string]string{file: strings.Replace(string(b), from, to, 1)})
		return dir
	}
	t.Run("provider not given", func(t *testing.T) {
		repo := load(t, edit(t, "ferry.yaml", "flux-system/previews:", "flux-system/other:"))
		if got := targetNames(repo.Targets); slices.Contains(got, "preview-1042") || !slices.Contains(got, "apps") {
			t.Errorf("targets %v", got)
		}
		want := "ResourceSet/flux-system/previews: ResourceSetInputProvider/flux-system/previews of type GitHubPullRequest takes its inputs from an API that a render does not call: give them in ferry.yaml (inputProviders: {flux-system/previews: [{...}]}), or let ferry call it (ferry.yaml: inputProviderAPIs: {forge: true} for the forge the job runs on, allowHosts: [host:port] for others)"
		if len(repo.Skipped) != 1 || repo.Skipped[0].Name != "previews" || repo.Skipped[0].Reason != want {
			t.Errorf("skipped %+v, want the previews ResourceSet: %s", repo.Skipped, want)
		}
	})
	t.Run("template error in the root", func(t *testing.T) {
		repo := load(t, edit(t, "clusters/lab/tenants.yaml", "name: tenant-<< inputs.tenant >>", "name: tenant-<< inputs.tenant | nosuchfunc >>"))
		if len(repo.Skipped) != 1 || repo.Skipped[0].Name != "tenants" || !strings.Contains(repo.Skipped[0].Reason, `function "nosuchfunc" not defined`) {
			t.Errorf("skipped %+v, want the tenants ResourceSet and its error", repo.Skipped)
		}
		renderTarget(t, repo, "apps")
		renderTarget(t, repo, "preview-1042")
	})
	t.Run("missing key in a target", func(t *testing.T) {
		repo := load(t, edit(t, "apps/lab/podinfo.yaml", "<< inputs.sizes.replicas >>", "<< inputs.sizes.cpu >>"))
		tg, err := repo.Target("apps")
		if err != nil {
			t.Fatal(err)
		}
		_, err = repo.Render(t.Context(), tg)
		if want := `ResourceSet/web/podinfo: `; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `map has no entry for key "cpu"`) {
			t.Errorf("error %v, want one naming %s and the key", err, want)
		}
		renderTarget(t, repo, "tenant-team-a")
	})
}
