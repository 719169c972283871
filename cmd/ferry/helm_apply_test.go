package main

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// helmCanary is the value of a SOPS-encrypted Secret that a HelmRelease
// takes values from; it reaches the cluster and no output.
const helmCanary = "canary-helm-values-token-3e9d"

// bumpChart is a chart of a Deployment, a ConfigMap and a Secret of its
// values, and a Service. Version 1.1.0 moves the image to a newer tag and
// no longer renders the Service.
func bumpChart(version string) map[string]string {
	tag := "1.27"
	if version == "1.1.0" {
		tag = "1.28"
	}
	files := map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: shop\nversion: " + version + "\n",
		"values.yaml":               "replicas: 1\nimage: {repository: nginx, tag: \"" + tag + "\"}\ngreeting: hello\ntoken: none\n",
		"templates/deployment.yaml": helmtest.Deployment,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-token
stringData:
  token: {{ .Values.token | quote }}
`,
	}
	// A pre-install/pre-upgrade hook that records the chart version (so
	// the bump replaces it, Helm's default before-hook-creation policy)
	// and a test hook, never applied.
	files["templates/hooks.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-migrate
  annotations: {helm.sh/hook: "pre-install,pre-upgrade"}
data:
  chart: {{ .Chart.Version | quote }}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {helm.sh/hook: test}
spec:
  containers: [{name: test, image: "busybox:1.36"}]
`
	if version == "1.0.0" {
		files["templates/service.yaml"] = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
`
	}
	return files
}

// shopRelease is the HelmRelease web in namespace ns of chart shop at
// version from the HelmRepository charts, with values from the Secret
// web-values and inline values over them.
func shopRelease(ns, version string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: ` + ns + `
spec:
  interval: 10m
  chart:
    spec:
      chart: shop
      version: "` + version + `"
      sourceRef: {kind: HelmRepository, name: charts}
  valuesFrom:
    - kind: Secret
      name: web-values
  values:
    replicas: 3
    image: {repository: registry.example.test/shop/web}
`
}

// helmRepository is the HelmRepository charts in namespace ns at url.
func helmRepository(ns, url string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: ` + ns + `
spec:
  interval: 1h
  url: ` + url + `
`
}

// changeLines are a change set's changes as "action Kind/ns/name
// (reason)" lines, sorted.
func changeLines(s kube.ChangeSet) []string {
	var out []string
	for _, c := range s.Changes {
		line := string(c.Action) + " " + c.Object.String()
		if c.Reason != "" {
			line += " (" + c.Reason + ")"
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// setOf is the change set of target in apply's JSON output.
func setOf(t *testing.T, res result, target string) kube.ChangeSet {
	t.Helper()
	var sets []kube.ChangeSet
	if err := json.Unmarshal([]byte(res.stdout), &sets); err != nil {
		t.Fatalf("JSON output: %v\n%s\nstderr: %s", err, res.stdout, res.stderr)
	}
	for _, s := range sets {
		if s.Target == target {
			return s
		}
	}
	t.Fatalf("no change set of target %s in %s", target, res.stdout)
	return kube.ChangeSet{}
}

// TestHelmApplyBumpAndDrift drives a Flux fleet whose apps Kustomization
// holds a HelmRepository (a static HTTP chart repository), a HelmRelease
// and a SOPS-encrypted Secret of its values through a cluster without
// Flux's CRDs: apply creates the chart's objects with the values' effect
// and reports the HelmRelease and its source skipped; a commit bumping
// the chart changes the one Deployment whose image moved and prunes the
// Service the new chart no longer renders; drift then finds the
// Deployment someone scaled by hand. No output carries the Secret's value.
func TestHelmApplyBumpAndDrift(t *testing.T) {
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, bumpChart("1.0.0")), "1.0.0")
	charts.Add(t, testtree.New(t, bumpChart("1.1.0")), "1.1.0")

	r := newScenario(t)
	testtree.Write(t, r.dir, helmtest.FluxFleet("prod", "apps", map[string]string{
		"source.yaml": helmRepository(ns, charts.URL),
		"web.yaml":    shopRelease(ns, "1.0.0"),
	}))
	r.encrypt("apps/web-values.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: web-values
  namespace: `+ns+`
stringData:
  values.yaml: "token: `+helmCanary+`\n"
`, "^(data|stringData)$")
	r.commit("fleet with a HelmRelease of shop 1.0.0")

	vars := r.vars()
	vars["TEST_KUBECONFIG"] = string(cp.Require(t).Kubeconfig())
	vars["RUNNER_TOOL_CACHE"] = t.TempDir() // the chart cache, never the user's
	common := []string{"--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS}
	var outputs []result

	first := ferry(t, vars, append([]string{"apply", "--format", "json"}, common...)...)
	outputs = append(outputs, first)
	if first.code != 0 {
		t.Fatalf("apply: exit %d: %s", first.code, first.stderr)
	}
	source := "HelmRepository.source.toolkit.fluxcd.io/" + ns + "/charts (Flux source, which ferry resolves itself; the cluster has no Flux CRDs)"
	release := "HelmRelease.helm.toolkit.fluxcd.io/" + ns + "/web (Flux HelmRelease, whose chart ferry renders itself; the cluster has no Flux CRDs)"
	want := []string{
		"created ConfigMap/" + ns + "/web-config",
		"created ConfigMap/" + ns + "/web-migrate",
		"created Deployment.apps/" + ns + "/web",
		"created Secret/" + ns + "/web-token",
		"created Secret/" + ns + "/web-values",
		"created Service/" + ns + "/web",
		"skipped " + release,
		"skipped " + source,
	}
	if diff := cmp.Diff(want, changeLines(setOf(t, first, "apps"))); diff != "" {
		t.Errorf("first apply (-want +got):\n%s", diff)
	}

	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	if n, img := *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image; n != 3 || img != "registry.example.test/shop/web:1.27" {
		t.Errorf("Deployment: %d replicas of %s, want 3 of registry.example.test/shop/web:1.27 (the release's values over chart 1.0.0's)", n, img)
	}
	// The pre hook was written before the chart's other objects.
	hookCM, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's pre hook: %v", err)
	}
	if hv, dv := resourceVersion(t, hookCM.ResourceVersion), resourceVersion(t, dep.ResourceVersion); hv >= dv {
		t.Errorf("the pre hook (resourceVersion %d) was written after the Deployment (%d)", hv, dv)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "web-test", metav1.GetOptions{}); err == nil {
		t.Error("the chart's test hook Pod was applied")
	}
	token, err := cs.CoreV1().Secrets(ns).Get(ctx, "web-token", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Secret: %v", err)
	}
	if got := string(token.Data["token"]); got != helmCanary {
		t.Errorf("web-token holds %q, want the value of the decrypted valuesFrom Secret", got)
	}
	if _, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the chart's Service: %v", err)
	}

	// The text report says the same, skipped objects with their reason.
	again := ferry(t, vars, append([]string{"apply"}, common...)...)
	outputs = append(outputs, again)
	if again.code != 0 {
		t.Fatalf("re-apply: exit %d: %s", again.code, again.stderr)
	}
	for _, line := range []string{"target apps (applied ", "6 unchanged", "2 skipped", "skipped    HelmRelease.helm.toolkit.fluxcd.io/" + ns + "/web (Flux HelmRelease, whose chart ferry renders itself; the cluster has no Flux CRDs)"} {
		if !strings.Contains(again.stdout, line) {
			t.Errorf("re-apply output lacks %q:\n%s", line, again.stdout)
		}
	}

	// The chart bump, committed.
	r.replace("apps/web.yaml", `version: "1.0.0"`, `version: "1.1.0"`)
	r.commit("shop 1.1.0")
	bumped := ferry(t, vars, append([]string{"apply", "--format", "json"}, common...)...)
	outputs = append(outputs, bumped)
	if bumped.code != 0 {
		t.Fatalf("apply of the bump: exit %d: %s", bumped.code, bumped.stderr)
	}
	set := setOf(t, bumped, "apps")
	want = []string{
		"configured Deployment.apps/" + ns + "/web",
		"pruned Service/" + ns + "/web",
		"replaced ConfigMap/" + ns + "/web-migrate (hook-delete-policy before-hook-creation)",
		"skipped " + release,
		"skipped " + source,
		"unchanged ConfigMap/" + ns + "/web-config",
		"unchanged Secret/" + ns + "/web-token",
		"unchanged Secret/" + ns + "/web-values",
	}
	if diff := cmp.Diff(want, changeLines(set)); diff != "" {
		t.Errorf("apply of the bump (-want +got):\n%s", diff)
	}
	if dep, err = cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, img := *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image; n != 3 || img != "registry.example.test/shop/web:1.28" {
		t.Errorf("Deployment after the bump: %d replicas of %s, want 3 of registry.example.test/shop/web:1.28", n, img)
	}
	if _, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the Service chart 1.1.0 no longer renders is still in the cluster")
	}

	clean := ferry(t, vars, append([]string{"drift", "--format", "json", "--fail-on-drift"}, common...)...)
	outputs = append(outputs, clean)
	if clean.code != 0 {
		t.Fatalf("drift right after apply: exit %d: %s\n%s", clean.code, clean.stderr, clean.stdout)
	}

	// Someone scales the chart's Deployment by hand.
	patch := []byte(`{"spec":{"replicas":7}}`)
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	drifted := ferry(t, vars, append([]string{"drift", "--format", "json", "--fail-on-drift"}, common...)...)
	outputs = append(outputs, drifted)
	if drifted.code != exitDifferences {
		t.Fatalf("drift after scaling: exit %d, want 1 (--fail-on-drift): %s\n%s", drifted.code, drifted.stderr, drifted.stdout)
	}
	names := map[string]string{ns: "NS"}
	wantFindings := []string{"apps: modified Deployment.apps/NS/web .spec.replicas [kubectl-scale]"}
	if diff := cmp.Diff(wantFindings, findings(parseReports(t, drifted), names)); diff != "" {
		t.Errorf("drift findings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]drift.Status{"apps": drift.Drifted}, statuses(parseReports(t, drifted))); diff != "" {
		t.Errorf("drift statuses (-want +got):\n%s", diff)
	}
	text := ferry(t, vars, append([]string{"drift"}, common...)...)
	outputs = append(outputs, text)
	if text.code != 0 || !strings.Contains(text.stdout, "Deployment.apps/"+ns+"/web") {
		t.Errorf("drift text report (exit %d, want 0 without --fail-on-drift) does not name the Deployment:\n%s%s", text.code, text.stdout, text.stderr)
	}

	for _, o := range outputs {
		if strings.Contains(o.stdout+o.stderr, helmCanary) {
			t.Errorf("an output carries the Secret value:\n%s\n%s", o.stdout, o.stderr)
		}
	}
}

// resourceVersion reads an object's resourceVersion, which etcd gives in
// the order of writes.
func resourceVersion(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}
