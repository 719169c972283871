package cloudauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/actions/oidctest"
	"github.com/ferry-ci/ferry/internal/cloudauth"
	"github.com/ferry-ci/ferry/internal/cloudauth/cloudtest"
	"github.com/ferry-ci/ferry/internal/config"
)

// exchange is one run of an exchange against the test clouds: the
// cluster, or the error, and every credential handed to Hide.
type exchange struct {
	cluster cloudauth.Cluster
	err     error
	hidden  []string
}

func connect(t *testing.T, clouds *cloudtest.Clouds, iss *oidctest.Issuer, a config.Access) *exchange {
	t.Helper()
	var mu sync.Mutex
	x := &exchange{}
	hide := func(s ...string) {
		mu.Lock()
		defer mu.Unlock()
		x.hidden = append(x.hidden, s...)
	}
	env := iss.Env()
	o := cloudauth.Options{
		IDTokens: func(audience string) (cloudauth.IDTokens, error) {
			return actions.NewIDTokens(func(k string) string { return env[k] }, audience, hide)
		},
		Hide: hide, HTTPClient: clouds.Client(), Server: a.Server, CAData: a.CAData,
		Endpoints: cloudauth.Endpoints{AWSSTS: clouds.AWSSTS, AWSEKS: clouds.AWSEKS, GoogleSTS: clouds.Google, GoogleIAMCredentials: clouds.Google,
			GoogleContainer: clouds.Google, AzureAuthority: clouds.Entra, AzureResourceManager: clouds.ARM},
	}
	x.cluster, x.err = cloudauth.Connect(context.Background(), "prod", a, o)
	return x
}

func claims(repository string) map[string]any {
	return map[string]any{"sub": "repo:" + repository + ":ref:refs/heads/main", "repository": repository, "ref": "refs/heads/main"}
}

const (
	server = "https://127.0.0.1:6443"
	ca     = "-----BEGIN CERTIFICATE-----\ncluster CA\n-----END CERTIFICATE-----\n"
)

var (
	eks = &config.EKSAuth{Cluster: cloudtest.EKSCluster, Region: cloudtest.Region, RoleARN: cloudtest.RoleARN}
	gke = &config.GKEAuth{Project: cloudtest.GKEProject, Location: cloudtest.GKELocation, Cluster: cloudtest.GKECluster,
		WorkloadIdentityProvider: cloudtest.WIFProvider, ServiceAccount: cloudtest.ServiceAccount}
	aks = &config.AKSAuth{TenantID: cloudtest.TenantID, ClientID: cloudtest.ClientID, SubscriptionID: cloudtest.Subscription,
		ResourceGroup: cloudtest.ResourceGroup, Cluster: cloudtest.AKSCluster}
)

