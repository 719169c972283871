// Package cloudtest stands in for the clouds' identity and cluster
// services on 127.0.0.1, speaking their documented wire formats: AWS STS
// (AssumeRoleWithWebIdentity, GetCallerIdentity checked by SigV4) and EKS
// DescribeCluster; Google STS token exchange, IAM credentials
// generateAccessToken and GKE clusters.get; Entra ID's token endpoint and
// ARM's listClusterUserCredential. Each trusts the test OIDC issuer as the
// cloud trusts GitHub's, with a trust rule on the job's repository. For
// the API server it serves a token-review webhook that accepts EKS tokens
// (checked with STS, as aws-iam-authenticator does) and Google access
// tokens, and an Entra issuer its structured authentication can trust.
package cloudtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/internal/actions/oidctest"
)

// The identities the clouds know.
const (
	Repository = "acme/fleet"
	// AWS: the role the job may assume, the EKS cluster and its user.
	AWSAccount = "111122223333"
	RoleARN    = "arn:aws:iam::" + AWSAccount + ":role/deploy"
	Region     = "eu-west-1"
	EKSCluster = "prod"
	EKSUser    = "eks:deploy"
	// Google: the workload identity provider, the service account the
	// job may impersonate, and the cluster.
	WIFProvider    = "projects/123456/locations/global/workloadIdentityPools/github/providers/github"
	ServiceAccount = "deploy@fleet.iam.gserviceaccount.com"
	GKEProject     = "fleet"
	GKELocation    = "europe-west1"
	GKECluster     = "prod"
	// Azure: the tenant, the application with a federated credential for
	// the job, its service principal's object ID, and the cluster.
	TenantID       = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	ClientID       = "0f3c2a51-4c1e-4b8a-9a51-6d2b8c1e7f00"
	ObjectID       = "5e1d7c3a-2b4f-4c6d-8e9f-0a1b2c3d4e5f"
	Subscription   = "00000000-1111-2222-3333-444444444444"
	ResourceGroup  = "fleet"
	AKSCluster     = "prod"
	AKSServerAppID = "6dae42f8-4368-4678-94ff-3960e28e3630"
)

// Clouds is the running set of services.
type Clouds struct {
	// AWSSTS, AWSEKS, Google (STS, IAM credentials and GKE on one
	// host), Entra (the authority host) and ARM are base URLs.
	AWSSTS, AWSEKS, Google, Entra, ARM string
	// CA is the PEM every service's certificate chains to.
	CA []byte

	issuer *oidctest.Issuer
	aws    *awsCloud
	google *googleCloud
	azure  *azureCloud
	hook   *httptest.Server

	mu       sync.Mutex
	server   string
	serverCA []byte
	requests map[string]int
	lifetime time.Duration
}

// Start starts the services, trusting iss; stopped when the test ends.
func Start(t *testing.T, iss *oidctest.Issuer) *Clouds {
	t.Helper()
	c := &Clouds{issuer: iss, requests: map[string]int{}, lifetime: time.Hour}
	c.aws = newAWS(t, c)
	c.google = newGoogle(t, c)
	c.azure = newAzure(t, c)
	c.hook = httptest.NewTLSServer(http.HandlerFunc(c.review))
	t.Cleanup(c.hook.Close)
	c.AWSSTS, c.AWSEKS, c.Google, c.Entra, c.ARM = c.aws.sts.URL, c.aws.eks.URL, c.google.srv.URL, c.azure.entra.URL, c.azure.arm.URL
	c.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.hook.Certificate().Raw})
	return c
}

// SetLifetime is how long the credentials issued from now on live (an
// hour by default): AWS sessions, Google and Entra access tokens.
func (c *Clouds) SetLifetime(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lifetime = d
}

func (c *Clouds) expiry() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.lifetime)
}

// SetCluster is the API server every cloud's lookup returns.
func (c *Clouds) SetCluster(server string, ca []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.server, c.serverCA = server, ca
}

func (c *Clouds) cluster() (string, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server, c.serverCA
}

// Requests counts the requests a service answered, by name
// (AssumeRoleWithWebIdentity, DescribeCluster, GetCallerIdentity,
// google-sts, generateAccessToken, clusters.get, entra-token,
// listClusterUserCredential).
func (c *Clouds) Requests(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[name]
}

