package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// cp is the package's control plane (see TestMain).
var cp *kubetest.ControlPlane

// TestMain runs the tests with the control plane, and stops the Gitea the
// forge tests start on first use. With peakRSSVar set, the test binary is
// the parent that measures a ferry run instead (measurePeakRSS).
func TestMain(m *testing.M) {
	if os.Getenv(peakRSSVar) == "1" {
		os.Exit(measurePeakRSS())
	}
	code := kubetest.Run(m, &cp)
	giteatest.Stop()
	os.Exit(code)
}

// applyVars is the environment of an apply run: the example's key and the
// plane's kubeconfig as content, the way CI secrets hand it over.
func applyVars(t *testing.T) map[string]string {
	v := exampleKey(t)
	v["TEST_KUBECONFIG"] = string(cp.Require(t).Kubeconfig())
	return v
}

func TestApplyExample(t *testing.T) {
	s := exampleScenario(t, "gpu-cluster")
	args := append([]string{"apply", "--repo", s.dir, "--revision", "0123456789abcdef0123456789abcdef01234567"}, s.cluster()...)

	first := s.ferry(append(args, "--format", "json")...)
	if first.code != 0 {
		t.Fatalf("apply: exit %d: %s", first.code, first.stderr)
	}
	var sets []kube.ChangeSet
	if err := json.Unmarshal([]byte(first.stdout), &sets); err != nil {
		t.Fatalf("JSON output: %v\n%s", err, first.stdout)
	}
	if len(sets) != 2 || sets[0].Target != "infra" || sets[1].Target != "stage" {
		t.Fatalf("change sets for %v, want infra then stage (dependsOn order)", sets)
	}
	for _, cs := range sets {
		if cs.Count(kube.Created) != len(cs.Changes) || len(cs.Changes) == 0 {
			t.Errorf("target %s: first apply %+v, want everything created", cs.Target, cs.Changes)
		}
	}

	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	secret, err := cs.CoreV1().Secrets("stage").Get(context.Background(), "inference-api-secrets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secret.Data["HF_TOKEN"]) == 0 || strings.Contains(string(secret.Data["HF_TOKEN"]), "ENC[") {
		t.Errorf("Secret applied without its decrypted value: %q", secret.Data["HF_TOKEN"])
	}
	for _, out := range []string{first.stdout, first.stderr} {
		if strings.Contains(out, string(secret.Data["HF_TOKEN"])) {
			t.Error("apply printed a secret value")
		}
	}

	again := s.ferry(args...)
	if again.code != 0 {
		t.Fatalf("re-apply: exit %d: %s", again.code, again.stderr)
	}
	for _, want := range []string{"target infra (applied 0123456789ab): 5 unchanged", "target stage (applied 0123456789ab): 10 unchanged"} {
		if !strings.Contains(again.stdout, want) {
			t.Errorf("re-apply output lacks %q:\n%s", want, again.stdout)
		}
	}

	// notebook leaves the render: its objects are pruned.
	s.replace("apps/stage/kustomization.yaml", "  - ./services/notebook", "")
	pruned := s.ferry(append(args, "--prune", "--format", "markdown")...)
	if pruned.code != 0 {
		t.Fatalf("apply --prune: exit %d: %s", pruned.code, pruned.stderr)
	}
	for _, want := range []string{"| stage | `0123456789ab` | 0 | 0 | 7 | 3 | 0 | 0 |", "- pruned `Deployment.apps/stage/notebook`"} {
		if !strings.Contains(pruned.stdout, want) {
			t.Errorf("markdown lacks %q:\n%s", want, pruned.stdout)
		}
	}
	if _, err := cs.AppsV1().Deployments("stage").Get(context.Background(), "notebook", metav1.GetOptions{}); err == nil {
		t.Error("notebook Deployment still exists after prune")
	}
}

// A target that fails to render stops the whole run before anything is
// sent: the target that rendered fine is not applied either.
func TestApplyRenderFailureAppliesNothing(t *testing.T) {
	vars := applyVars(t)
	r := newSecretRepo(t)
	ns := cp.Namespace(t)
	r.write("ok/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n  namespace: "+ns+"\n")
	r.write("ok/kustomization.yaml", "resources: [cm.yaml]\n")
	r.write("ferry.yaml", "targets:\n  - name: ok\n    path: ok\n  - name: app\n    path: app\n")
	// The example key is not the key the app target was encrypted for.
	res := ferry(t, vars, "apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", cp.Namespace(t))
	if res.code != exitError {
		t.Fatalf("exit %d, want 2: %s", res.code, res.stderr)
	}
	for _, want := range []string{"nothing was applied", `target "app"`, "app/secret.yaml: decrypting"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("error lacks %q: %s", want, res.stderr)
		}
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "first", metav1.GetOptions{}); err == nil {
		t.Error("the target that rendered was applied although another failed")
	}
}