// Each exchange, with the cluster looked up: the endpoint and CA the
// cloud holds, a token the cluster takes for the mapped identity, every
// credential hidden.
func TestExchanges(t *testing.T) {
	iss := oidctest.Start(t, claims(cloudtest.Repository), 5*time.Minute)
	clouds := cloudtest.Start(t, iss)
	clouds.SetCluster(server, []byte(ca))
	noSA := *gke
	noSA.ServiceAccount = ""
	for _, c := range []struct {
		name   string
		access config.Access
		user   string // "" when the webhook does not review it (AKS: the API server's JWT authenticator)
		aud    string // the audience of a JWT token (AKS)
	}{
		{name: "eks", access: config.Access{EKS: eks}, user: cloudtest.EKSUser},
		{name: "gke", access: config.Access{GKE: gke}, user: cloudtest.ServiceAccount},
		{name: "gke without impersonation", access: config.Access{GKE: &noSA},
			user: "principal://iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/github/subject/repo:acme/fleet:ref:refs/heads/main"},
		{name: "aks", access: config.Access{AKS: aks}, aud: cloudtest.AKSServerAppID},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := connect(t, clouds, iss, c.access)
			if x.err != nil {
				t.Fatal(x.err)
			}
			if x.cluster.Server != server || string(x.cluster.CAData) != ca {
				t.Errorf("cluster %q, CA %q; want the cloud's %q", x.cluster.Server, x.cluster.CAData, server)
			}
			tok, err := x.cluster.Tokens.Token()
			if err != nil {
				t.Fatal(err)
			}
			if time.Until(tok.Expiry) < 5*time.Minute {
				t.Errorf("token expires in %v", time.Until(tok.Expiry))
			}
			if c.user != "" {
				user, err := clouds.Review(context.Background(), tok.AccessToken)
				if err != nil || user != c.user {
					t.Errorf("the cluster takes the token for %q (%v), want %q", user, err, c.user)
				}
			}
			if c.aud != "" {
				if got := jwtAudience(t, tok.AccessToken); got != c.aud {
					t.Errorf("token audience %q, want %q", got, c.aud)
				}
			}
			if !contains(x.hidden, tok.AccessToken) {
				t.Error("the cluster token was not hidden")
			}
			if len(x.hidden) < 3 {
				t.Errorf("hidden %d credentials, want the job's token, the cloud's and the cluster's", len(x.hidden))
			}
			if id := x.cluster.Tokens.Identity(); !strings.Contains(id, "subject repo:acme/fleet:ref:refs/heads/main") {
				t.Errorf("identity %q lacks the job's subject", id)
			}
		})
	}
}

// An EKS token is bound to its cluster: one presigned for another
// cluster's name is refused by the cluster, though STS took the role.
func TestEKSTokenIsBoundToItsCluster(t *testing.T) {
	iss := oidctest.Start(t, claims(cloudtest.Repository), 5*time.Minute)
	clouds := cloudtest.Start(t, iss)
	other := *eks
	other.Cluster = "staging"
	x := connect(t, clouds, iss, config.Access{Server: server, CAData: []byte(ca), EKS: &other})
	if x.err != nil {
		t.Fatal(x.err)
	}
	if clouds.Requests("DescribeCluster") != 0 {
		t.Error("a given server was looked up")
	}
	tok, err := x.cluster.Tokens.Token()
	if err != nil {
		t.Fatal(err)
	}
	if user, err := clouds.Review(context.Background(), tok.AccessToken); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("a token for staging was taken by prod as %q (%v)", user, err)
	}
	// The same token with its URL re-signed by nobody: the signature of
	// another request is refused too.
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok.AccessToken, "k8s-aws-v1."))
	forged := "k8s-aws-v1." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "Version=2011-06-15", "Version=2011-06-15&Extra=1", 1)))
	if _, err := clouds.Review(context.Background(), forged); err == nil {
		t.Error("a token whose URL was changed after signing was taken")
	}
}

// Refusals name the cluster, the identity asked for and the job's
// subject, and say what the cloud said.
func TestExchangeRefusals(t *testing.T) {
	iss := oidctest.Start(t, claims("evil/fleet"), 5*time.Minute)
	clouds := cloudtest.Start(t, iss)
	clouds.SetCluster(server, []byte(ca))
	unknown := *eks
	unknown.Cluster = "nope"
	wrongApp := *aks
	wrongApp.ClientID = "11111111-2222-3333-4444-555555555555"
	otherGroup := *aks
	otherGroup.ResourceGroup = "elsewhere"
	for _, c := range []struct {
		name    string
		access  config.Access
		trusted bool
		want    []string
	}{
		{name: "eks, another repository", access: config.Access{EKS: eks},
			want: []string{"cluster prod", "AccessDenied", cloudtest.RoleARN, "subject repo:evil/fleet:ref:refs/heads/main"}},
		{name: "gke, another repository", access: config.Access{GKE: gke},
			want: []string{"cluster prod", "attribute condition", cloudtest.ServiceAccount, "subject repo:evil/fleet"}},
		{name: "aks, another repository", access: config.Access{AKS: aks},
			want: []string{"cluster prod", "AADSTS70021", cloudtest.ClientID, "subject repo:evil/fleet"}},
		{name: "eks, unknown cluster", access: config.Access{EKS: &unknown}, trusted: true,
			want: []string{"cluster prod", "EKS cluster nope", "ResourceNotFoundException", "No cluster found for name: nope"}},
		{name: "aks, unknown application", access: config.Access{AKS: &wrongApp}, trusted: true,
			want: []string{"cluster prod", "AADSTS700016", "11111111-2222-3333-4444-555555555555"}},
		{name: "aks, cluster in another resource group", access: config.Access{AKS: &otherGroup}, trusted: true,
			want: []string{"cluster prod", "AKS cluster prod (resource group elsewhere", "ResourceNotFound"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := claims("evil/fleet")
			if c.trusted {
				cl = claims(cloudtest.Repository)
			}
			iss.Set(cl, 5*time.Minute)
			x := connect(t, clouds, iss, c.access)
			if x.err == nil {
				t.Fatal("connected")
			}
			t.Logf("%q", x.err)
			for _, w := range c.want {
				if !strings.Contains(x.err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, x.err)
				}
			}
			for _, h := range x.hidden {
				if strings.Contains(x.err.Error(), h) {
					t.Errorf("the error holds a credential:\n%v", x.err)
				}
			}
		})
	}
}

