package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/testtree"
)

// brokenFleet is a Flux fleet whose root gives every child the variables
// of cluster-settings; the target app uses one, the target broken fails
// to build at every revision (its kustomization lists a file nobody
// wrote).
func brokenFleet(t *testing.T) string {
	t.Helper()
	ks := func(name string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: flux-system}\n" +
			"spec:\n  interval: 10m\n  path: ./apps/" + name + "\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n" +
			"  postBuild: {substituteFrom: [{kind: ConfigMap, name: cluster-settings}]}\n"
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	testtree.Write(t, dir, map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 1m, url: https://example.test/fleet, ref: {branch: main}}\n---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 10m, path: ./clusters/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n",
		"clusters/prod/kustomization.yaml": "resources: [flux-system/gotk-sync.yaml, settings.yaml, app.yaml, broken.yaml]\n",
		"clusters/prod/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-settings, namespace: flux-system}\ndata: {DOMAIN: example.com}\n",
		"clusters/prod/app.yaml":           ks("app"),
		"clusters/prod/broken.yaml":        ks("broken"),
		"apps/app/kustomization.yaml":      "resources: [cm.yaml]\n",
		"apps/app/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {url: \"https://app.${DOMAIN}\"}\n",
		"apps/broken/kustomization.yaml":   "resources: [missing.yaml]\n",
	})
	return dir
}

// TestDiffBrokenAndUntouched: a target that fails at both revisions and
// that the change does not touch is listed and does not fail the diff
// (exit 1 with --exit-code for the other target's change, 0 without); a
// change to its own files fails it (exit 2).
func TestDiffBrokenAndUntouched(t *testing.T) {
	p, base := newPRRepoOf(t, brokenFleet(t), nil)
	p.replace("clusters/prod/settings.yaml", "DOMAIN: example.com", "DOMAIN: example.org")
	untouched := p.commit("a variable both targets read")
	p.write("apps/broken/kustomization.yaml", "resources: [missing.yaml, other.yaml]\n")
	touched := p.commit("the broken target's own kustomization")

	res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", untouched, "--exit-code")
	if res.code != 1 {
		t.Fatalf("untouched broken target: exit %d, want 1 (app changed)\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "broken is broken before and after, not affected: ") || !strings.Contains(res.stdout, "missing.yaml") {
		t.Errorf("the broken target is not listed:\n%s", res.stdout)
	}
	if !strings.Contains(res.stdout, "https://app.example.org") {
		t.Errorf("the other target's change is not shown:\n%s", res.stdout)
	}
	if res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", untouched); res.code != 0 {
		t.Errorf("without --exit-code: exit %d, want 0\n%s", res.code, res.stderr)
	}
	res = ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", untouched, "--format", "json")
	var report struct {
		Broken []struct{ Name, Error string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &report); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, res.stdout)
	}
	if len(report.Broken) != 1 || report.Broken[0].Name != "broken" || !strings.Contains(report.Broken[0].Error, "missing.yaml") {
		t.Errorf("JSON broken = %+v", report.Broken)
	}

	res = ferry(t, nil, "diff", "--repo", p.dir, "--base", untouched, "--head", touched)
	if res.code != 2 || !strings.Contains(res.stderr, "broken") {
		t.Errorf("a change to the broken target's files: exit %d, want 2 naming it\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "broken before and after, not affected") {
		t.Errorf("a touched broken target is listed as not affected:\n%s", res.stdout)
	}
}
