package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// ClusterAuth is the identity ferry presents to a cluster reached without
// a kubeconfig: the CI job's short-lived OIDC token, directly or
// exchanged for a managed cluster's credentials, so that no long-lived
// kubeconfig secret is needed. Exactly one is set.
type ClusterAuth struct {
	// OIDC sends the job's ID token for Audience as a bearer token, for
	// an API server that trusts the forge's issuer (structured
	// authentication, AuthenticationConfiguration).
	OIDC *OIDCAuth `json:"oidc,omitempty" yaml:"oidc,omitempty"`
	// EKS, GKE and AKS exchange the job's token for the cloud's
	// credentials of the cluster (see internal/cloudauth).
	EKS *EKSAuth `json:"eks,omitempty" yaml:"eks,omitempty"`
	GKE *GKEAuth `json:"gke,omitempty" yaml:"gke,omitempty"`
	AKS *AKSAuth `json:"aks,omitempty" yaml:"aks,omitempty"`
}

// OIDCAuth is auth.oidc.
type OIDCAuth struct {
	// Audience is the aud claim the job's token is requested for, the
	// audience the API server's issuer configuration accepts.
	Audience string `json:"audience" yaml:"audience"`
}

// EKSAuth is auth.eks: assume RoleARN with the job's token
// (AssumeRoleWithWebIdentity) and present an EKS token for Cluster; the
// endpoint and CA come from DescribeCluster unless server is given.
type EKSAuth struct {
	Cluster string `json:"cluster" yaml:"cluster"`
	Region  string `json:"region" yaml:"region"`
	RoleARN string `json:"roleARN" yaml:"roleARN"`
	// Audience of the job's token; default sts.amazonaws.com, as AWS's
	// GitHub OIDC provider expects.
	Audience string `json:"audience,omitempty" yaml:"audience,omitempty"`
}

// GKEAuth is auth.gke: exchange the job's token at Google's STS for the
// workload identity provider, impersonate ServiceAccount when set, and
// present the access token; the endpoint and CA come from the cluster
// unless server is given.
type GKEAuth struct {
	Project  string `json:"project" yaml:"project"`
	Location string `json:"location" yaml:"location"`
	Cluster  string `json:"cluster" yaml:"cluster"`
	// WorkloadIdentityProvider is
	// projects/NUMBER/locations/global/workloadIdentityPools/POOL/providers/PROVIDER.
	WorkloadIdentityProvider string `json:"workloadIdentityProvider" yaml:"workloadIdentityProvider"`
	ServiceAccount           string `json:"serviceAccount,omitempty" yaml:"serviceAccount,omitempty"`
	// Audience of the job's token; default
	// https://iam.googleapis.com/ + WorkloadIdentityProvider.
	Audience string `json:"audience,omitempty" yaml:"audience,omitempty"`
}

// AKSAuth is auth.aks: the job's token as a federated client assertion of
// the Entra application ClientID, for the AKS server application's scope;
// the endpoint and CA come from the managed cluster's user credentials
// unless server is given.
type AKSAuth struct {
	TenantID       string `json:"tenantID" yaml:"tenantID"`
	ClientID       string `json:"clientID" yaml:"clientID"`
	SubscriptionID string `json:"subscriptionID,omitempty" yaml:"subscriptionID,omitempty"`
	ResourceGroup  string `json:"resourceGroup,omitempty" yaml:"resourceGroup,omitempty"`
	Cluster        string `json:"cluster,omitempty" yaml:"cluster,omitempty"`
	// Audience of the job's token; default api://AzureADTokenExchange,
	// as Entra's federated credentials expect.
	Audience string `json:"audience,omitempty" yaml:"audience,omitempty"`
}

// Access is how a target reaches its cluster without a kubeconfig: the
// cluster's server and CA (for a managed cluster, looked up when not
// given) and the identity to present. Zero when the cluster is reached by
// a kubeconfig.
type Access struct {
	Server string
	// CAFile is the CA's PEM file, absolute; CAData the PEM itself.
	CAFile string
	CAData []byte
	// Audience is the OIDC audience of the job's token (auth.oidc).
	Audience string
	// EKS, GKE or AKS is the managed cluster's exchange, at most one.
	EKS *EKSAuth
	GKE *GKEAuth
	AKS *AKSAuth
}

// Keyless reports whether the access is the job's own identity.
func (a Access) Keyless() bool { return a.Server != "" || a.EKS != nil || a.GKE != nil || a.AKS != nil }