// No id-token permission: the exchange says what to add.
func TestExchangeWithoutIDToken(t *testing.T) {
	x, err := cloudauth.Connect(context.Background(), "prod", config.Access{EKS: eks}, cloudauth.Options{
		IDTokens: func(audience string) (cloudauth.IDTokens, error) {
			return actions.NewIDTokens(func(string) string { return "" }, audience, nil)
		},
	})
	if err == nil || !strings.Contains(err.Error(), "cluster prod") || !strings.Contains(err.Error(), "id-token: write") {
		t.Errorf("got %+v, %v", x, err)
	}
}

func jwtAudience(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Aud any `json:"aud"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	switch a := c.Aud.(type) {
	case string:
		return a
	case []any:
		if len(a) == 1 {
			s, _ := a[0].(string)
			return s
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Credentials that expire are asked for again: with 2-second cloud
// credentials, a token asked for after they expired is a new one, made
// from a new exchange of the job's token, and the cluster takes it.
func TestTokensAreRenewed(t *testing.T) {
	iss := oidctest.Start(t, claims(cloudtest.Repository), 5*time.Minute)
	clouds := cloudtest.Start(t, iss)
	clouds.SetCluster(server, []byte(ca))
	clouds.SetLifetime(2 * time.Second)
	for _, c := range []struct {
		name     string
		access   config.Access
		exchange string
		review   bool
	}{
		{name: "eks", access: config.Access{EKS: eks}, exchange: "AssumeRoleWithWebIdentity", review: true},
		{name: "gke", access: config.Access{GKE: gke}, exchange: "google-sts", review: true},
		{name: "aks", access: config.Access{AKS: aks}, exchange: "entra-token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := connect(t, clouds, iss, c.access)
			if x.err != nil {
				t.Fatal(x.err)
			}
			first, err := x.cluster.Tokens.Token()
			if err != nil {
				t.Fatal(err)
			}
			if time.Until(first.Expiry) > 2*time.Second {
				t.Errorf("the token is used until %v, past its credentials' 2 seconds", time.Until(first.Expiry))
			}
			exchanges := clouds.Requests(c.exchange)
			time.Sleep(time.Until(first.Expiry) + 500*time.Millisecond)
			second, err := x.cluster.Tokens.Token()
			if err != nil {
				t.Fatal(err)
			}
			if second.AccessToken == first.AccessToken || clouds.Requests(c.exchange) == exchanges {
				t.Errorf("no new token (%d %s requests before, %d after)", exchanges, c.exchange, clouds.Requests(c.exchange))
			}
			if c.review {
				if _, err := clouds.Review(context.Background(), second.AccessToken); err != nil {
					t.Errorf("the cluster refused the renewed token: %v", err)
				}
			}
		})
	}
}
