package cloudtest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// googleCloud is Google's STS, IAM credentials and GKE on one host.
type googleCloud struct {
	c   *Clouds
	srv *httptest.Server

	mu     sync.Mutex
	tokens map[string]googleToken // access token → who
}

type googleToken struct {
	principal string // the federated principal, or the service account
	sa        bool
	expires   time.Time
}

func newGoogle(t *testing.T, c *Clouds) *googleCloud {
	g := &googleCloud{c: c, tokens: map[string]googleToken{}}
	g.srv = httptest.NewTLSServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *googleCloud) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/token":
		g.c.count("google-sts")
		g.exchange(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/projects/-/serviceAccounts/") && strings.HasSuffix(r.URL.Path, ":generateAccessToken"):
		g.c.count("generateAccessToken")
		sa := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/projects/-/serviceAccounts/"), ":generateAccessToken")
		g.impersonate(w, r, sa)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/projects/"+GKEProject+"/locations/"+GKELocation+"/clusters/"+GKECluster:
		g.c.count("clusters.get")
		if _, ok := g.bearer(r); !ok {
			googleError(w, http.StatusForbidden, "PERMISSION_DENIED", "Required \"container.clusters.get\" permission(s)")
			return
		}
		server, ca := g.c.cluster()
		writeJSON(w, http.StatusOK, map[string]any{"name": GKECluster, "status": "RUNNING",
			"endpoint": strings.TrimPrefix(server, "https://"), "masterAuth": map[string]string{"clusterCaCertificate": base64.StdEncoding.EncodeToString(ca)}})
	case strings.HasPrefix(r.URL.Path, "/v1/projects/"):
		googleError(w, http.StatusNotFound, "NOT_FOUND", "Not found: "+r.URL.Path)
	default:
		http.NotFound(w, r)
	}
}

// exchange is the STS token exchange for WIFProvider, whose attribute
// condition admits Repository only.
func (g *googleCloud) exchange(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		stsOAuthError(w, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt" ||
		f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token" {
		stsOAuthError(w, "invalid_request", "not a token exchange of a JWT for an access token")
		return
	}
	if f.Get("audience") != "//iam.googleapis.com/"+WIFProvider {
		stsOAuthError(w, "invalid_target", "The target service indicated by the \"audience\" parameters is invalid.")
		return
	}
	claims, err := g.c.trusted(f.Get("subject_token"), "https://iam.googleapis.com/"+WIFProvider)
	if err != nil {
		stsOAuthError(w, "unauthorized_client", "The given credential is rejected by the attribute condition: "+err.Error())
		return
	}
	principal := "principal://iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/github/subject/" + claims["sub"].(string)
	expires := g.c.expiry()
	tok := g.issue(googleToken{principal: principal, expires: expires})
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer",
		"expires_in": int(time.Until(expires).Round(time.Second).Seconds())})
}

// impersonate is generateAccessToken: a federated principal of the
// provider may act as ServiceAccount.
func (g *googleCloud) impersonate(w http.ResponseWriter, r *http.Request, sa string) {
	caller, ok := g.bearer(r)
	if !ok || caller.sa || sa != ServiceAccount {
		googleError(w, http.StatusForbidden, "PERMISSION_DENIED", "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).")
		return
	}
	var body struct {
		Scope []string `json:"scope"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Scope) == 0 {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "scope is required")
		return
	}
	expires := g.c.expiry()
	tok := g.issue(googleToken{principal: sa, sa: true, expires: expires})
	writeJSON(w, http.StatusOK, map[string]string{"accessToken": tok, "expireTime": expires.UTC().Format(time.RFC3339)})
}

func (g *googleCloud) issue(t googleToken) string {
	tok := secret("ya29.")
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens[tok] = t
	return tok
}

func (g *googleCloud) bearer(r *http.Request) (googleToken, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return googleToken{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.tokens[tok]
	return t, ok && time.Now().Before(t.expires)
}

// user is who GKE takes an access token for: the service account's
// email, or the federated principal.
func (g *googleCloud) user(token string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.tokens[token]
	if !ok || time.Now().After(t.expires) {
		return "", false
	}
	return t.principal, true
}

func googleError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": code}})
}

func stsOAuthError(w http.ResponseWriter, code, description string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
}
