package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ferry-ci/ferry/internal/verify/verifytest"
)

// TestDiffRisks: a pull request that changes a Deployment's selector,
// drops a PersistentVolumeClaim and a CRD that has objects, and adds a
// FlowSchema of an API the cluster no longer serves. The diff names each
// risk before the merge, --fail-on fails on them until the pull request
// accepts them, and with --live the cluster answers: its dry-run refuses
// the selector, and it says how many objects the CRD's prune deletes.
// Then the real apply of the head fails on the selector, as flagged.
func TestDiffRisks(t *testing.T) {
	ns, invNS := cp.Require(t).Namespace(t), cp.Namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".example.com"
	r := verifytest.NewRepo(t)
	r.Commit(nil, "ferry.yaml", "clusters:\n  prod: {kubeVersion: \"1.33.0\"}\ntargets:\n  - {name: app, cluster: prod, path: app, prune: true}\n")
	deployment := func(labels string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + ns + `}
spec:
  replicas: 1
  selector: {matchLabels: ` + labels + `}
  template:
    metadata: {labels: ` + labels + `}
    spec: {containers: [{name: web, image: nginx:1.27}]}
`
	}
	r.Commit(nil, "app/web.yaml", deployment("{app: web}"))
	r.Commit(nil, "app/data.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: "+ns+"}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n")
	r.Commit(nil, "app/crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.`+group+`}
spec:
  group: `+group+`
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`)
	base := r.Commit(nil, "app/kustomization.yaml", "resources: [web.yaml, data.yaml, crd.yaml]\n")
	r.Git(nil, "checkout", "-q", "-b", "pr")
	selectorOnly := r.Commit(nil, "app/web.yaml", deployment("{app: web, tier: front}"))
	pruned := r.Commit(nil, "app/kustomization.yaml", "resources: [web.yaml]\n")
	r.Commit(nil, "app/flow.yaml", "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: "+ns+"}\nspec: {priorityLevelConfiguration: {name: workload-low}, matchingPrecedence: 9000}\n")
	head := r.Commit(nil, "app/kustomization.yaml", "resources: [web.yaml, flow.yaml]\n")

	args := []string{"diff", "--repo", r.Dir, "--base", base, "--head", head}
	risks := func(res result) []string {
		t.Helper()
		var rep struct {
			Risks []struct{ Level, ID, From, Why, Accepted string }
		}
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			t.Fatalf("not JSON (exit %d): %v\n%s%s", res.code, err, res.stdout, res.stderr)
		}
		var out []string
		for _, rk := range rep.Risks {
			out = append(out, rk.Level+" "+rk.ID+" "+rk.From+" "+rk.Accepted)
		}
		return out
	}
	crdRisk := "destructive prune-crd:CustomResourceDefinition/gadgets." + group + ":prune"
	res := ferry(t, nil, append(args, "--format", "json")...)
	want := []string{
		"refused immutable-field:Deployment/" + ns + "/web:spec.selector  ",
		"refused api-removed:FlowSchema/" + ns + ":apiVersion  ",
		crdRisk + "  ",
		"destructive prune-data:PersistentVolumeClaim/" + ns + "/data:prune  ",
	}
	if got := risks(res); res.code != 0 || !slices.Equal(got, want) {
		t.Fatalf("exit %d, risks\n got %q\nwant %q\n%s", res.code, got, want, res.stderr)
	}
	// The same change on a base that declares an older cluster, which
	// still serves flowcontrol v1beta3: no api-removed risk.
	r.Git(nil, "checkout", "-q", "-b", "older", base)
	olderBase := r.Commit(nil, "ferry.yaml", "clusters:\n  prod: {kubeVersion: \"1.31.0\"}\ntargets:\n  - {name: app, cluster: prod, path: app, prune: true}\n")
	r.Commit(nil, "app/flow.yaml", "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: "+ns+"}\nspec: {priorityLevelConfiguration: {name: workload-low}, matchingPrecedence: 9000}\n")
	olderHead := r.Commit(nil, "app/kustomization.yaml", "resources: [web.yaml, data.yaml, crd.yaml, flow.yaml]\n")
	if got := risks(ferry(t, nil, "diff", "--repo", r.Dir, "--base", olderBase, "--head", olderHead, "--format", "json")); len(got) != 0 {
		t.Errorf("kubeVersion 1.31: %q", got)
	}
	r.Git(nil, "checkout", "-q", "pr")

	text := ferry(t, nil, args...)
	if !strings.HasPrefix(strings.SplitN(text.stdout, "\n", 2)[1], "risks: 4 risks (2 refused, 2 destructive)") {
		t.Errorf("the text report does not start with the risks:\n%s", text.stdout)
	}

	// --fail-on fails on them, until the pull request accepts them.
	failed := ferry(t, nil, append(args, "--fail-on", "destructive")...)
	if failed.code != exitDifferences || !strings.Contains(failed.stderr, "--fail-on destructive: 4 risk(s) nobody accepted") {
		t.Errorf("--fail-on destructive: exit %d:\n%s", failed.code, failed.stderr)
	}
	event := filepath.Join(t.TempDir(), "event.json")
	body := "Move web to the front tier.\n\n# ferry: accept-risk immutable-field:Deployment/" + ns + "/web:spec.selector prune-data:PersistentVolumeClaim/" + ns + "/data:prune\n# ferry: accept-risk api-removed:FlowSchema/" + ns + ":apiVersion " + strings.Fields(crdRisk)[1] + "\n"
	payload, _ := json.Marshal(map[string]any{"number": 7, "pull_request": map[string]any{"number": 7, "body": body, "base": map[string]any{"sha": base}, "head": map[string]any{"sha": head}}})
	if err := os.WriteFile(event, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	outputs := filepath.Join(t.TempDir(), "output")
	prVars := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event,
		"GITHUB_OUTPUT": outputs, "GITHUB_STEP_SUMMARY": filepath.Join(t.TempDir(), "summary")}
	if ok := ferry(t, prVars, append(args, "--fail-on", "risk")...); ok.code != 0 || !strings.Contains(ok.stdout, "4 accepted") {
		t.Errorf("accepted in the pull request: exit %d:\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	if b, err := os.ReadFile(outputs); err != nil || !regexp.MustCompile(`(?m)^risks<<\S+\n0\n`).Match(b) {
		t.Errorf("the risks output (%v):\n%s", err, b)
	}
	if failed := ferry(t, nil, append(args, "--fail-on", "warning")...); failed.code != exitDifferences {
		t.Errorf("without the pull request's acceptance: exit %d", failed.code)
	}

	// The base in the cluster, with two objects of the CRD.
	vars := map[string]string{"TEST_KUBECONFIG": string(cp.Kubeconfig())}
	r.Git(nil, "checkout", "-q", base)
	if res := ferry(t, vars, "apply", "--repo", r.Dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS); res.code != 0 {
		t.Fatalf("applying the base: exit %d:\n%s", res.code, res.stderr)
	}
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	for _, name := range []string{"one", "two"} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": name, "namespace": ns}}}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// (Up to the commit before the FlowSchema: a kind the cluster does
	// not serve fails the whole live comparison.)
	live := ferry(t, vars, "diff", "--repo", r.Dir, "--base", base, "--head", pruned, "--format", "json", "--live", "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS)
	got := risks(live)
	wantLive := []string{
		"refused refused-by-server:Deployment/" + ns + "/web:spec.selector server dry-run ",
		crdRisk + " cluster ",
		"destructive prune-data:PersistentVolumeClaim/" + ns + "/data:prune  ",
	}
	if !slices.Equal(got, wantLive) {
		t.Errorf("--live risks\n got %q\nwant %q\n%s", got, wantLive, live.stderr)
	}
	if !strings.Contains(live.stdout, "the cluster holds 2 of them") {
		t.Errorf("--live does not count the CRD's objects:\n%s", live.stdout)
	}

	// The oracle: applying the selector's change fails where the diff
	// said.
	r.Git(nil, "checkout", "-q", selectorOnly)
	applied := ferry(t, vars, "apply", "--repo", r.Dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS)
	if applied.code != exitError || !strings.Contains(applied.stderr, "spec.selector") {
		t.Errorf("applying the head: exit %d, want 2 naming spec.selector:\n%s", applied.code, applied.stderr)
	}
}
