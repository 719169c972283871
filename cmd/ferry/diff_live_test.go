package main

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/diff"
)

// TestDiffLive applies a base revision, edits the cluster behind ferry's
// back, then diffs a head revision against the cluster: the live section
// shows the head's changes plus the revert of the edit, the object the
// head drops as pruned, and none of the fields the server sets.
func TestDiffLive(t *testing.T) {
	vars := applyVars(t)
	ns := cp.Namespace(t)
	invNS := cp.Namespace(t)
	p := newScenario(t)
	p.write("ferry.yaml", "targets:\n  - name: live-app\n    path: app\n    prune: true\n")
	p.write("app/kustomization.yaml", "namespace: "+ns+"\nresources: [settings.yaml, web.yaml, extra.yaml, token.yaml]\n")
	p.write("app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: normal}\n")
	p.write("app/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {x: \"1\"}\n")
	p.write("app/token.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {token: live-secret-value-91c}\n")
	p.write("app/web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "registry.example.com/web:1.0.0"}]}
`)
	base := p.commit("base")
	kube := []string{"--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS}
	if res := ferry(t, vars, append([]string{"apply", "--repo", p.dir, "--revision", base}, kube...)...); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}

	// Someone edits the ConfigMap in the cluster.
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["mode"] = "hand-edited"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}

	p.replace("app/web.yaml", "web:1.0.0", "web:1.1.0")
	p.replace("app/kustomization.yaml", " extra.yaml,", "")
	p.remove("app/extra.yaml")
	head := p.commit("head")

	res := ferry(t, vars, append([]string{"diff", "--repo", p.dir, "--base", base, "--head", head, "--live", "--format", "json"}, kube...)...)
	if res.code != 0 {
		t.Fatalf("diff --live: exit %d: %s", res.code, res.stderr)
	}
	var report diff.Report
	if err := json.Unmarshal([]byte(res.stdout), &report); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(report.Targets) != 1 || report.Targets[0].LiveError != "" || report.Targets[0].LiveCounts == nil {
		t.Fatalf("want one target compared live, got %+v", report.Targets)
	}
	live := map[string]diff.Object{}
	for _, o := range report.Targets[0].Live {
		live[o.ID.Kind+"/"+o.ID.Name] = o
	}
	check := func(key string, action diff.Action, contains ...string) {
		t.Helper()
		o, ok := live[key]
		if !ok {
			t.Errorf("%s missing from the live comparison: %v", key, live)
			return
		}
		if o.Action != action {
			t.Errorf("%s: %s, want %s\n%s", key, o.Action, action, o.Diff)
		}
		for _, c := range contains {
			if !strings.Contains(o.Diff, c) {
				t.Errorf("%s: diff lacks %q:\n%s", key, c, o.Diff)
			}
		}
		for _, server := range []string{"managedFields", "resourceVersion", "uid:", "creationTimestamp", "generation:", "status:"} {
			if strings.Contains(o.Diff, server) {
				t.Errorf("%s: the diff shows the server-set %s:\n%s", key, server, o.Diff)
			}
		}
	}
	check("Deployment/web", diff.Changed, "-      - image: registry.example.com/web:1.0.0", "+      - image: registry.example.com/web:1.1.0")
	check("ConfigMap/settings", diff.Changed, "-  mode: hand-edited", "+  mode: normal")
	check("Secret/token", diff.Unchanged)
	check("ConfigMap/extra", diff.Removed)
	if !live["ConfigMap/extra"].Pruned {
		t.Error("the dropped ConfigMap is not reported as pruned")
	}

	md := ferry(t, vars, append([]string{"diff", "--repo", p.dir, "--base", base, "--head", head, "--live", "--format", "markdown"}, kube...)...)
	if !strings.Contains(md.stdout, "against the live cluster:** 0 to create, 2 to change, 1 to prune or leave") {
		t.Errorf("markdown lacks the live summary:\n%s", md.stdout)
	}
	for _, out := range []string{res.stdout, md.stdout, res.stderr, md.stderr} {
		if strings.Contains(out, "live-secret-value-91c") {
			t.Fatal("a secret value reached the output")
		}
	}

	// The cluster is unreachable: the live part of the report says so and
	// the command fails; the Git diff is still reported.
	bad := map[string]string{"TEST_KUBECONFIG": strings.Replace(vars["TEST_KUBECONFIG"], cp.RESTConfig().Host, "https://127.0.0.1:1", 1)}
	res = ferry(t, bad, append([]string{"diff", "--repo", p.dir, "--base", base, "--head", head, "--live"}, kube...)...)
	if res.code != 2 || !strings.Contains(res.stdout, "could not compare with the live cluster") || !strings.Contains(res.stdout, "Deployment.apps/"+ns+"/web (changed)") {
		t.Errorf("unreachable cluster: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
}