func TestApplyBadClusterInputs(t *testing.T) {
	vars := applyVars(t)
	vars["BROKEN"] = "apiVersion: v1\nkind: Config\nclusters: [oops"
	repo := filepath.Join(examplesDir, "gpu-cluster")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bad kubeconfig content", []string{"--kubeconfig-env", "BROKEN"}, []string{`target "infra"`, "kubeconfig"}},
		{"empty kubeconfig variable", []string{"--kubeconfig-env", "NOT_SET"}, []string{`target "infra"`, "NOT_SET", "empty"}},
		{"missing kubeconfig file", []string{"--kubeconfig", filepath.Join(t.TempDir(), "nope")}, []string{`target "infra"`, "nope"}},
		{"unreachable API server", []string{"--kubeconfig", unreachableKubeconfig(t)}, []string{`target "infra"`, "cluster https://127.0.0.1:1"}},
		{"bad format", []string{"--format", "yaml"}, []string{"--format"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := ferry(t, vars, append([]string{"apply", "--repo", repo}, tc.args...)...)
			if res.code != exitError {
				t.Fatalf("exit %d, want 2; stderr: %s", res.code, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("error lacks %q: %s", w, res.stderr)
				}
			}
		})
	}
}

func unreachableKubeconfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	content := strings.Replace(string(cp.Kubeconfig()), cp.URL(), "https://127.0.0.1:1", 1)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Invariant 1 across targets: a target that would fail on the server
// stops the run before any target writes. Target a (a valid ConfigMap)
// comes first; target b's Deployment is refused by the server's dry-run;
// target c needs a Namespace and a CRD that a creates, and must not fail
// the preflight for it (its custom resource is checked against a's CRD).
func TestApplyPreflightsEveryTargetFirst(t *testing.T) {
	vars := map[string]string{"TEST_KUBECONFIG": string(cp.Require(t).Kubeconfig())}
	ns := cp.Namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".example.com"
	r := newScenario(t)
	r.write("ferry.yaml", "targets:\n  - {name: a, path: a}\n  - {name: b, path: b, dependsOn: [a]}\n  - {name: c, path: c, dependsOn: [a]}\n")
	r.write("a/kustomization.yaml", "resources: [cm.yaml, ns.yaml, crd.yaml]\n")
	r.write("a/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: "+ns+"}\ndata: {k: v}\n")
	r.write("a/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"-c}\n")
	r.write("a/crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.`+group+`}
spec:
  group: `+group+`
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
`)
	r.write("b/kustomization.yaml", "resources: [deploy.yaml]\n")
	r.write("b/deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: bad, namespace: `+ns+`}
spec:
  replicas: "three"
  selector: {matchLabels: {app: bad}}
  template:
    metadata: {labels: {app: bad}}
    spec: {containers: [{name: c, image: example.invalid/bad:1}]}
`)
	r.write("c/kustomization.yaml", "resources: [widget.yaml]\n")
	r.write("c/widget.yaml", "apiVersion: "+group+"/v1\nkind: Widget\nmetadata: {name: w, namespace: "+ns+"-c}\nspec: {size: 3}\n")
	args := []string{"apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns, "--revision", "0123456789abcdef0123456789abcdef01234567"}

	res := ferry(t, vars, args...)
	if res.code != exitError {
		t.Fatalf("apply: exit %d, want %d: %s", res.code, exitError, res.stderr)
	}
	for _, w := range []string{"nothing was applied", `target "b"`, "Deployment.apps/" + ns + "/bad"} {
		if !strings.Contains(res.stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, res.stderr)
		}
	}
	if strings.Contains(res.stderr, `target "c"`) {
		t.Errorf("target c, whose Namespace and CRD target a creates, failed the preflight: %s", res.stderr)
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "good", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("ConfigMap/%s/good: %v, want not found: target a was applied before b's preflight", ns, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), ns+"-c", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Namespace/%s-c: %v, want not found", ns, err)
	}

	// Fixed, the three apply in one run: c's Widget lands in the Namespace
	// and as the kind that a created.
	r.write("b/deploy.yaml", strings.Replace(r.read("b/deploy.yaml"), `replicas: "three"`, "replicas: 3", 1))
	if res := ferry(t, vars, args...); res.code != 0 {
		t.Fatalf("apply after the fix: exit %d: %s", res.code, res.stderr)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "good", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap/%s/good after the fix: %v", ns, err)
	}
}

