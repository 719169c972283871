package acttest

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/actions/oidctest"
	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

const zeroSHA = "0000000000000000000000000000000000000000"

// deployFleet writes a fleet of two targets in namespace ns: infra (the
// Namespace and a ServiceAccount) and app (ConfigMaps, a SOPS Secret and a
// Service), app depending on infra. Every kind is healthy as soon as it is
// written, so the workflow's wait: true holds on a control plane without
// controllers.
func deployFleet(f *fleet, ns string, configs map[string]string, password string) {
	resources := "  - service.yaml\n  - secret.sops.yaml\n"
	files := map[string]string{
		"ferry.yaml":               "targets:\n  - name: infra\n    path: infra\n    prune: true\n  - name: app\n    path: app\n    prune: true\n    dependsOn: [infra]\n",
		"infra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n",
		"infra/namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: deployer\n  namespace: " + ns + "\n",
		"app/service.yaml":         "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  ports:\n    - port: 80\n  selector:\n    app: app\n",
		"app/secret.sops.yaml":     f.encrypt("secret.sops.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\nstringData:\n  password: "+password+"\n"),
	}
	for name, value := range configs {
		file := "app/" + name + ".yaml"
		files[file] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  value: " + value + "\n"
		resources += "  - " + name + ".yaml\n"
	}
	files["app/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n" + resources
	f.write(files)
}

// TestDeployWorkflowOnPush runs examples/workflows/github/deploy.yaml for
// two pushes to main: the plan job picks the targets the push changed, the
// apply job (one per cluster, from the plan's matrix) applies them to the
// control plane with the kubeconfig from a secret, and applied/pruned
// reach a later step. The first push creates main (every target); the
// second changes one ConfigMap and removes another (app only: one
// applied, one pruned).
func TestDeployWorkflowOnPush(t *testing.T) {
	t.Parallel()
	g := giteatest.Require(t)
	plane := cp.Require(t)
	r := Require(t)
	f := newFleet(t, g)
	ns := strings.ToLower(giteatest.Unique("shop"))
	const password = "deploy-pa55-0c1f"
	wf := f.installWorkflow("github", "deploy", probe(map[string]string{
		"APPLIED": "${{ steps.apply.outputs.applied }}",
		"PRUNED":  "${{ steps.apply.outputs.pruned }}",
		"TARGETS": "${{ matrix.targets }}",
	}))
	deployFleet(f, ns, map[string]string{"app-config": "one", "app-extra": "extra"}, password)
	first := f.commit("fleet")
	f.push("main")

	ferry := r.StageFerry(t, nil)
	run := func(before, after string) Result {
		return r.Run(t, Job{
			Dir:        f.dir,
			Workflow:   wf,
			Event:      "push",
			ServerHost: f.host(),
			Env:        map[string]string{"GITHUB_SERVER_URL": strings.TrimSuffix(g.URL, "/")},
			Secrets: map[string]string{
				"GITHUB_TOKEN": f.token,
				"SOPS_AGE_KEY": f.key.Identity,
				"KUBECONFIG":   string(plane.Kubeconfig()),
			},
			Actions: Actions(ferry),
			Payload: map[string]any{
				"ref": "refs/heads/main", "before": before, "after": after,
				"repository": f.repositoryPayload(),
			},
		})
	}
	kube, err := kubernetes.NewForConfig(plane.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res := run(zeroSHA, first)
	runOK(t, res)
	got := probed(res.Log)
	if got["TARGETS"] != "infra,app" || got["APPLIED"] != "6" || got["PRUNED"] != "0" {
		t.Errorf("first push: outputs seen by the later step %v; want TARGETS=infra,app APPLIED=6 PRUNED=0", got)
	}
	noSecrets(t, "the first job log", res.Log, password, f.key.Identity, clientKey(plane.Kubeconfig()))
	secret, err := kube.CoreV1().Secrets(ns).Get(ctx, "app-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("first push: %v", err)
	}
	if string(secret.Data["password"]) != password {
		t.Errorf("the applied Secret holds %q, want the decrypted value", secret.Data["password"])
	}
	for _, name := range []string{"app-config", "app-extra"} {
		if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("first push: %v", err)
		}
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "deployer", metav1.GetOptions{}); err != nil {
		t.Errorf("first push: %v", err)
	}

	// The second push changes app-config and drops app-extra: app alone.
	f.remove("app/app-extra.yaml")
	deployFleet(f, ns, map[string]string{"app-config": "two"}, password)
	second := f.commit("app: config two, no extra")
	f.push("main")
	res = run(first, second)
	runOK(t, res)
	got = probed(res.Log)
	if got["TARGETS"] != "app" || got["APPLIED"] != "1" || got["PRUNED"] != "1" {
		t.Errorf("second push: outputs seen by the later step %v; want TARGETS=app APPLIED=1 PRUNED=1", got)
	}
	if !strings.Contains(res.Log, "ferry pruned 1 objects on cluster") {
		t.Errorf("the workflow's pruned notice did not run:\n%s", res.Log)
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["value"] != "two" {
		t.Errorf("app-config holds %q after the second push, want two", cm.Data["value"])
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("app-extra after the second push: %v, want it pruned", err)
	}
	noSecrets(t, "the second job log", res.Log, password, f.key.Identity, clientKey(plane.Kubeconfig()))
}

// clientKey returns the client-key-data of a kubeconfig ("" if none).
func clientKey(kubeconfig []byte) string {
	for _, line := range strings.Split(string(kubeconfig), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "client-key-data: "); ok {
			return v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "token: "); ok {
			return v
		}
	}
	return ""
}

// TestDeployWorkflowKeyless runs the same deploy workflow with no
// KUBECONFIG secret: ferry.yaml reaches the cluster by server and
// auth: oidc, and the runner gives the job its OIDC token (the Actions
// ID-token variables, served by a test issuer the API server trusts for
// this repository's main branch). The apply job applies with that
// identity alone, and the token is in no log line.
func TestDeployWorkflowKeyless(t *testing.T) {
	// Not parallel: its own control plane and two act jobs would slow the
	// other runner tests that share the cores.
	g := giteatest.Require(t)
	r := Require(t)
	f := newFleet(t, g)
	iss := oidctest.Start(t, map[string]any{
		"sub": "repo:" + f.repository() + ":ref:refs/heads/main", "repository": f.repository(), "ref": "refs/heads/main",
	}, 5*time.Minute)
	plane := kubetest.StartWith(t, kubetest.Options{APIServerArgs: iss.APIServerArgs(t, t.TempDir(), "prod-cluster", f.repository(), "refs/heads/main")})
	kube, err := kubernetes.NewForConfig(plane.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-from-ci"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "github:repo:" + f.repository() + ":ref:refs/heads/main"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.ToLower(giteatest.Unique("keyless"))
	wf := f.installWorkflow("github", "deploy", probe(map[string]string{"APPLIED": "${{ steps.apply.outputs.applied }}"}))
	const password = "keyless-pa55-7e2a"
	deployFleet(f, ns, map[string]string{"app-config": "one"}, password)
	ca, err := json.Marshal(string(plane.CA()))
	if err != nil {
		t.Fatal(err)
	}
	f.write(map[string]string{"ferry.yaml": "clusters:\n  prod:\n    server: " + plane.URL() + "\n    certificateAuthorityData: " + string(ca) +
		"\n    auth:\n      oidc: {audience: prod-cluster}\n" +
		"targets:\n  - name: infra\n    path: infra\n    cluster: prod\n    prune: true\n  - name: app\n    path: app\n    cluster: prod\n    prune: true\n    dependsOn: [infra]\n"})
	first := f.commit("fleet, keyless")
	f.push("main")

	env := map[string]string{"GITHUB_SERVER_URL": strings.TrimSuffix(g.URL, "/")}
	maps.Copy(env, iss.Env())
	res := r.Run(t, Job{
		Dir:        f.dir,
		Workflow:   wf,
		Event:      "push",
		ServerHost: f.host(),
		Env:        env,
		Secrets:    map[string]string{"GITHUB_TOKEN": f.token, "SOPS_AGE_KEY": f.key.Identity},
		Actions:    Actions(r.StageFerry(t, nil)),
		Payload: map[string]any{
			"ref": "refs/heads/main", "before": zeroSHA, "after": first,
			"repository": f.repositoryPayload(),
		},
	})
	runOK(t, res)
	if got := probed(res.Log); got["APPLIED"] != "5" {
		t.Errorf("outputs seen by the later step %v; want APPLIED=5 (Namespace, ServiceAccount, Service, Secret, ConfigMap)", got)
	}
	if iss.Requests() == 0 {
		t.Error("the job never asked the runner for its OIDC token")
	}
	if strings.Contains(res.Log, "eyJ") {
		t.Errorf("a token reached the job log:\n%s", res.Log)
	}
	noSecrets(t, "the job log", res.Log, password, f.key.Identity, iss.RequestToken)
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{}); err != nil {
		t.Errorf("keyless deploy: %v", err)
	}
}
