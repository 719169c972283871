package kube

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// TokenSource gives the bearer tokens of a cluster reached without a
// kubeconfig (the CI job's OIDC identity). Identity names the last
// token's identity for an error, never the token.
type TokenSource interface {
	oauth2.TokenSource
	Identity() string
}

// tokenEarly is how long before its expiry a token is replaced: a request
// never leaves with a token about to expire on the way.
const tokenEarly = 20 * time.Second

// newTokenClient is the client of opts.Server presenting opts.Token's
// tokens, each reused until tokenEarly before it expires. The server is
// asked who it takes the token for first (a SelfSubjectReview), so a
// refused token fails here, naming the identity presented, before
// anything is read or written.
func newTokenClient(opts ClientOptions) (*Client, error) {
	if opts.Token == nil {
		return nil, fmt.Errorf("cluster %s: no credentials", opts.Server)
	}
	ts := oauth2.ReuseTokenSourceWithExpiry(nil, opts.Token, tokenEarly)
	cfg := &rest.Config{
		Host:            opts.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: opts.CAData},
		WrapTransport:   transport.TokenSourceWrapTransport(ts),
	}
	c, err := NewClientFromConfig(cfg, "default", opts.QPS, opts.Burst)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.clientset.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	// Forbidden and NotFound (a server before 1.28) took the token: only
	// a refusal to authenticate it is an error here.
	switch {
	case apierrors.IsUnauthorized(err):
		return nil, fmt.Errorf("the API server %s refused %s: check that the cluster maps that identity (for auth.oidc, the issuer's claim rules and the audience the server accepts; for eks, gke and aks, the cluster's access entries or role bindings)", opts.Server, opts.Token.Identity())
	case err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the API server %s with %s: %w", opts.Server, opts.Token.Identity(), err)
	}
	return c, nil
}
