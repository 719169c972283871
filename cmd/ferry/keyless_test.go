package main

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/actions/oidctest"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// keylessClaims are those of a job of acme/fleet on main, as GitHub
// mints them.
func keylessClaims(repository string) map[string]any {
	return map[string]any{
		"sub":        "repo:" + repository + ":ref:refs/heads/main",
		"repository": repository,
		"ref":        "refs/heads/main",
		"workflow":   "deploy",
	}
}

// keylessPlane is a control plane whose API server trusts iss for
// audience prod-cluster, for tokens of acme/fleet on main only (claim
// rules on repository and ref), the mapped user bound to cluster-admin.
func keylessPlane(t *testing.T, iss *oidctest.Issuer) *kubetest.ControlPlane {
	t.Helper()
	plane := kubetest.StartWith(t, kubetest.Options{APIServerArgs: iss.APIServerArgs(t, t.TempDir(), "prod-cluster", "acme/fleet", "refs/heads/main")})
	cs := kubernetes.NewForConfigOrDie(plane.RESTConfig())
	_, err := cs.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-from-ci"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "github:repo:acme/fleet:ref:refs/heads/main"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"apps", "ferry-system"} {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return plane
}

// keylessRepo is a fleet whose cluster prod is reached by server and the
// job's OIDC identity for audience.
func keylessRepo(t *testing.T, plane *kubetest.ControlPlane, audience string) *scenario {
	t.Helper()
	s := newScenario(t)
	s.write("ferry.yaml", `clusters:
  prod:
    server: `+plane.URL()+`
    certificateAuthorityData: `+yamlQuote(string(plane.CA()))+`
    auth:
      oidc: {audience: `+audience+`}
targets:
  - {name: app, path: app, cluster: prod}
`)
	s.write("app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {mode: normal}\n")
	s.commit("base")
	return s
}