func (c *Clouds) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[name]++
}

// Env are the variables that point ferry at the services instead of the
// clouds, under the names the clouds' tools read.
func (c *Clouds) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_STS":                           c.AWSSTS,
		"AWS_ENDPOINT_URL_EKS":                           c.AWSEKS,
		"CLOUDSDK_API_ENDPOINT_OVERRIDES_STS":            c.Google,
		"CLOUDSDK_API_ENDPOINT_OVERRIDES_IAMCREDENTIALS": c.Google,
		"CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER":      c.Google,
		"AZURE_AUTHORITY_HOST":                           c.Entra,
		"AZURE_RESOURCE_MANAGER_ENDPOINT":                c.ARM,
	}
}

// APIServerArgs are the kube-apiserver flags that make it take the
// clouds' tokens: the token-review webhook (EKS and Google) and the
// Entra issuer (AKS), whose files are written under dir.
func (c *Clouds) APIServerArgs(t *testing.T, dir string) []string {
	t.Helper()
	ca := base64.StdEncoding.EncodeToString(c.CA)
	hook := `apiVersion: v1
kind: Config
clusters:
  - name: cloudtest
    cluster: {server: "` + c.hook.URL + `/review", certificate-authority-data: ` + ca + `}
users:
  - name: apiserver
    user: {}
contexts:
  - name: webhook
    context: {cluster: cloudtest, user: apiserver}
current-context: webhook
`
	indented := "        " + strings.ReplaceAll(strings.TrimSpace(string(c.CA)), "\n", "\n        ")
	authn := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
  - issuer:
      url: ` + c.azure.issuer() + `
      audiences: [` + AKSServerAppID + `]
      certificateAuthority: |
` + indented + `
    claimMappings:
      username:
        expression: '"azure:" + claims.oid'
`
	hookFile, authnFile := filepath.Join(dir, "token-webhook.yaml"), filepath.Join(dir, "authentication.yaml")
	for f, s := range map[string]string{hookFile: hook, authnFile: authn} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--authentication-token-webhook-config-file=" + hookFile, "--authentication-token-webhook-version=v1",
		"--authentication-token-webhook-cache-ttl=0s", "--authentication-config=" + authnFile}
}

// Users are the usernames the API server maps the clouds' identities to,
// for RBAC: the EKS role, the Google service account, the Entra
// application's service principal.
func Users() []string { return []string{EKSUser, ServiceAccount, "azure:" + ObjectID} }

// review answers the API server's TokenReviews: EKS tokens and the
// Google access tokens the services issued.
func (c *Clouds) review(w http.ResponseWriter, r *http.Request) {
	var tr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Token string `json:"token"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	status := map[string]any{"authenticated": false}
	user, err := c.identify(r, tr.Spec.Token)
	if err != nil {
		status["error"] = err.Error()
	} else {
		status = map[string]any{"authenticated": true, "user": map[string]any{"username": user}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiVersion": tr.APIVersion, "kind": tr.Kind, "status": status})
}

func (c *Clouds) identify(r *http.Request, token string) (string, error) {
	if rest, ok := strings.CutPrefix(token, "k8s-aws-v1."); ok {
		return c.aws.identify(r.Context(), rest)
	}
	if user, ok := c.google.user(token); ok {
		return user, nil
	}
	return "", fmt.Errorf("unknown token")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// secret is a random token with prefix.
func secret(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// trusted checks the job's token for audience and the repository rule.
func (c *Clouds) trusted(token, audience string) (map[string]any, error) {
	claims, err := c.issuer.Verify(token, audience)
	if err != nil {
		return nil, err
	}
	if claims["repository"] != Repository {
		return nil, fmt.Errorf("repository %v is not trusted", claims["repository"])
	}
	return claims, nil
}

// Review is the webhook's answer for token: the user the API server
// would take it for.
func (c *Clouds) Review(ctx context.Context, token string) (string, error) {
	req := httptest.NewRequest(http.MethodPost, "/review", nil).WithContext(ctx)
	return c.identify(req, token)
}

// Client trusts the services' certificate.
func (c *Clouds) Client() *http.Client { return c.hook.Client() }
