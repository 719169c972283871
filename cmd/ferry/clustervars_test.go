package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A substituteFrom Secret that only the cluster holds (made there by
// external-secrets, say): render goes without it and says so; apply and
// drift read it from the cluster (get only), substitute its values and
// never print them; while the cluster has none, apply fails naming it and
// writes nothing.
func TestClusterOnlyVariables(t *testing.T) {
	vars := applyVars(t)
	ns := cp.Namespace(t) // the Kustomizations' namespace, where Flux looks
	app := cp.Namespace(t)
	repo := copyScenario(t, filepath.Join("..", "..", "internal", "config", "testdata", "fleets", "clustervars")).dir
	for _, f := range []string{"clusters/home/flux-system/gotk-sync.yaml", "clusters/home/apps.yaml", "clusters/home/infra.yaml", "apps/home/kustomization.yaml", "apps/home/dashboard/namespace.yaml", "apps/home/dashboard/config.yaml"} {
		p := filepath.Join(repo, filepath.FromSlash(f))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "flux-system", ns)
		s = strings.ReplaceAll(strings.ReplaceAll(s, "namespace: dashboard", "namespace: "+app), "name: dashboard", "name: "+app)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns}

	r := ferry(t, vars, "render", "--repo", repo, "apps")
	if r.code != 0 || !strings.Contains(r.stderr, "rendered without Secret/"+ns+"/cluster-secrets") || !strings.Contains(r.stdout, "https://dash.${SECRET_DOMAIN}") {
		t.Fatalf("render: exit %d, stderr %s\nstdout %s", r.code, r.stderr, r.stdout)
	}

	missing := ferry(t, vars, append([]string{"apply", "apps", "--revision", "0123456789abcdef0123456789abcdef01234567"}, args...)...)
	if missing.code != exitError || !strings.Contains(missing.stderr, `'Secret/cluster-secrets'`) || !strings.Contains(missing.stderr, "not found") {
		t.Fatalf("apply without the Secret: exit %d: %s", missing.code, missing.stderr)
	}
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(app).Get(t.Context(), app, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a failed apply wrote ConfigMap %s (%v)", app, err)
	}

	const domain, email = "home-7c1e.example.org", "ops-93af@home.example.org"
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-secrets", Namespace: ns},
		StringData: map[string]string{"SECRET_DOMAIN": domain, "SECRET_ADMIN_EMAIL": email},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applied := ferry(t, vars, append([]string{"apply", "apps", "--revision", "0123456789abcdef0123456789abcdef01234567"}, args...)...)
	if applied.code != 0 {
		t.Fatalf("apply: exit %d: %s", applied.code, applied.stderr)
	}
	cm, err := cs.CoreV1().ConfigMaps(app).Get(t.Context(), app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"url": "https://dash." + domain, "admin": email, "title": "Home"}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("applied %s = %q, want %q", k, cm.Data[k], v)
		}
	}
	drift := ferry(t, vars, append([]string{"drift", "apps", "--fail-on-drift", "--format", "json"}, args...)...)
	if drift.code != 0 {
		t.Errorf("drift after apply: exit %d: %s\n%s", drift.code, drift.stderr, drift.stdout)
	}
	for _, res := range []result{applied, drift} {
		for _, secret := range []string{domain, email} {
			if strings.Contains(res.stdout, secret) || strings.Contains(res.stderr, secret) {
				t.Errorf("a value of the cluster's Secret was printed:\n%s\n%s", res.stdout, res.stderr)
			}
		}
	}
}
