package acttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

var (
	ferryBinOnce sync.Once
	ferryBinDir  string // removed by TestMain
	ferryBin     string
	ferryBinErr  error
)

// ferryCLI builds ferry from this checkout once, for what a scenario does
// outside the workflow under test (the first apply before a drift audit).
func ferryCLI(t *testing.T) string {
	t.Helper()
	ferryBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ferry-acttest-bin-")
		if err != nil {
			ferryBinErr = err
			return
		}
		ferryBinDir = dir
		ferryBin = filepath.Join(dir, "ferry")
		cmd := exec.Command("go", "build", "-o", ferryBin, "./cmd/ferry")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			ferryBinErr = err
			ferryBin = string(out)
		}
	})
	if ferryBinErr != nil {
		t.Fatalf("go build ./cmd/ferry: %v\n%s", ferryBinErr, ferryBin)
	}
	return ferryBin
}

// runCLI runs a command in the fleet's checkout with the control plane's
// kubeconfig and the fleet's age key, and fails the test unless it exits 0.
func runCLI(t *testing.T, plane *kubetest.ControlPlane, f *fleet, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+plane.KubeconfigPath(), "SOPS_AGE_KEY="+f.key.Identity, "GITHUB_ACTIONS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// driftFleet writes one target, named ns, in namespace ns: a Deployment of
// two replicas and a SOPS Secret.
func driftFleet(f *fleet, ns, password string) {
	f.write(map[string]string{
		// The target is named after its namespace: the inventory is per
		// target name, and the scenarios share one cluster.
		"ferry.yaml":             "targets:\n  - name: " + ns + "\n    path: web\n    prune: true\n",
		"web/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n  - namespace.yaml\n  - deployment.yaml\n  - secret.sops.yaml\n",
		"web/namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		"web/deployment.yaml":    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n        - name: web\n          image: registry.invalid/web:1.0.0\n",
		"web/secret.sops.yaml":   f.encrypt("secret.sops.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-credentials\nstringData:\n  password: "+password+"\n"),
	})
}

// TestDriftWorkflowOnSchedule runs examples/workflows/gitea/drift.yaml on
// its schedule against the control plane: after the Deployment is scaled
// by hand the job fails (fail-on-drift) and opens one Gitea issue for the
// target; after ferry drift --heal puts it back, the next run passes and
// closes the issue.
func TestDriftWorkflowOnSchedule(t *testing.T) {
	t.Parallel()
	g := giteatest.Require(t)
	f := newFleet(t, g)
	driftScenario(t, f, "gitea", f.giteaEnv(), f.token, func() []driftIssue {
		var out []driftIssue
		for _, i := range g.Issues(t, f.token, f.owner, f.name) {
			out = append(out, driftIssue{Number: i.Number, State: i.State, Text: i.Title + "\n" + i.Body})
		}
		return out
	})
}

// TestDriftWorkflowOnScheduleGitHub does the same with
// examples/workflows/github/drift.yaml (report: summary,issue), its issue
// on the GitHub test server, and its report in the step summary.
func TestDriftWorkflowOnScheduleGitHub(t *testing.T) {
	t.Parallel()
	g := giteatest.Require(t)
	f := newFleet(t, g)
	gh := githubtest.New(t)
	token := gh.AddUser("github-actions[bot]")
	gh.AddRepo(f.owner, f.name)
	env := map[string]string{"GITHUB_SERVER_URL": strings.TrimSuffix(g.URL, "/"), "GITHUB_API_URL": gh.URL}
	driftScenario(t, f, "github", env, token, func() []driftIssue {
		var out []driftIssue
		for _, i := range gh.Issues(f.owner, f.name) {
			if i.PullRequest == nil {
				out = append(out, driftIssue{Number: int64(i.Number), State: i.State, Text: i.Title + "\n" + i.Body})
			}
		}
		return out
	})
}

// driftIssue is an issue of either forge, as the drift scenario checks it.
type driftIssue struct {
	Number      int64
	State, Text string
}

// driftScenario applies the drift fleet with the CLI, scales its
// Deployment by hand, runs the drift workflow of flavour (it must fail and
// open one issue), heals with ferry drift --heal, and runs it again (it
// must pass and close that issue).
func driftScenario(t *testing.T, f *fleet, flavour string, env map[string]string, token string, issues func() []driftIssue) {
	plane := cp.Require(t)
	r := Require(t)
	ns := strings.ToLower(giteatest.Unique("drift"))
	const password = "drift-pa55-e71d"
	wf := f.installWorkflow(flavour, "drift", probe(map[string]string{"DRIFTED": "${{ steps.drift.outputs.drifted }}"}))
	driftFleet(f, ns, password)
	f.commit("fleet")
	f.push("main")
	bin := ferryCLI(t)
	runCLI(t, plane, f, bin, "apply", "--repo", ".")

	kubectl := plane.KubectlPath()
	runCLI(t, plane, f, kubectl, "-n", ns, "scale", "deployment/web", "--replicas=5")

	ferry := r.StageFerry(t, nil)
	run := func() Result {
		return r.Run(t, Job{
			Dir:        f.dir,
			Workflow:   wf,
			Event:      "schedule",
			ServerHost: f.host(),
			Env:        env,
			Secrets: map[string]string{
				"GITHUB_TOKEN": token,
				"SOPS_AGE_KEY": f.key.Identity,
				"KUBECONFIG":   string(plane.Kubeconfig()),
			},
			Actions: Actions(ferry),
			Payload: map[string]any{"schedule": "17 6 * * 1-5", "repository": f.repositoryPayload()},
		})
	}
	res := run()
	if res.Err == nil {
		t.Fatalf("the drift job passed with the Deployment scaled by hand (fail-on-drift: true):\n%s", res.Log)
	}
	if got := probed(res.Log); got["DRIFTED"] != "true" {
		t.Errorf("drifted output seen by the later step: %q, want true", got["DRIFTED"])
	}
	found := issues()
	if len(found) != 1 || found[0].State != "open" {
		t.Fatalf("after the drift: issues %+v, want one open", found)
	}
	drifted := found[0]
	for _, want := range []string{"Deployment.apps/" + ns + "/web", ".spec.replicas"} {
		if !strings.Contains(drifted.Text, want) {
			t.Errorf("the drift issue does not name %q:\n%s", want, drifted.Text)
		}
	}
	if flavour == "github" && !strings.Contains(strings.Join(res.Summaries, "\n"), "Deployment.apps/"+ns+"/web") {
		t.Errorf("report: summary, but no step summary names the drifted Deployment: %q", res.Summaries)
	}
	noSecrets(t, "the job log", res.Log, password, f.key.Identity, clientKey(plane.Kubeconfig()))
	noSecrets(t, "the drift issue", drifted.Text, password)

	runCLI(t, plane, f, bin, "drift", "--repo", ".", "--heal")
	if out := runCLI(t, plane, f, kubectl, "-n", ns, "get", "deployment/web", "-o", "jsonpath={.spec.replicas}"); out != "2" {
		t.Fatalf("after the heal the Deployment has %s replicas, want 2", out)
	}
	res = run()
	runOK(t, res)
	if got := probed(res.Log); got["DRIFTED"] != "false" {
		t.Errorf("drifted output after the heal: %q, want false", got["DRIFTED"])
	}
	found = issues()
	if len(found) != 1 || found[0].Number != drifted.Number || found[0].State != "closed" {
		t.Errorf("after the heal: issues %+v, want issue %d closed", found, drifted.Number)
	}
}
