package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
)

// ClusterAuth is the identity ferry presents to a cluster reached by
// server (ClusterConfig.Server): the CI job's short-lived OIDC token, so
// that no long-lived kubeconfig secret is needed. Exactly one is set.
type ClusterAuth struct {
	// OIDC sends the job's ID token for Audience as a bearer token, for
	// an API server that trusts the forge's issuer (structured
	// authentication, AuthenticationConfiguration).
	OIDC *OIDCAuth `json:"oidc,omitempty" yaml:"oidc,omitempty"`
	// EKS, GKE and AKS exchange the job's token for cloud credentials:
	// declared so that ferry can say it does not do them yet.
	EKS any `json:"eks,omitempty" yaml:"eks,omitempty"`
	GKE any `json:"gke,omitempty" yaml:"gke,omitempty"`
	AKS any `json:"aks,omitempty" yaml:"aks,omitempty"`
}

// OIDCAuth is auth.oidc.
type OIDCAuth struct {
	// Audience is the aud claim the job's token is requested for, the
	// audience the API server's issuer configuration accepts.
	Audience string `json:"audience" yaml:"audience"`
}

// Access is how a target reaches its cluster without a kubeconfig: the
// cluster's server, its CA and the identity to present. Zero when the
// cluster is reached by a kubeconfig.
type Access struct {
	Server string
	// CAFile is the CA's PEM file, absolute; CAData the PEM itself.
	CAFile string
	CAData []byte
	// Audience is the OIDC audience of the job's token.
	Audience string
}

// Keyless reports whether the access is the job's own identity.
func (a Access) Keyless() bool { return a.Server != "" }

// access is the cluster's Access, its CA file resolved under root.
func (c ClusterConfig) access(root string) Access {
	if c.Server == "" {
		return Access{}
	}
	a := Access{Server: c.Server, CAData: []byte(c.CertificateAuthorityData)}
	if c.CertificateAuthority != "" {
		a.CAFile = filepath.Join(root, filepath.FromSlash(c.CertificateAuthority))
	}
	if c.Auth != nil && c.Auth.OIDC != nil {
		a.Audience = c.Auth.OIDC.Audience
	}
	return a
}

// checkAccess checks server, certificateAuthority[Data] and auth.
func (c ClusterConfig) checkAccess() error {
	if c.Server == "" {
		if c.Auth != nil || c.CertificateAuthority != "" || c.CertificateAuthorityData != "" {
			return errors.New("auth and certificateAuthority need server: the API server's https address")
		}
		return nil
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("server %q is not an https://host[:port] address", c.Server)
	}
	if c.Kubeconfig != "" || c.KubeconfigEnv != "" || c.Context != "" {
		return errors.New("server and a kubeconfig (kubeconfig, kubeconfigEnv, context) exclude each other: the server's auth is the job's identity")
	}
	if c.CertificateAuthority != "" && c.CertificateAuthorityData != "" {
		return errors.New("certificateAuthority and certificateAuthorityData exclude each other")
	}
	if ca := c.CertificateAuthority; ca != "" && (filepath.IsAbs(ca) || !filepath.IsLocal(filepath.FromSlash(ca))) {
		return fmt.Errorf("certificateAuthority %q: a path inside the repository", ca)
	}
	a := c.Auth
	switch {
	case a == nil:
		return errors.New("server needs auth: oidc: {audience: ...} (the job's OIDC identity)")
	case a.EKS != nil || a.GKE != nil || a.AKS != nil:
		return errors.New("auth: eks, gke and aks are not supported by this ferry yet: use auth.oidc with an API server that trusts the forge's OIDC issuer, or a kubeconfig")
	case a.OIDC == nil:
		return errors.New("auth: want oidc: {audience: ...}")
	case a.OIDC.Audience == "":
		return errors.New("auth.oidc.audience is required: the audience the API server accepts")
	}
	return nil
}