// access is the cluster's Access, its CA file resolved under root.
func (c ClusterConfig) access(root string) Access {
	if c.Server == "" && c.Auth == nil {
		return Access{}
	}
	a := Access{Server: c.Server, CAData: []byte(c.CertificateAuthorityData)}
	if c.CertificateAuthority != "" {
		a.CAFile = filepath.Join(root, filepath.FromSlash(c.CertificateAuthority))
	}
	if au := c.Auth; au != nil {
		a.EKS, a.GKE, a.AKS = au.EKS, au.GKE, au.AKS
		if au.OIDC != nil {
			a.Audience = au.OIDC.Audience
		}
	}
	return a
}

// checkAccess checks server, certificateAuthority[Data] and auth.
func (c ClusterConfig) checkAccess() error {
	a := c.Auth
	if c.Server == "" && a == nil {
		if c.CertificateAuthority != "" || c.CertificateAuthorityData != "" {
			return errors.New("certificateAuthority needs server: the API server's https address")
		}
		return nil
	}
	if c.Kubeconfig != "" || c.KubeconfigEnv != "" || c.Context != "" {
		return errors.New("server and auth exclude a kubeconfig (kubeconfig, kubeconfigEnv, context): the cluster's auth is the job's identity")
	}
	if c.Server != "" {
		u, err := url.Parse(c.Server)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return fmt.Errorf("server %q is not an https://host[:port] address", c.Server)
		}
	}
	if c.CertificateAuthority != "" && c.CertificateAuthorityData != "" {
		return errors.New("certificateAuthority and certificateAuthorityData exclude each other")
	}
	if ca := c.CertificateAuthority; ca != "" && (filepath.IsAbs(ca) || !filepath.IsLocal(filepath.FromSlash(ca))) {
		return fmt.Errorf("certificateAuthority %q: a path inside the repository", ca)
	}
	if a == nil {
		return errors.New("server needs auth: oidc: {audience: ...} (the job's OIDC identity), or eks, gke or aks")
	}
	n := 0
	for _, set := range []bool{a.OIDC != nil, a.EKS != nil, a.GKE != nil, a.AKS != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("auth: want exactly one of oidc, eks, gke and aks")
	}
	if (c.CertificateAuthority != "" || c.CertificateAuthorityData != "") && c.Server == "" {
		return errors.New("certificateAuthority needs server: a managed cluster's CA is looked up with its endpoint")
	}
	switch {
	case a.OIDC != nil:
		if c.Server == "" {
			return errors.New("auth.oidc needs server: the API server's https address")
		}
		if a.OIDC.Audience == "" {
			return errors.New("auth.oidc.audience is required: the audience the API server accepts")
		}
	case a.EKS != nil:
		return a.EKS.check()
	case a.GKE != nil:
		return a.GKE.check()
	case a.AKS != nil:
		return a.AKS.check(c.Server != "")
	}
	return nil
}

// required names the settings of auth.<kind> that are empty.
func required(kind string, fields ...string) error {
	var missing []string
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			missing = append(missing, fields[i])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("auth.%s needs %s", kind, strings.Join(missing, ", "))
}

var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$`)

func (e *EKSAuth) check() error {
	if err := required("eks", "cluster", e.Cluster, "region", e.Region, "roleARN", e.RoleARN); err != nil {
		return err
	}
	if !roleARN.MatchString(e.RoleARN) {
		return fmt.Errorf("auth.eks.roleARN %q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", e.RoleARN)
	}
	return nil
}

var wifProvider = regexp.MustCompile(`^projects/\d+/locations/global/workloadIdentityPools/[a-z0-9-]+/providers/[a-z0-9-]+$`)

func (g *GKEAuth) check() error {
	if err := required("gke", "project", g.Project, "location", g.Location, "cluster", g.Cluster, "workloadIdentityProvider", g.WorkloadIdentityProvider); err != nil {
		return err
	}
	if !wifProvider.MatchString(g.WorkloadIdentityProvider) {
		return fmt.Errorf("auth.gke.workloadIdentityProvider %q is not projects/NUMBER/locations/global/workloadIdentityPools/POOL/providers/PROVIDER", g.WorkloadIdentityProvider)
	}
	return nil
}

func (a *AKSAuth) check(hasServer bool) error {
	if err := required("aks", "tenantID", a.TenantID, "clientID", a.ClientID); err != nil {
		return err
	}
	if hasServer {
		return nil
	}
	if err := required("aks", "subscriptionID", a.SubscriptionID, "resourceGroup", a.ResourceGroup, "cluster", a.Cluster); err != nil {
		return fmt.Errorf("%w (or give server and certificateAuthority)", err)
	}
	return nil
}
