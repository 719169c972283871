package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/testtree"
)

const (
	driftRev1 = "1111111111111111111111111111111111111111"
	driftRev2 = "2222222222222222222222222222222222222222"
)

// kubectl runs the plane's kubectl and returns its output.
func kubectl(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(cp.KubectlPath(), append([]string{"--kubeconfig", cp.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// exampleDriftRepo copies the gpu-cluster example with its two namespaces
// renamed to fresh ones, plus a ConfigMap in the stage target.
func exampleDriftRepo(t *testing.T) (repo, infraNS, stageNS string) {
	s := exampleScenario(t, "gpu-cluster")
	infraNS, stageNS = cp.Namespace(t), cp.Namespace(t)
	s.replace("infrastructure/stage/kustomization.yaml", "namespace: infra", "namespace: "+infraNS)
	s.replace("infrastructure/stage/namespace.yaml", "name: infra", "name: "+infraNS)
	s.replace("apps/stage/kustomization.yaml", "namespace: stage", "namespace: "+stageNS)
	s.replace("apps/stage/namespace.yaml", "name: stage", "name: "+stageNS)
	s.replace("apps/stage/kustomization.yaml", "  - namespace.yaml\n", "  - namespace.yaml\n  - settings.yaml\n")
	s.write("apps/stage/settings.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  LOG_LEVEL: info
  MODEL: llama
`)
	return s.dir, infraNS, stageNS
}

func parseReports(t *testing.T, res result) []*drift.Report {
	t.Helper()
	var out []*drift.Report
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("JSON output: %v\n%s\nstderr: %s", err, res.stdout, res.stderr)
	}
	return out
}

// findings renders reports as "target: class object [field managers]"
// lines, sorted, with namespaces replaced by their placeholders.
func findings(reports []*drift.Report, names map[string]string) []string {
	out := []string{}
	for _, r := range reports {
		for _, o := range r.Objects {
			line := r.Target + ": " + string(o.Class) + " " + o.Object.String()
			for _, f := range o.Fields {
				line += " " + f.Path
				if f.Hidden {
					line += "(hidden)"
				}
				if len(f.Managers) > 0 {
					line += " [" + strings.Join(f.Managers, ",") + "]"
				}
			}
			out = append(out, line)
		}
	}
	for i := range out {
		for name, placeholder := range names {
			out[i] = strings.ReplaceAll(out[i], name, placeholder)
		}
	}
	sort.Strings(out)
	return out
}

func statuses(reports []*drift.Report) map[string]drift.Status {
	out := map[string]drift.Status{}
	for _, r := range reports {
		out[r.Target] = r.Status
	}
	return out
}

// TestDriftExample applies the example, changes the cluster the ways
// people do, and checks that drift names exactly what changed (and not a
// label someone added), that --heal puts it back, and that no output ever
// carries a Secret value.
func TestDriftExample(t *testing.T) {
	vars := applyVars(t)
	repo, infraNS, stageNS := exampleDriftRepo(t)
	names := map[string]string{infraNS: "INFRA", stageNS: "STAGE"}
	invNS := cp.Namespace(t)
	common := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", driftRev1}
	var outputs []string
	run := func(args ...string) result {
		t.Helper()
		res := ferry(t, vars, append(args, common...)...)
		outputs = append(outputs, res.stdout, res.stderr)
		return res
	}

	if res := run("apply"); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	clean := run("drift", "--format", "json", "--fail-on-drift")
	if clean.code != 0 {
		t.Fatalf("drift after apply: exit %d: %s", clean.code, clean.stderr)
	}
	if diff := cmp.Diff(map[string]drift.Status{"infra": drift.InSync, "stage": drift.InSync}, statuses(parseReports(t, clean))); diff != "" {
		t.Fatalf("after apply (-want +got):\n%s\n%s", diff, clean.stdout)
	}

	// The Secret values, as applied, and the one about to be patched in.
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	var canaries []string
	for _, name := range []string{"inference-api-secrets", "trainer-secrets", "notebook-secrets"} {
		s, err := cs.CoreV1().Secrets(stageNS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range s.Data {
			canaries = append(canaries, string(v), base64.StdEncoding.EncodeToString(v))
		}
	}
	patched := "canary-patched-api-key-77aa"
	canaries = append(canaries, patched, base64.StdEncoding.EncodeToString([]byte(patched)))

	// 3 a.m.
	kubectl(t, nil, "-n", stageNS, "scale", "deployment/inference-api", "--replicas=5")
	editor := filepath.Join(t.TempDir(), "editor.sh")
	testtree.Write(t, filepath.Dir(editor), map[string]string{"editor.sh": "#!/bin/sh\nsed -i 's/LOG_LEVEL: info/LOG_LEVEL: debug/' \"$1\"\n"})
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	kubectl(t, []string{"KUBE_EDITOR=" + editor}, "-n", stageNS, "edit", "configmap/settings")
	kubectl(t, nil, "-n", stageNS, "delete", "service/notebook")
	kubectl(t, nil, "-n", stageNS, "patch", "secret/inference-api-secrets", "--type=merge",
		"-p", fmt.Sprintf(`{"data":{"API_KEY":%q}}`, base64.StdEncoding.EncodeToString([]byte(patched))))
	kubectl(t, nil, "-n", stageNS, "label", "deployment/trainer", "team=ml")
	take := filepath.Join(t.TempDir(), "take.yaml")
	testtree.Write(t, filepath.Dir(take), map[string]string{"take.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: redis, namespace: ` + infraNS + `}
spec:
  template:
    spec:
      containers: [{name: redis, image: "redis:7.4-taken"}]
`})
	kubectl(t, nil, "apply", "--server-side", "--force-conflicts", "--field-manager=helm", "-f", take)

	summaryFile := filepath.Join(t.TempDir(), "summary.md")
	vars["GITHUB_STEP_SUMMARY"] = summaryFile
	drifted := run("drift", "--format", "json")
	delete(vars, "GITHUB_STEP_SUMMARY")
	if drifted.code != 0 {
		t.Fatalf("drift without --fail-on-drift: exit %d, want 0: %s", drifted.code, drifted.stderr)
	}
	reports := parseReports(t, drifted)
	want := []string{
		`infra: modified Deployment.apps/INFRA/redis .spec.template.spec.containers[name="redis"].image [helm]`,
		`stage: missing Service/STAGE/notebook`,
		`stage: modified ConfigMap/STAGE/settings .data.LOG_LEVEL [kubectl-edit]`,
		`stage: modified Deployment.apps/STAGE/inference-api .spec.replicas [kubectl (scale)]`,
		`stage: modified Secret/STAGE/inference-api-secrets .data.API_KEY(hidden) [kubectl-patch]`,
	}
	if diff := cmp.Diff(want, findings(reports, names)); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]drift.Status{"infra": drift.Drifted, "stage": drift.Drifted}, statuses(reports)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	for _, r := range reports {
		if r.AppliedRevision != driftRev1 || r.Revision != driftRev1 || r.Behind {
			t.Errorf("%s: applied %q, checked out %q, behind %v", r.Target, r.AppliedRevision, r.Revision, r.Behind)
		}
	}
	summary, err := os.ReadFile(summaryFile)
	if err != nil || !strings.Contains(string(summary), "### ferry drift") || !strings.Contains(string(summary), "**missing** `Service/"+stageNS+"/notebook`") {
		t.Errorf("step summary (%v):\n%s", err, summary)
	}
	outputs = append(outputs, string(summary))

	// As an Actions step: the output drifted, and the summary again.
	outputFile := filepath.Join(t.TempDir(), "output")
	step := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": outputFile, "GITHUB_STEP_SUMMARY": summaryFile}
	for k, v := range step {
		vars[k] = v
	}
	inStep := run("drift")
	for k := range step {
		delete(vars, k)
	}
	if inStep.code != 0 {
		t.Errorf("drift as a step: exit %d: %s", inStep.code, inStep.stderr)
	}
	if out, _ := os.ReadFile(outputFile); !strings.Contains(string(out), "drifted<<") || !strings.Contains(string(out), "\ntrue\n") {
		t.Errorf("step outputs lack drifted=true:\n%s", out)
	}
	if again, _ := os.ReadFile(summaryFile); strings.Count(string(again), "### ferry drift") != 2 {
		t.Errorf("the step's summary was not appended:\n%s", again)
	} else {
		outputs = append(outputs, string(again))
	}

	failing := run("drift", "--fail-on-drift")
	if failing.code != exitDifferences || !strings.Contains(failing.stderr, "drift in infra, stage") {
		t.Errorf("--fail-on-drift: exit %d, want 1: %s", failing.code, failing.stderr)
	}
	for _, w := range []string{"target stage: drifted (3 modified, 1 missing; ", ".spec.replicas: Git 2, live 5; owned by kubectl (scale)", ".data.API_KEY: value differs (hidden); owned by kubectl-patch"} {
		if !strings.Contains(failing.stdout, w) {
			t.Errorf("text report lacks %q:\n%s", w, failing.stdout)
		}
	}
	if md := run("drift", "--format", "markdown"); md.code != 0 || !strings.Contains(md.stdout, "| stage | drifted | 3 modified, 1 missing | 0 | ") {
		t.Errorf("markdown: exit %d:\n%s", md.code, md.stdout)
	}

	healed := run("drift", "--heal", "--format", "json")
	if healed.code != 0 {
		t.Fatalf("drift --heal: exit %d: %s", healed.code, healed.stderr)
	}
	var heals []string
	for _, r := range parseReports(t, healed) {
		if r.Heal == nil {
			t.Fatalf("%s: no heal: %+v", r.Target, r)
		}
		for _, c := range r.Heal.Changes {
			if c.Action != kube.Unchanged {
				heals = append(heals, string(c.Action)+" "+c.Object.String())
			}
		}
	}
	for i := range heals {
		heals[i] = strings.NewReplacer(infraNS, "INFRA", stageNS, "STAGE").Replace(heals[i])
	}
	sort.Strings(heals)
	wantHeals := []string{
		"configured ConfigMap/STAGE/settings", "configured Deployment.apps/INFRA/redis",
		"configured Deployment.apps/STAGE/inference-api", "configured Secret/STAGE/inference-api-secrets",
		"created Service/STAGE/notebook",
	}
	if diff := cmp.Diff(wantHeals, heals); diff != "" {
		t.Errorf("heal (-want +got):\n%s", diff)
	}

	after := run("drift", "--format", "json", "--fail-on-drift")
	if after.code != 0 {
		t.Errorf("drift after --heal: exit %d: %s", after.code, after.stderr)
	}
	if diff := cmp.Diff([]string{}, findings(parseReports(t, after), names)); diff != "" {
		t.Errorf("drift after --heal (-want +got):\n%s", diff)
	}
	d, err := cs.AppsV1().Deployments(stageNS).Get(context.Background(), "trainer", metav1.GetOptions{})
	if err != nil || d.Labels["team"] != "ml" {
		t.Errorf("the foreign label did not survive the heal: %v %v", d.Labels, err)
	}
	s, err := cs.CoreV1().Secrets(stageNS).Get(context.Background(), "inference-api-secrets", metav1.GetOptions{})
	if err != nil || string(s.Data["API_KEY"]) == patched {
		t.Errorf("Secret not healed: %v", err)
	}

	for _, out := range outputs {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "::add-mask::") {
				continue // the runner's instruction to hide the value
			}
			for _, c := range canaries {
				if len(c) >= 4 && strings.Contains(line, c) {
					t.Errorf("a Secret value is in ferry's output: %q in %q", c, line)
				}
			}
		}
	}
}

