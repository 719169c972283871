package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/actions/oidctest"
	"github.com/ferry-ci/ferry/internal/cloudauth/cloudtest"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// cloudPlane is a control plane that takes the test clouds' identities
// as an EKS, GKE and AKS API server would: EKS tokens and Google access
// tokens through a token-review webhook, Entra tokens as JWTs of the
// tenant's issuer; each mapped user may write the apps namespace only.
func cloudPlane(t *testing.T, clouds *cloudtest.Clouds) *kubetest.ControlPlane {
	t.Helper()
	plane := kubetest.StartWith(t, kubetest.Options{APIServerArgs: clouds.APIServerArgs(t, t.TempDir())})
	clouds.SetCluster(plane.URL(), plane.CA())
	cs := kubernetes.NewForConfigOrDie(plane.RESTConfig())
	ctx := context.Background()
	for _, ns := range []string{"apps", "ferry-system"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var subjects []rbacv1.Subject
	for _, u := range cloudtest.Users() {
		subjects = append(subjects, rbacv1.Subject{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: u})
	}
	_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-from-clouds"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return plane
}

// cloudRepo is a fleet of three targets, one per cloud cluster, each
// reached by the job's identity through that cloud, the endpoint and CA
// looked up; extra is more of ferry.yaml's clusters.
func cloudRepo(t *testing.T, clouds *cloudtest.Clouds, iss *oidctest.Issuer, extra string) *scenario {
	t.Helper()
	s := newScenario(t)
	s.write("ferry.yaml", `clusters:
  eks-prod:
    auth:
      eks: {cluster: `+cloudtest.EKSCluster+`, region: `+cloudtest.Region+`, roleARN: "`+cloudtest.RoleARN+`"}
  gke-prod:
    auth:
      gke:
        project: `+cloudtest.GKEProject+`
        location: `+cloudtest.GKELocation+`
        cluster: `+cloudtest.GKECluster+`
        workloadIdentityProvider: `+cloudtest.WIFProvider+`
        serviceAccount: `+cloudtest.ServiceAccount+`
  aks-prod:
    auth:
      aks: {tenantID: `+cloudtest.TenantID+`, clientID: `+cloudtest.ClientID+`, subscriptionID: `+cloudtest.Subscription+`, resourceGroup: `+cloudtest.ResourceGroup+`, cluster: `+cloudtest.AKSCluster+`}
`+extra+`targets:
  - {name: on-eks, path: eks, cluster: eks-prod}
  - {name: on-gke, path: gke, cluster: gke-prod}
  - {name: on-aks, path: aks, cluster: aks-prod}
`)
	for _, c := range []string{"eks", "gke", "aks"} {
		s.write(c+"/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-"+c+", namespace: apps}\ndata: {mode: normal}\n")
	}
	s.commit("base")
	ca := filepath.Join(t.TempDir(), "clouds-ca.pem")
	if err := os.WriteFile(ca, clouds.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	s.set(iss.Env())
	s.set(clouds.Env())
	s.set(map[string]string{"SSL_CERT_FILE": ca})
	return s
}

// TestKeylessClouds: with no kubeconfig, ferry apply, drift and diff
// --live reach the clusters of EKS, GKE and AKS (test servers speaking
// the clouds' wire formats, a real API server behind them) by exchanging
// the job's OIDC token; a job of another repository, an EKS token for
// another cluster and an unknown cluster exit 2 naming the cluster, with
// nothing written; no credential reaches the output.
func TestKeylessClouds(t *testing.T) {
	iss := oidctest.Start(t, keylessClaims("acme/fleet"), 5*time.Minute)
	clouds := cloudtest.Start(t, iss)
	plane := cloudPlane(t, clouds)
	cs := kubernetes.NewForConfigOrDie(plane.RESTConfig())
	const rev = "0123456789abcdef0123456789abcdef01234567"
	apply := func(s *scenario, targets ...string) result {
		return s.ferryProcess(append([]string{"apply", "--repo", s.dir, "--revision", rev, "--inventory-namespace", "ferry-system"}, targets...)...)
	}
	written := func(name string) bool {
		_, err := cs.CoreV1().ConfigMaps("apps").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	noCredentials := func(t *testing.T, res result) {
		t.Helper()
		for _, leak := range []string{"eyJ", "ya29.", "k8s-aws-v1.", "secret-", "session-", "X-Amz-Signature"} {
			if strings.Contains(res.stdout+res.stderr, leak) {
				t.Errorf("a credential (%s…) reached the output:\n%s%s", leak, res.stdout, res.stderr)
			}
		}
	}

	for _, c := range []struct {
		name, target, extra string
		repository          string
		want                []string
	}{
		{name: "eks, job of another repository", target: "on-eks", repository: "evil/fleet",
			want: []string{"cluster eks-prod", "AccessDenied", cloudtest.RoleARN, "subject repo:evil/fleet:ref:refs/heads/main"}},
		{name: "gke, job of another repository", target: "on-gke", repository: "evil/fleet",
			want: []string{"cluster gke-prod", "attribute condition", cloudtest.ServiceAccount, "subject repo:evil/fleet"}},
		{name: "aks, job of another repository", target: "on-aks", repository: "evil/fleet",
			want: []string{"cluster aks-prod", "AADSTS70021", cloudtest.ClientID, "subject repo:evil/fleet"}},
		// The server is given, so the token names staging: the API server
		// in front of prod refuses it.
		{name: "eks token for another cluster", target: "on-staging",
			extra: "  eks-staging:\n    server: " + plane.URL() + "\n    certificateAuthorityData: " + yamlQuote(string(plane.CA())) +
				"\n    auth:\n      eks: {cluster: staging, region: " + cloudtest.Region + ", roleARN: \"" + cloudtest.RoleARN + "\"}\n",
			want: []string{"cluster eks-staging", "refused role " + cloudtest.RoleARN + " (EKS cluster staging"}},
		{name: "eks cluster that does not exist", target: "on-missing",
			extra: "  eks-missing:\n    auth:\n      eks: {cluster: missing, region: " + cloudtest.Region + ", roleARN: \"" + cloudtest.RoleARN + "\"}\n",
			want:  []string{"cluster eks-missing", "EKS cluster missing in " + cloudtest.Region, "ResourceNotFoundException"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repository := "acme/fleet"
			if c.repository != "" {
				repository = c.repository
			}
			iss.Set(keylessClaims(repository), 5*time.Minute)
			s := cloudRepo(t, clouds, iss, c.extra)
			if c.extra != "" {
				cluster := strings.TrimSuffix(strings.Fields(c.extra)[0], ":")
				s.replace("ferry.yaml", "targets:\n", "targets:\n  - {name: "+c.target+", path: eks, cluster: "+cluster+"}\n")
				s.commit("another target")
			}
			res := apply(s, c.target)
			if res.code != exitError {
				t.Fatalf("exit %d, want 2:\n%s%s", res.code, res.stdout, res.stderr)
			}
			t.Log(res.stderr)
			for _, w := range c.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			noCredentials(t, res)
			for _, cloud := range []string{"eks", "gke", "aks"} {
				if written("from-" + cloud) {
					t.Errorf("ConfigMap from-%s was written", cloud)
				}
			}
		})
	}

	iss.Set(keylessClaims("acme/fleet"), 5*time.Minute)
	s := cloudRepo(t, clouds, iss, "")
	before := map[string]int{}
	for _, r := range []string{"AssumeRoleWithWebIdentity", "DescribeCluster", "google-sts", "generateAccessToken", "clusters.get", "entra-token", "listClusterUserCredential"} {
		before[r] = clouds.Requests(r)
	}
	res := apply(s)
	if res.code != 0 {
		t.Fatalf("apply: exit %d:\n%s%s", res.code, res.stdout, res.stderr)
	}
	noCredentials(t, res)
	for _, cloud := range []string{"eks", "gke", "aks"} {
		if !written("from-" + cloud) {
			t.Errorf("ConfigMap from-%s was not applied", cloud)
		}
	}
	for r, n := range before {
		if got := clouds.Requests(r) - n; got < 1 {
			t.Errorf("the apply made no %s request", r)
		}
	}
	if got := clouds.Requests("AssumeRoleWithWebIdentity") - before["AssumeRoleWithWebIdentity"]; got != 1 {
		t.Errorf("one apply assumed the role %d times, want once per run", got)
	}
	drift := s.ferryProcess("drift", "--repo", s.dir, "--revision", rev, "--inventory-namespace", "ferry-system", "--fail-on-drift")
	if drift.code != 0 {
		t.Errorf("drift: exit %d:\n%s%s", drift.code, drift.stdout, drift.stderr)
	}
	noCredentials(t, drift)
	for _, cloud := range []string{"eks", "gke", "aks"} {
		s.replace(cloud+"/settings.yaml", "mode: normal", "mode: "+cloud+"-fast")
	}
	head := s.commit("head")
	live := s.ferryProcess("diff", "--repo", s.dir, "--base", "HEAD~1", "--head", head, "--live", "--inventory-namespace", "ferry-system")
	if live.code != 0 {
		t.Fatalf("diff --live: exit %d:\n%s%s", live.code, live.stdout, live.stderr)
	}
	for _, cloud := range []string{"eks", "gke", "aks"} {
		if !strings.Contains(live.stdout, "+  mode: "+cloud+"-fast") {
			t.Errorf("diff --live lacks the %s change:\n%s", cloud, live.stdout)
		}
	}
	noCredentials(t, live)
}
