package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/kube"
)

// TestApplyNestedFleet applies a Flux fleet whose tenants Kustomization
// renders a child Kustomization, an ImageRepository and an ImagePolicy
// next to a Namespace, to a cluster without Flux's CRDs. ferry does those
// objects' work itself (the child is a target of its own, the image
// objects are ferry bump's), so it applies the rest, reports them as
// skipped with the reason, applies the child target, and drift finds
// everything in sync, not perpetually missing.
func TestApplyNestedFleet(t *testing.T) {
	vars := applyVars(t)
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	r := newScenario(t)
	r.bootstrap("dev", "https://example.test/fleet")
	r.write("clusters/dev/tenants.yaml", helmtest.FluxKustomization("tenants", "./tenants", ""))
	r.write("tenants/team.yaml", strings.ReplaceAll(`apiVersion: v1
kind: Namespace
metadata:
  name: NS
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: team
  namespace: flux-system
spec:
  path: ./team
  prune: true
  targetNamespace: NS
  sourceRef: {kind: GitRepository, name: flux-system}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: team-app
  namespace: flux-system
spec:
  image: registry.example.test/team/app
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: team-app
  namespace: flux-system
spec:
  imageRepositoryRef: {name: team-app}
  policy:
    semver: {range: ">=1.0.0"}
`, "NS", ns))
	r.write("team/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-config\ndata:\n  k: v\n")
	common := []string{"--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", "0123456789abcdef0123456789abcdef01234567"}

	res := ferry(t, vars, append([]string{"apply", "--format", "json"}, common...)...)
	if res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	var sets []kube.ChangeSet
	if err := json.Unmarshal([]byte(res.stdout), &sets); err != nil {
		t.Fatalf("JSON output: %v\n%s", err, res.stdout)
	}
	got := map[string][]string{}
	for _, s := range sets {
		for _, c := range s.Changes {
			line := string(c.Action) + " " + c.Object.String()
			if c.Reason != "" {
				line += " (" + c.Reason + ")"
			}
			got[s.Target] = append(got[s.Target], line)
		}
	}
	want := map[string][]string{
		"tenants": {
			"created Namespace/" + ns,
			"skipped ImagePolicy.image.toolkit.fluxcd.io/flux-system/team-app (Flux image automation, done by ferry bump; the cluster has no Flux CRDs)",
			"skipped ImageRepository.image.toolkit.fluxcd.io/flux-system/team-app (Flux image automation, done by ferry bump; the cluster has no Flux CRDs)",
			"skipped Kustomization.kustomize.toolkit.fluxcd.io/flux-system/team (Flux Kustomization, a target of its own for ferry; the cluster has no Flux CRDs)",
		},
		"team": {"created ConfigMap/" + ns + "/team-config"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("change sets (-want +got):\n%s", diff)
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "team-config", metav1.GetOptions{}); err != nil {
		t.Fatalf("the child target's ConfigMap: %v", err)
	}

	md := ferry(t, vars, append([]string{"apply", "--format", "markdown"}, common...)...)
	if line := "- skipped `Kustomization.kustomize.toolkit.fluxcd.io/flux-system/team`: Flux Kustomization, a target of its own for ferry; the cluster has no Flux CRDs\n"; md.code != 0 || !strings.Contains(md.stdout, line) {
		t.Errorf("markdown re-apply (exit %d) lacks %q:\n%s%s", md.code, line, md.stdout, md.stderr)
	}

	clean := ferry(t, vars, append([]string{"drift", "--format", "json", "--fail-on-drift"}, common...)...)
	if clean.code != 0 {
		t.Fatalf("drift after apply: exit %d: %s\n%s", clean.code, clean.stderr, clean.stdout)
	}
	if diff := cmp.Diff(map[string]drift.Status{"tenants": drift.InSync, "team": drift.InSync}, statuses(parseReports(t, clean))); diff != "" {
		t.Fatalf("drift after apply (-want +got):\n%s\n%s", diff, clean.stdout)
	}
}