// Orphaned (in the inventory, gone from Git), unowned (made by hand, now
// rendered), missing and pending objects, at the applied revision and
// with Git ahead of it.
func TestDriftOrphanedUnownedPending(t *testing.T) {
	vars := applyVars(t)
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	s := newScenario(t)
	repo := s.dir
	cm := func(name, value, extra string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n%sdata:\n  key: %q\n", name, ns, extra, value)
	}
	testtree.Write(t, repo, map[string]string{
		"ferry.yaml":                  "targets:\n  - name: app\n    path: app\n",
		"app/kustomization.yaml":      "resources: [a.yaml, b.yaml, keep.yaml]\n",
		"app/a.yaml":                  cm("a", "1", ""),
		"app/b.yaml":                  cm("b", "2", ""),
		"app/keep.yaml":               cm("keep", "3", "  annotations: {ferry.dev/prune: disabled}\n"),
		"app/c.yaml":                  cm("c", "4", ""),
		"app/d.yaml":                  cm("d", "5", ""),
		"app/next.kustomization.yaml": "resources: [a.yaml, c.yaml, d.yaml]\n",
	})
	common := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS}
	if res := ferry(t, vars, append([]string{"apply", "--revision", driftRev1}, common...)...); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	kubectl(t, nil, "-n", ns, "create", "configmap", "c", "--from-literal=key=by-hand")
	// Git moves on: b and keep leave, a changes, c and d arrive.
	if err := os.Rename(filepath.Join(repo, "app/next.kustomization.yaml"), filepath.Join(repo, "app/kustomization.yaml")); err != nil {
		t.Fatal(err)
	}
	s.replace("app/a.yaml", `key: "1"`, `key: "changed"`)
	names := map[string]string{ns: "NS"}

	tests := []struct {
		name, revision string
		want           []string
		status         drift.Status
	}{
		{"at the applied revision", driftRev1, []string{
			"app: kept ConfigMap/NS/keep",
			"app: missing ConfigMap/NS/d",
			"app: orphaned ConfigMap/NS/b",
			"app: pending ConfigMap/NS/a .data.key",
			"app: unowned ConfigMap/NS/c",
		}, drift.Drifted},
		{"Git ahead of the cluster", driftRev2, []string{
			"app: kept ConfigMap/NS/keep",
			"app: pending ConfigMap/NS/a .data.key",
			"app: pending ConfigMap/NS/b",
			"app: pending ConfigMap/NS/d",
			"app: unowned ConfigMap/NS/c",
		}, drift.Drifted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := ferry(t, vars, append([]string{"drift", "--format", "json", "--revision", tc.revision}, common...)...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			reports := parseReports(t, res)
			if diff := cmp.Diff(tc.want, findings(reports, names)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if reports[0].Status != tc.status || reports[0].Behind != (tc.revision != driftRev1) {
				t.Errorf("status %q, behind %v", reports[0].Status, reports[0].Behind)
			}
		})
	}

	// Without c, the cluster is only behind Git: not drift.
	kubectl(t, nil, "-n", ns, "delete", "configmap", "c")
	behind := ferry(t, vars, append([]string{"drift", "--format", "json", "--fail-on-drift", "--revision", driftRev2}, common...)...)
	if behind.code != 0 || parseReports(t, behind)[0].Status != drift.NotApplied {
		t.Errorf("behind Git: exit %d, %s", behind.code, behind.stdout)
	}
	kubectl(t, nil, "-n", ns, "create", "configmap", "c", "--from-literal=key=by-hand")

	heal := ferry(t, vars, append([]string{"drift", "--heal", "--prune", "--revision", driftRev2}, common...)...)
	if heal.code != 0 {
		t.Fatalf("--heal --prune: exit %d: %s", heal.code, heal.stderr)
	}
	for _, w := range []string{"pruned     ConfigMap/" + ns + "/b", "created    ConfigMap/" + ns + "/d", "created    ConfigMap/" + ns + "/c", "skipped    ConfigMap/" + ns + "/keep"} {
		if !strings.Contains(heal.stdout, w) {
			t.Errorf("heal output lacks %q:\n%s", w, heal.stdout)
		}
	}
	// c was adopted (apply calls an object outside its inventory created).
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if c, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "c", metav1.GetOptions{}); err != nil || c.Data["key"] != "4" || c.Labels[kube.LabelPartOf] == "" {
		t.Errorf("c after heal: %v, %v", c, err)
	}
	after := ferry(t, vars, append([]string{"drift", "--format", "json", "--fail-on-drift", "--revision", driftRev2}, common...)...)
	if after.code != 0 {
		t.Fatalf("after heal: exit %d: %s", after.code, after.stderr)
	}
	if diff := cmp.Diff([]string{"app: kept ConfigMap/NS/keep"}, findings(parseReports(t, after), names)); diff != "" {
		t.Errorf("after heal (-want +got):\n%s", diff)
	}
}

