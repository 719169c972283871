package cloudauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"golang.org/x/oauth2"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-ci/ferry/internal/config"
)

// aksServerScope is the scope of the AKS Entra server application, the
// audience every Entra-integrated AKS API server accepts.
const aksServerScope = "6dae42f8-4368-4678-94ff-3960e28e3630/.default"

// armScope is Azure Resource Manager's.
const armScope = "https://management.azure.com/.default"

// aksAPIVersion is the managedClusters API version ferry asks.
const aksAPIVersion = "2024-09-01"

// aksCluster uses the job's token as the federated client assertion of
// the Entra application a.ClientID (as azure/login and kubelogin's
// workloadidentity mode do), for the AKS server application's scope; the
// endpoint and CA come from the managed cluster's user credentials
// (listClusterUserCredential) unless o gives its server.
func aksCluster(ctx context.Context, a *config.AKSAuth, o Options) (Cluster, error) {
	audience := a.Audience
	if audience == "" {
		audience = "api://AzureADTokenExchange"
	}
	ids, err := o.IDTokens(audience)
	if err != nil {
		return Cluster{}, err
	}
	job := &subject{ids: ids}
	identity := func() string {
		return fmt.Sprintf("Entra application %s (tenant %s) for AKS cluster %s, with %s", a.ClientID, a.TenantID, a.Cluster, job)
	}
	opts := &azidentity.ClientAssertionCredentialOptions{ClientOptions: azcore.ClientOptions{Transport: o.HTTPClient}}
	if o.Endpoints.AzureAuthority != "" {
		opts.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: o.Endpoints.AzureAuthority}
		opts.DisableInstanceDiscovery = true
	}
	cred, err := azidentity.NewClientAssertionCredential(a.TenantID, a.ClientID, job.jobToken, opts)
	if err != nil {
		return Cluster{}, err
	}
	token := func(ctx context.Context, scope string) (*oauth2.Token, error) {
		t, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{scope}})
		if err != nil {
			return nil, entraError(err)
		}
		o.Hide(t.Token)
		return &oauth2.Token{AccessToken: t.Token, TokenType: "Bearer", Expiry: t.ExpiresOn}, nil
	}
	if _, err := token(ctx, aksServerScope); err != nil {
		return Cluster{}, fmt.Errorf("signing in as %s: %w", identity(), err)
	}
	c := Cluster{Server: o.Server, CAData: o.CAData}
	if c.Server == "" {
		arm, err := token(ctx, armScope)
		if err == nil {
			c, err = aksLookup(ctx, a, o, arm.AccessToken)
		}
		if err != nil {
			return Cluster{}, fmt.Errorf("AKS cluster %s (resource group %s, subscription %s) as Entra application %s: %w", a.Cluster, a.ResourceGroup, a.SubscriptionID, a.ClientID, err)
		}
	}
	c.Tokens = &tokens{hide: o.Hide, identity: identity, fetch: func(ctx context.Context) (*oauth2.Token, error) { return token(ctx, aksServerScope) }}
	return c, nil
}

// aksLookup reads the cluster's endpoint and CA from the kubeconfig that
// listClusterUserCredential returns, as az aks get-credentials does; the
// kubeconfig's user (a kubelogin exec plugin) is not used.
func aksLookup(ctx context.Context, a *config.AKSAuth, o Options, token string) (Cluster, error) {
	u := endpointOr(o.Endpoints.AzureResourceManager, "https://management.azure.com",
		"/subscriptions/"+url.PathEscape(a.SubscriptionID)+"/resourceGroups/"+url.PathEscape(a.ResourceGroup)+
			"/providers/Microsoft.ContainerService/managedClusters/"+url.PathEscape(a.Cluster)+
			"/listClusterUserCredential?api-version="+aksAPIVersion)
	var out struct {
		Kubeconfigs []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"kubeconfigs"`
	}
	if err := getJSON(ctx, o.HTTPClient, http.MethodPost, u, token, &out); err != nil {
		return Cluster{}, err
	}
	if len(out.Kubeconfigs) == 0 {
		return Cluster{}, errNoEndpoint
	}
	raw, err := base64.StdEncoding.DecodeString(out.Kubeconfigs[0].Value)
	if err != nil {
		return Cluster{}, fmt.Errorf("kubeconfig %s: %w", out.Kubeconfigs[0].Name, err)
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return Cluster{}, fmt.Errorf("kubeconfig %s: %w", out.Kubeconfigs[0].Name, err)
	}
	ctxt := kc.Contexts[kc.CurrentContext]
	if ctxt == nil || kc.Clusters[ctxt.Cluster] == nil {
		return Cluster{}, errNoEndpoint
	}
	cl := kc.Clusters[ctxt.Cluster]
	return Cluster{Server: cl.Server, CAData: cl.CertificateAuthorityData}, nil
}

// entraError is Entra's answer to a refused sign-in as its status, error
// and description (AADSTS code first), without the SDK's framing.
func entraError(err error) error {
	var failed *azidentity.AuthenticationFailedError
	if !errors.As(err, &failed) || failed.RawResponse == nil {
		return err
	}
	body, rerr := runtime.Payload(failed.RawResponse)
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if rerr != nil || json.Unmarshal(body, &e) != nil || e.Error == "" {
		return fmt.Errorf("Entra ID: %s", failed.RawResponse.Status)
	}
	return fmt.Errorf("Entra ID: %s: %s: %s", failed.RawResponse.Status, e.Error, e.Description)
}
