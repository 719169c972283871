// Package cloudauth exchanges the CI job's OIDC identity for the
// credentials of a managed Kubernetes cluster (EKS, GKE, AKS), as the
// clouds' kubeconfig exec plugins do, which ferry's scratch image lacks:
// it returns the cluster's API server, its CA, and bearer tokens that are
// asked for again as they expire.
package cloudauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/ferry-ci/ferry/internal/config"
)

// IDTokens gives the job's OIDC ID tokens for one audience (see
// actions.IDTokens); Identity names the last one's audience and subject.
type IDTokens interface {
	oauth2.TokenSource
	Identity() string
}

// Options are what an exchange needs besides the cluster's settings.
type Options struct {
	// IDTokens gives the job's ID tokens for an audience.
	IDTokens func(audience string) (IDTokens, error)
	// Hide is handed every credential as it is received, before anything
	// could print it.
	Hide func(...string)
	// Endpoints replace the clouds' public endpoints.
	Endpoints Endpoints
	// HTTPClient makes the requests; nil means http.DefaultClient's
	// transport with a 30-second timeout.
	HTTPClient *http.Client
	// Server and CAData, when Server is set, are the cluster's endpoint
	// as ferry.yaml gives it: the cloud is not asked.
	Server string
	CAData []byte
}

// Endpoints replace the clouds' public endpoints, for a sovereign or
// private cloud, a VPC endpoint, or test servers. Each is a base URL; ""
// keeps the public one. The step's environment sets them, under the names
// the clouds' own tools read (see runenv).
type Endpoints struct {
	// AWSSTS and AWSEKS: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL_EKS.
	AWSSTS, AWSEKS string
	// GoogleSTS, GoogleIAMCredentials, GoogleContainer:
	// CLOUDSDK_API_ENDPOINT_OVERRIDES_{STS,IAMCREDENTIALS,CONTAINER}.
	GoogleSTS, GoogleIAMCredentials, GoogleContainer string
	// AzureAuthority (AZURE_AUTHORITY_HOST) is Entra's login host;
	// AzureResourceManager (AZURE_RESOURCE_MANAGER_ENDPOINT) is ARM's.
	AzureAuthority, AzureResourceManager string
}

// Cluster is a managed cluster as the job's identity reaches it.
type Cluster struct {
	Server string
	CAData []byte
	// Tokens are the bearer tokens for the API server (a kube.TokenSource).
	Tokens Tokens
}

// Tokens are a cluster's bearer tokens; Identity names who they are for
// in an error, never a token.
type Tokens interface {
	oauth2.TokenSource
	Identity() string
}

// Connect makes the exchange a's auth names for the cluster called name.
func Connect(ctx context.Context, name string, a config.Access, o Options) (Cluster, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Hide == nil {
		o.Hide = func(...string) {}
	}
	var (
		c   Cluster
		err error
	)
	switch {
	case a.EKS != nil:
		c, err = eksCluster(ctx, a.EKS, o)
	case a.GKE != nil:
		c, err = gkeCluster(ctx, a.GKE, o)
	case a.AKS != nil:
		c, err = aksCluster(ctx, a.AKS, o)
	default:
		return Cluster{}, fmt.Errorf("cluster %s: no cloud exchange configured", name)
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster %s: %w", name, err)
	}
	return c, nil
}

// endpointOr is override with path joined, else the public URL.
func endpointOr(override, public, path string) string {
	base := public
	if override != "" {
		base = override
	}
	return strings.TrimSuffix(base, "/") + path
}

// tokens are a cluster's bearer tokens made by fetch, each hidden before
// it is handed out; identity says whose they are.
type tokens struct {
	fetch    func(ctx context.Context) (*oauth2.Token, error)
	hide     func(...string)
	identity func() string
}

func (t *tokens) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok, err := t.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.identity(), err)
	}
	t.hide(tok.AccessToken)
	return tok, nil
}

func (t *tokens) Identity() string { return t.identity() }

// subject remembers the subject of the job's token an exchange presented,
// for errors.
type subject struct{ ids IDTokens }

func (s *subject) jobToken(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tok, err := s.ids.Token()
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

func (s *subject) String() string { return s.ids.Identity() }

// errNoEndpoint says a lookup answered without the cluster's endpoint.
var errNoEndpoint = errors.New("the answer has no endpoint or CA")
