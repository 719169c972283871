package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
)

// tenantYAML is a tenant of the staging cluster: a GitRepository of this
// repository (its URL as origin has it, written another way) at ref, and
// the Kustomization of its folder, starting on line 12.
func tenantYAML(ref string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: dev-team
  namespace: apps
spec:
  interval: 1m
  url: https://github.com/acme/fleet
  ref:
    ` + ref + `
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: dev-team
  namespace: apps
spec:
  interval: 10m
  path: ./tenants/dev-team
  prune: true
  targetNamespace: dev-team
  sourceRef:
    kind: GitRepository
    name: dev-team
`
}

func teamConfig(from string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\ndata:\n  from: " + from + "\n"
}

// newTenantRepo is a fleet in a Git repository whose origin is
// git@github.com:acme/fleet.git: flux-system at branch main renders the
// staging cluster, whose apps target is a folder of the checkout and
// whose dev-team tenant is this repository at branch dev-team. Origin's
// dev-team branch (as last fetched) says "from: dev-team"; main, the base
// commit returned, says "from: main".
func newTenantRepo(t *testing.T) (*scenario, string, string) {
	t.Helper()
	g := newScenario(t)
	g.bootstrap("staging", "ssh://git@github.com/acme/fleet")
	g.write("clusters/staging/apps.yaml", helmtest.FluxKustomization("apps", "./apps", ""))
	g.write("clusters/staging/tenant.yaml", tenantYAML("branch: dev-team"))
	g.write("apps/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  env: staging\n")
	g.write("tenants/dev-team/team.yaml", teamConfig("dev-team"))
	g.repo().AddRemote(t, "origin", "git@github.com:acme/fleet.git")
	devTeam := g.commit("dev-team")
	if err := g.repo().Storer.SetReference(plumbing.NewHashReference("refs/remotes/origin/dev-team", plumbing.NewHash(devTeam))); err != nil {
		t.Fatal(err)
	}
	g.write("tenants/dev-team/team.yaml", teamConfig("main"))
	return g, g.commit("base"), devTeam
}

// render --list shows which ref and commit a tenant on another branch of
// this repository renders; render prints that branch's objects. A ref the
// clone lacks is listed as skipped with what to fetch, and selecting it
// is an error.
func TestRenderOtherRef(t *testing.T) {
	g, _, devTeam := newTenantRepo(t)
	res := ferry(t, nil, "render", "--list", "--repo", g.dir)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if want := "ref dev-team: GitRepository/apps/dev-team at branch dev-team: commit " + devTeam + " (refs/remotes/origin/dev-team)\n"; !strings.Contains(res.stdout, want) {
		t.Errorf("render --list does not say\n%s\nit says:\n%s", want, res.stdout)
	}
	res = ferry(t, nil, "render", "--list", "--format", "json", "--repo", g.dir)
	var l struct {
		Targets []struct {
			Name     string
			Revision *struct{ Source, Ref, Name, Commit string }
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &l); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	for _, tg := range l.Targets {
		if got := tg.Revision != nil && tg.Revision.Commit == devTeam; got != (tg.Name == "dev-team") {
			t.Errorf("target %s: revision %+v", tg.Name, tg.Revision)
		}
	}
	res = ferry(t, nil, "render", "--repo", g.dir, "dev-team")
	if res.code != 0 || !strings.Contains(res.stdout, "from: dev-team") {
		t.Errorf("render dev-team: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	g.write("clusters/staging/tenant.yaml", tenantYAML("branch: gone"))
	fetch := "git fetch origin gone:refs/remotes/origin/gone"
	res = ferry(t, nil, "render", "--list", "--repo", g.dir)
	if res.code != 0 || !strings.Contains(res.stdout, "skipped staging/dev-team (clusters/staging/tenant.yaml:12): source GitRepository/apps/dev-team is this repository at branch gone") || !strings.Contains(res.stdout, fetch) {
		t.Errorf("render --list with the branch missing: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = ferry(t, nil, "render", "--repo", g.dir, "dev-team")
	if res.code != 2 || !strings.Contains(res.stderr, `target "dev-team" is skipped`) || !strings.Contains(res.stderr, fetch) {
		t.Errorf("render dev-team with the branch missing: exit %d, stderr %q", res.code, res.stderr)
	}
}

// A pull request to main does not change the dev-team branch: diff
// leaves the tenant out, even when the pull request edits the tenant's
// folder on main. A pull request that moves the tenant to another ref
// changes it.
func TestDiffOtherRef(t *testing.T) {
	g, base, _ := newTenantRepo(t)
	g.write("tenants/dev-team/team.yaml", teamConfig("pull request"))
	g.write("apps/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  env: changed\n")
	head := g.commit("pull request")
	res := ferry(t, nil, "diff", "--repo", g.dir, "--base", base, "--head", head, "--format", "json")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var report struct {
		Targets []struct{ Name, Why string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &report); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(report.Targets) != 1 || report.Targets[0].Name != "apps" {
		t.Errorf("targets %+v, want apps alone (dev-team's branch did not change)", report.Targets)
	}

	g.write("clusters/staging/tenant.yaml", tenantYAML("branch: main"))
	moved := g.commit("dev-team follows main")
	res = ferry(t, nil, "diff", "--repo", g.dir, "--base", head, "--head", moved, "--format", "text", "dev-team")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{
		"target dev-team (source changed: GitRepository/apps/dev-team at branch dev-team (",
		") -> this revision)",
		"-  from: dev-team\n+  from: pull request",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("diff of the moved tenant does not say %q:\n%s", want, res.stdout)
		}
	}
}