// One target's cluster cannot be reached and another's render fails: both
// are errors of their own (never "everything is missing"), the third
// target is still reported, and the exit status is 2.
func TestDriftBadInputs(t *testing.T) {
	vars := applyVars(t)
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	repo := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: " + ns + "\ndata: {k: v}\n"
	testtree.Write(t, repo, map[string]string{
		"ferry.yaml": `targets:
  - name: ok
    path: ok
  - name: down
    path: down
    kubeconfig: unreachable.kubeconfig
  - name: broken
    path: broken
`,
		"unreachable.kubeconfig":    strings.Replace(string(cp.Kubeconfig()), cp.URL(), "https://127.0.0.1:1", 1),
		"ok/kustomization.yaml":     "resources: [c.yaml]\n",
		"ok/c.yaml":                 cm,
		"down/kustomization.yaml":   "resources: [c.yaml]\n",
		"down/c.yaml":               strings.Replace(cm, "name: c", "name: d", 1),
		"broken/kustomization.yaml": "resources: [c.yaml, missing.yaml]\n",
		"broken/c.yaml":             strings.Replace(cm, "name: c", "name: e", 1),
	})
	common := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", driftRev1}
	if res := ferry(t, vars, append([]string{"apply", "ok"}, common...)...); res.code != 0 {
		t.Fatalf("apply ok: exit %d: %s", res.code, res.stderr)
	}

	res := ferry(t, vars, append([]string{"drift", "--format", "json", "--fail-on-drift"}, common...)...)
	if res.code != exitError {
		t.Fatalf("exit %d, want 2: %s", res.code, res.stderr)
	}
	for _, w := range []string{"2 of 3 targets", "down", "broken"} {
		if !strings.Contains(res.stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, res.stderr)
		}
	}
	byTarget := map[string]*drift.Report{}
	for _, r := range parseReports(t, res) {
		byTarget[r.Target] = r
	}
	if r := byTarget["ok"]; r == nil || r.Status != drift.InSync || r.InSync != 1 {
		t.Errorf("ok: %+v, want in sync", r)
	}
	for name, want := range map[string]string{"down": "cluster https://127.0.0.1:1", "broken": "missing.yaml"} {
		r := byTarget[name]
		if r == nil || r.Status != drift.Failed || !strings.Contains(r.Error, want) || len(r.Objects) != 0 || r.InSync != 0 {
			t.Errorf("%s: %+v, want an error naming %q and no objects", name, r, want)
		}
	}
	text := ferry(t, vars, append([]string{"drift"}, common...)...)
	if text.code != exitError || strings.Contains(text.stdout, "  missing ") || !strings.Contains(text.stdout, "target ok: in sync") ||
		!strings.Contains(text.stdout, "target down: error: cluster https://127.0.0.1:1") || !strings.Contains(text.stdout, "target broken: error: ") {
		t.Errorf("text: exit %d\n%s", text.code, text.stdout)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad format", []string{"--format", "yaml"}, "--format"},
		{"bad report", []string{"--report", "email"}, "--report"},
		{"no concurrency", []string{"--concurrency", "0"}, "--concurrency"},
		{"unknown target", []string{"nope"}, `unknown target "nope"`},
		{"issue outside Actions", []string{"ok", "--report", "issue"}, "forge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := ferry(t, vars, append(append([]string{"drift"}, tc.args...), common...)...)
			if res.code != exitError || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q: %s", res.code, tc.want, res.stderr)
			}
		})
	}
}

