package acttest

import (
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
)

// TestBumpWorkflowOnDispatch runs examples/workflows/gitea/bump.yaml,
// dispatched as a registry webhook would (workflow_dispatch with image and
// tag: Gitea has no repository_dispatch), with a docker-registry holding a
// newer tag: the job opens one pull request on Gitea whose branch moves
// the marked image line, and nothing else, to the newest tag. The
// registry's credentials come from the runner's environment (act_runner's
// envs), as FERRY_REGISTRY_<HOST>_*.
func TestBumpWorkflowOnDispatch(t *testing.T) {
	t.Parallel()
	g := giteatest.Require(t)
	r := Require(t)
	reg := registrytest.Start(t)
	started.add(func() { started.registryPorts = append(started.registryPorts, port("http://"+reg.Host)) })
	digests := reg.MustPush(t, "acme/web", "1.0.0", "1.1.0", "1.2.0-rc.1")
	f := newFleet(t, g)
	wf := f.installWorkflow("gitea", "bump", probe(map[string]string{"PULL_REQUESTS": "${{ steps.bump.outputs.pull-requests }}"}))
	image := reg.Image("acme/web")
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: " + image + ":1.0.0 # {\"$imagepolicy\": \"flux-system:web\"}\n          # image: " + image + ":1.0.0 stays: no marker\n"
	f.write(map[string]string{
		"ferry.yaml":                  "targets:\n  - name: web\n    path: web\n",
		"web/kustomization.yaml":      "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n",
		"web/deployment.yaml":         deployment,
		"flux-system/automation.yaml": "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  image: " + image + "\n  interval: 5m\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: web\n  policy:\n    semver:\n      range: '>=1.0.0'\n",
	})
	base := f.commit("fleet")
	f.push("main")

	env := f.giteaEnv()
	hostEnv, _ := images.RegistryEnv(reg.Host) // 127.0.0.1:PORT has a spelling
	env[hostEnv+"_USERNAME"] = reg.Username
	env[hostEnv+"_PASSWORD"] = reg.Password
	res := r.Run(t, Job{
		Dir:        f.dir,
		Workflow:   wf,
		Event:      "workflow_dispatch",
		ServerHost: f.host(),
		Env:        env,
		Secrets:    map[string]string{"GITHUB_TOKEN": f.token},
		Actions:    Actions(r.StageFerry(t, nil)),
		Payload: map[string]any{
			"ref":        "refs/heads/main",
			"inputs":     map[string]any{"image": image, "tag": "1.1.0"},
			"repository": f.repositoryPayload(),
		},
	})
	runOK(t, res)
	prs := g.OpenPullRequests(t, f.token, f.owner, f.name)
	if len(prs) != 1 {
		t.Fatalf("%d open pull requests after the bump, want 1: %+v", len(prs), prs)
	}
	pr := prs[0]
	if pr.Base != "main" || !strings.Contains(pr.Title+pr.Body, "1.1.0") {
		t.Errorf("pull request %+v: want into main, naming 1.1.0", pr)
	}
	if d := digests["1.1.0"]; d == "" || !strings.Contains(pr.Body, d) {
		t.Errorf("the pull request's body does not record the registry's digest %q of 1.1.0:\n%s", d, pr.Body)
	}
	if got := probed(res.Log)["PULL_REQUESTS"]; !strings.Contains(got, `"number":`) || !strings.Contains(got, pr.URL) && !strings.Contains(got, "/pulls/") {
		t.Errorf("pull-requests output seen by the later step: %q", got)
	}
	f.git("fetch", "-q", "origin", "+refs/heads/"+pr.Head+":refs/remotes/origin/"+pr.Head)
	if parent := f.git("rev-parse", "origin/"+pr.Head+"^"); parent != base {
		t.Errorf("the bump commit's parent is %s, want main's %s", parent, base)
	}
	want := strings.Replace(deployment, ":1.0.0 # {", ":1.1.0 # {", 1)
	if got := f.git("show", "origin/"+pr.Head+":web/deployment.yaml") + "\n"; got != want {
		t.Errorf("web/deployment.yaml on %s:\n%s\nwant:\n%s", pr.Head, got, want)
	}
	if files := f.git("diff", "--name-only", base, "origin/"+pr.Head); files != "web/deployment.yaml" {
		t.Errorf("the bump changed %q, want web/deployment.yaml alone", files)
	}
	noSecrets(t, "the job log", res.Log, reg.Password, f.token)
}
