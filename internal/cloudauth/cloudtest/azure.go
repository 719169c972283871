package cloudtest

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/ferry-ci/ferry/internal/actions/oidctest"
)

// azureCloud is Entra ID (the tenant's OpenID metadata, keys and token
// endpoint) and ARM's listClusterUserCredential.
type azureCloud struct {
	c          *Clouds
	entra, arm *httptest.Server
	signer     jose.Signer
	jwks       jose.JSONWebKeySet

	mu        sync.Mutex
	armTokens map[string]bool // ARM access tokens issued
}

func newAzure(t *testing.T, c *Clouds) *azureCloud {
	t.Helper()
	signer, jwks := oidctest.NewSigner(t, "entra")
	a := &azureCloud{c: c, signer: signer, jwks: jwks, armTokens: map[string]bool{}}
	a.entra = httptest.NewTLSServer(http.HandlerFunc(a.serveEntra))
	t.Cleanup(a.entra.Close)
	a.arm = httptest.NewTLSServer(http.HandlerFunc(a.serveARM))
	t.Cleanup(a.arm.Close)
	return a
}

// issuer is the tenant's v2.0 issuer.
func (a *azureCloud) issuer() string { return a.entra.URL + "/" + TenantID + "/v2.0" }

func (a *azureCloud) serveEntra(w http.ResponseWriter, r *http.Request) {
	base := "/" + TenantID
	switch r.URL.Path {
	case base + "/v2.0/.well-known/openid-configuration":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": a.issuer(), "token_endpoint": a.entra.URL + base + "/oauth2/v2.0/token",
			"authorization_endpoint": a.entra.URL + base + "/oauth2/v2.0/authorize", "jwks_uri": a.entra.URL + base + "/discovery/v2.0/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "response_types_supported": []string{"code", "id_token"},
			"subject_types_supported": []string{"pairwise"}, "tenant_region_scope": "EU",
		})
	case base + "/discovery/v2.0/keys":
		writeJSON(w, http.StatusOK, a.jwks)
	case base + "/oauth2/v2.0/token":
		a.c.count("entra-token")
		a.token(w, r)
	default:
		entraError(w, http.StatusBadRequest, "invalid_tenant", "AADSTS90002: Tenant '"+strings.Trim(r.URL.Path, "/")+"' not found.")
	}
}

// token is the client-credentials grant with a federated client
// assertion: the job's token for api://AzureADTokenExchange, of
// Repository's main branch, for ClientID's federated credential.
func (a *azureCloud) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		entraError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "client_credentials" || f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		entraError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144: not a client credentials grant with a client assertion")
		return
	}
	if f.Get("client_id") != ClientID {
		entraError(w, http.StatusBadRequest, "unauthorized_client", "AADSTS700016: Application with identifier '"+f.Get("client_id")+"' was not found in the directory.")
		return
	}
	claims, err := a.c.trusted(f.Get("client_assertion"), "api://AzureADTokenExchange")
	if err != nil || claims["sub"] != "repo:"+Repository+":ref:refs/heads/main" {
		entraError(w, http.StatusUnauthorized, "invalid_client", "AADSTS70021: No matching federated identity record found for presented assertion.")
		return
	}
	var tok string
	switch scope := f.Get("scope"); {
	case strings.HasPrefix(scope, AKSServerAppID+"/.default"):
		tok, err = a.mint(AKSServerAppID)
	case strings.HasPrefix(scope, "https://management.azure.com/.default"):
		tok, err = a.mint("https://management.azure.com")
		a.mu.Lock()
		a.armTokens[tok] = true
		a.mu.Unlock()
	default:
		entraError(w, http.StatusBadRequest, "invalid_scope", "AADSTS70011: The provided value for scope "+scope+" is not valid.")
		return
	}
	if err != nil {
		entraError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	life := int(time.Until(a.c.expiry()).Round(time.Second).Seconds())
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": life, "ext_expires_in": life, "access_token": tok})
}

// mint is an access token of ClientID's service principal for audience.
func (a *azureCloud) mint(audience string) (string, error) {
	now := time.Now()
	std := jwt.Claims{Issuer: a.issuer(), Audience: jwt.Audience{audience}, Subject: ObjectID, IssuedAt: jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(a.c.expiry())}
	return jwt.Signed(a.signer).Claims(std).Claims(map[string]any{"oid": ObjectID, "tid": TenantID, "azp": ClientID, "appid": ClientID}).Serialize()
}

// serveARM is listClusterUserCredential of the one managed cluster.
func (a *azureCloud) serveARM(w http.ResponseWriter, r *http.Request) {
	a.c.count("listClusterUserCredential")
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	ok := a.armTokens[tok]
	a.mu.Unlock()
	if !ok {
		armError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid.")
		return
	}
	want := "/subscriptions/" + Subscription + "/resourceGroups/" + ResourceGroup + "/providers/Microsoft.ContainerService/managedClusters/" + AKSCluster + "/listClusterUserCredential"
	if r.Method != http.MethodPost || r.URL.Query().Get("api-version") == "" {
		armError(w, http.StatusBadRequest, "InvalidRequest", "POST with an api-version")
		return
	}
	if r.URL.Path != want {
		armError(w, http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.ContainerService/managedClusters' under resource group '"+strings.Split(r.URL.Path, "/")[4]+"' was not found.")
		return
	}
	server, ca := a.c.cluster()
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
  - name: ` + AKSCluster + `
    cluster: {server: "` + server + `", certificate-authority-data: ` + base64.StdEncoding.EncodeToString(ca) + `}
users:
  - name: clusterUser_` + ResourceGroup + `_` + AKSCluster + `
    user:
      exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --server-id, ` + AKSServerAppID + `]}
contexts:
  - name: ` + AKSCluster + `
    context: {cluster: ` + AKSCluster + `, user: clusterUser_` + ResourceGroup + `_` + AKSCluster + `}
current-context: ` + AKSCluster + `
`
	writeJSON(w, http.StatusOK, map[string]any{"kubeconfigs": []map[string]string{{"name": "clusterUser", "value": base64.StdEncoding.EncodeToString([]byte(kubeconfig))}}})
}

func entraError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]any{"error": code, "error_description": description, "error_codes": []int{}})
}

func armError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}