// TestKeylessApply: with no kubeconfig, ferry apply, drift and diff --live
// reach a real API server as the job's OIDC identity; a token of another
// repository, for another audience or expired, and a job without
// id-token: write each exit 2 naming the cluster, with nothing written;
// an apply that outlives its 30-second token asks for new ones.
func TestKeylessApply(t *testing.T) {
	iss := oidctest.Start(t, keylessClaims("acme/fleet"), 5*time.Minute)
	plane := keylessPlane(t, iss)
	cs := kubernetes.NewForConfigOrDie(plane.RESTConfig())
	const rev = "0123456789abcdef0123456789abcdef01234567"
	apply := func(s *scenario, extra ...string) result {
		return s.ferry(append([]string{"apply", "--repo", s.dir, "--revision", rev, "--inventory-namespace", "ferry-system"}, extra...)...)
	}
	nothingWritten := func(t *testing.T) {
		t.Helper()
		if _, err := cs.CoreV1().ConfigMaps("apps").Get(context.Background(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap was written (or cannot be read: %v)", err)
		}
	}

	for _, c := range []struct {
		name     string
		claims   map[string]any
		lifetime time.Duration
		audience string
		noToken  bool
		want     []string
	}{
		{name: "another repository", claims: keylessClaims("evil/fleet"), want: []string{"cluster prod", "audience prod-cluster", "subject repo:evil/fleet:ref:refs/heads/main"}},
		{name: "wrong audience", audience: "staging-cluster", want: []string{"cluster prod", "audience staging-cluster", "subject repo:acme/fleet:ref:refs/heads/main"}},
		{name: "expired", lifetime: -2 * time.Minute, want: []string{"cluster prod", "audience prod-cluster"}},
		{name: "no id-token permission", noToken: true, want: []string{"cluster prod", "id-token: write"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			claims, lifetime, audience := keylessClaims("acme/fleet"), 5*time.Minute, "prod-cluster"
			if c.claims != nil {
				claims = c.claims
			}
			if c.lifetime != 0 {
				lifetime = c.lifetime
			}
			if c.audience != "" {
				audience = c.audience
			}
			iss.Set(claims, lifetime)
			s := keylessRepo(t, plane, audience)
			if !c.noToken {
				s.set(iss.Env())
			}
			res := apply(s)
			if res.code != exitError {
				t.Fatalf("exit %d, want 2:\n%s%s", res.code, res.stdout, res.stderr)
			}
			t.Log(res.stderr)
			for _, w := range c.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			nothingWritten(t)
		})
	}

	iss.Set(keylessClaims("acme/fleet"), 5*time.Minute)
	s := keylessRepo(t, plane, "prod-cluster")
	s.set(iss.Env())
	tokens := iss.Requests()
	res := apply(s)
	if res.code != 0 {
		t.Fatalf("apply: exit %d:\n%s", res.code, res.stderr)
	}
	if _, err := cs.CoreV1().ConfigMaps("apps").Get(context.Background(), "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("applied ConfigMap: %v", err)
	}
	if n := iss.Requests() - tokens; n != 1 {
		t.Errorf("one apply asked for %d tokens, want 1 (a 5-minute token serves the whole run)", n)
	}
	for _, out := range []string{res.stdout, res.stderr} {
		if strings.Contains(out, "eyJ") {
			t.Errorf("a token reached the output:\n%s", out)
		}
	}
	if res := s.ferry("drift", "--repo", s.dir, "--revision", rev, "--inventory-namespace", "ferry-system", "--fail-on-drift"); res.code != 0 {
		t.Errorf("drift: exit %d:\n%s%s", res.code, res.stdout, res.stderr)
	}
	s.replace("app/settings.yaml", "mode: normal", "mode: fast")
	head := s.commit("head")
	live := s.ferry("diff", "--repo", s.dir, "--base", "HEAD~1", "--head", head, "--live", "--inventory-namespace", "ferry-system")
	if live.code != 0 || !strings.Contains(live.stdout, "+  mode: fast") {
		t.Errorf("diff --live: exit %d:\n%s%s", live.code, live.stdout, live.stderr)
	}
	// A pull request cannot move the cluster's server or audience: the
	// live comparison still reaches the base's, as the base's identity.
	s.replace("ferry.yaml", plane.URL(), "https://127.0.0.1:1")
	s.replace("ferry.yaml", "audience: prod-cluster", "audience: other-cluster")
	moved := s.commit("point prod elsewhere")
	live = s.ferry("diff", "--repo", s.dir, "--base", "HEAD~2", "--head", moved, "--live", "--inventory-namespace", "ferry-system")
	if live.code != 0 || !strings.Contains(live.stdout, "+  mode: fast") || !strings.Contains(live.stderr+live.stdout, "ferry.yaml changes clusters: the diff uses the base's") {
		t.Errorf("diff --live of a head that moves the cluster: exit %d:\n%s%s", live.code, live.stdout, live.stderr)
	}
	s.replace("ferry.yaml", "https://127.0.0.1:1", plane.URL())
	s.replace("ferry.yaml", "audience: other-cluster", "audience: prod-cluster")

	// A 30-second token and an apply that waits 35 seconds for another
	// run's Lease: the requests after the wait carry new tokens.
	iss.Set(keylessClaims("acme/fleet"), 30*time.Second)
	leases := cs.CoordinationV1().Leases("ferry-system")
	lease, err := leases.Get(context.Background(), kube.ParentName("app")+"-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder, seconds, now := "another-run", int32(35), metav1.NewMicroTime(time.Now())
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now}
	if _, err := leases.Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tokens = iss.Requests()
	begin := time.Now()
	res = apply(s, "--lock-timeout", "90s")
	if res.code != 0 {
		t.Fatalf("apply past its token's lifetime: exit %d:\n%s", res.code, res.stderr)
	}
	if took, n := time.Since(begin), iss.Requests()-tokens; took < 30*time.Second || n < 2 {
		t.Errorf("the apply took %v and asked for %d tokens, want over 30 s and 2 tokens or more", took, n)
	}
}