// A target that fails while the run writes (here: another run holds its
// Lease) stops the targets that depend on it, which are reported as not
// attempted and why; independent targets still apply; exit 2.
func TestApplyFailureStopsOnlyDependents(t *testing.T) {
	vars := map[string]string{"TEST_KUBECONFIG": string(cp.Require(t).Kubeconfig())}
	ns := cp.Namespace(t)
	r := newScenario(t)
	r.write("ferry.yaml", "targets:\n  - {name: a, path: a}\n  - {name: b, path: b, dependsOn: [a]}\n  - {name: c, path: c, dependsOn: [b]}\n  - {name: d, path: d}\n")
	for _, n := range []string{"a", "b", "c", "d"} {
		r.write(n+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-"+n+", namespace: "+ns+"}\ndata: {k: v}\n")
	}
	// Another run holds b's Lease for the next minute.
	holder, seconds, now := "another-run", int32(60), metav1.NewMicroTime(time.Now())
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	_, err := cs.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: kube.ParentName("b") + "-lock", Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := ferry(t, vars, "apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns,
		"--lock-timeout", "1s", "--format", "json")
	if res.code != exitError {
		t.Fatalf("apply: exit %d, want %d: %s", res.code, exitError, res.stderr)
	}
	var sets []kube.ChangeSet
	if err := json.Unmarshal([]byte(res.stdout), &sets); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	got := map[string]string{}
	for _, s := range sets {
		switch {
		case s.NotAttempted != "":
			got[s.Target] = "not attempted: " + s.NotAttempted
		case s.Error != "":
			got[s.Target] = "failed"
		default:
			got[s.Target] = fmt.Sprintf("%d created", s.Count(kube.Created))
		}
	}
	want := map[string]string{"a": "1 created", "b": "failed", "c": "not attempted: depends on target b, which failed", "d": "1 created"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.stderr, `target "b"`) || !strings.Contains(res.stderr, "another-run") {
		t.Errorf("stderr does not name the failed target and the Lease holder: %s", res.stderr)
	}
	for n, exists := range map[string]bool{"a": true, "b": false, "c": false, "d": true} {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "cm-"+n, metav1.GetOptions{})
		if (err == nil) != exists {
			t.Errorf("ConfigMap cm-%s: %v, want exists=%v", n, err, exists)
		}
	}
	text := ferry(t, vars, "apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns, "--lock-timeout", "1s")
	if !strings.Contains(text.stdout, "target c (not attempted): depends on target b, which failed") {
		t.Errorf("text report:\n%s", text.stdout)
	}
}