// forgeIssue is an issue as a test reads it back from the forge.
type forgeIssue struct {
	Number   int
	Title    string
	Body     string
	State    string
	Labels   []string
	Comments []string
}

// driftIssueScenario runs drift with --report issue through a target's
// life: clean, drifted, drifted the same, drifted more, healed, clean
// again; issues reads the repository's issues back from the forge.
func driftIssueScenario(t *testing.T, forgeVars map[string]string, issues func() []forgeIssue) {
	vars := applyVars(t)
	for k, v := range forgeVars {
		vars[k] = v
	}
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	repo := t.TempDir()
	testtree.Write(t, repo, map[string]string{
		"ferry.yaml":             "targets:\n  - name: app\n    path: app\n",
		"app/kustomization.yaml": "namespace: " + ns + "\nresources: [cm.yaml, deploy.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  key: value\n",
		"app/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`,
	})
	common := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", driftRev1}
	if res := ferry(t, vars, append([]string{"apply"}, common...)...); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	step := func(name string, extra []string, wantAction string) *drift.Report {
		t.Helper()
		res := ferry(t, vars, append(append([]string{"drift", "--report", "summary,issue", "--format", "json"}, extra...), common...)...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d: %s", name, res.code, res.stderr)
		}
		r := parseReports(t, res)[0]
		got := "none"
		if r.Issue != nil {
			got = r.Issue.Action
		}
		if got != wantAction {
			t.Fatalf("%s: issue %s, want %s (%+v)", name, got, wantAction, r.Issue)
		}
		return r
	}
	one := func(name, state string, bodyHas ...string) forgeIssue {
		t.Helper()
		list := issues()
		if len(list) != 1 {
			t.Fatalf("%s: %d issues, want 1: %+v", name, len(list), list)
		}
		is := list[0]
		if is.Title != "Drift detected in app" || is.State != state || !slices.Contains(is.Labels, "ferry-drift") ||
			!strings.Contains(is.Body, "<!-- ferry:drift target=app -->") {
			t.Errorf("%s: issue %+v", name, is)
		}
		for _, w := range bodyHas {
			if !strings.Contains(is.Body, w) {
				t.Errorf("%s: issue body lacks %q:\n%s", name, w, is.Body)
			}
		}
		return is
	}

	step("clean", nil, "none")
	if list := issues(); len(list) != 0 {
		t.Fatalf("clean run opened issues: %+v", list)
	}
	kubectl(t, nil, "-n", ns, "scale", "deployment/web", "--replicas=3")
	created := step("drifted", nil, "created")
	first := one("drifted", "open", "`.spec.replicas`", "`kubectl (scale)`")
	if created.Issue.Number != first.Number {
		t.Errorf("report names issue #%d, the forge has #%d", created.Issue.Number, first.Number)
	}
	step("same drift", nil, "unchanged")
	one("same drift", "open")
	kubectl(t, nil, "-n", ns, "patch", "configmap/settings", "--type=merge", "-p", `{"data":{"key":"edited"}}`)
	step("more drift", nil, "edited")
	one("more drift", "open", "`.spec.replicas`", "`.data.key`", "`kubectl-patch`")
	step("heal", []string{"--heal"}, "closed")
	closed := one("heal", "closed")
	if len(closed.Comments) != 1 || !strings.Contains(closed.Comments[0], "Healed by ferry drift --heal") {
		t.Errorf("closing comments: %q", closed.Comments)
	}
	step("clean again", nil, "none")
	one("clean again", "closed")
}

func TestDriftIssueGitHub(t *testing.T) {
	s := githubtest.New(t)
	token := s.AddUser("ferry-bot")
	s.AddRepo("acme", "fleet")
	vars := map[string]string{"GITHUB_API_URL": s.URL, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/fleet", "GITHUB_TOKEN": token}
	driftIssueScenario(t, vars, func() []forgeIssue {
		var out []forgeIssue
		for _, is := range s.Issues("acme", "fleet") {
			fi := forgeIssue{Number: is.Number, Title: is.Title, Body: is.Body, State: is.State, Labels: is.Labels}
			for _, c := range s.Comments("acme", "fleet", is.Number) {
				fi.Comments = append(fi.Comments, c.Body)
			}
			out = append(out, fi)
		}
		return out
	})
}

func TestDriftIssueGitea(t *testing.T) {
	g := giteatest.Require(t)
	owner, name := giteatest.Unique("drift"), "fleet"
	token := g.CreateUser(t, owner)
	g.CreateRepo(t, owner, name)
	vars := map[string]string{"GITEA_ACTIONS": "true", "GITHUB_SERVER_URL": g.URL, "GITHUB_REPOSITORY": owner + "/" + name, "GITHUB_TOKEN": token}
	driftIssueScenario(t, vars, func() []forgeIssue {
		var out []forgeIssue
		for _, is := range g.Issues(t, token, owner, name) {
			out = append(out, forgeIssue{Number: int(is.Number), Title: is.Title, Body: is.Body, State: is.State, Labels: is.Labels, Comments: is.Comments})
		}
		return out
	})
}
