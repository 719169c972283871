// Package oidctest is a test OIDC issuer with the Actions runner's ID-token
// endpoint, over HTTPS on 127.0.0.1: OpenID discovery and the JWKS an API
// server's structured authentication reads, and the endpoint a job with
// `permissions: id-token: write` asks (GET $ACTIONS_ID_TOKEN_REQUEST_URL
// with &audience=, the request token as bearer, {"value": JWT} back, as
// GitHub documents it), minting RS256 tokens with GitHub's claims.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running test issuer.
type Issuer struct {
	// URL is the issuer (the iss claim), https://127.0.0.1:PORT.
	URL string
	// CA is the PEM of the certificate the issuer serves.
	CA []byte
	// RequestToken is the bearer the token endpoint takes; TokenURL is
	// the endpoint (plain HTTP on 127.0.0.1: the runner's is the forge's
	// HTTPS address, which a test cannot have ferry trust).
	RequestToken string
	TokenURL     string

	signer   jose.Signer
	jwks     jose.JSONWebKeySet
	requests atomic.Int64

	mu       sync.Mutex
	claims   map[string]any
	lifetime time.Duration
}

// Start starts an issuer whose tokens carry claims (repository, ref, sub
// and the like; iss, aud, iat, nbf and exp are its own) and live
// lifetime; it is stopped when the test ends.
func Start(t testing.TB, claims map[string]any, lifetime time.Duration) *Issuer {
	t.Helper()
	signer, jwks := NewSigner(t, "oidctest")
	iss := &Issuer{RequestToken: "oidctest-request-token", signer: signer, claims: claims, lifetime: lifetime, jwks: jwks}
	srv := httptest.NewTLSServer(http.HandlerFunc(iss.serve))
	t.Cleanup(srv.Close)
	tokens := httptest.NewServer(http.HandlerFunc(iss.serve))
	t.Cleanup(tokens.Close)
	iss.TokenURL = tokens.URL + "/token"
	iss.URL = srv.URL
	iss.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return iss
}

// NewSigner is a new RS256 key, as a JWT signer and the key set that
// verifies it (the issuer's JWKS), its key ID kid.
func NewSigner(t testing.TB, kid string) (jose.Signer, jose.JSONWebKeySet) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jwk}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return signer, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}}
}

// Env is what the runner gives a job with id-token: write.
func (i *Issuer) Env() map[string]string {
	return map[string]string{
		"ACTIONS_ID_TOKEN_REQUEST_URL":   i.TokenURL + "?api-version=2.0",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN": i.RequestToken,
	}
}

// Requests counts the tokens minted.
func (i *Issuer) Requests() int { return int(i.requests.Load()) }

// Set changes the claims and lifetime of the tokens minted from now on.
func (i *Issuer) Set(claims map[string]any, lifetime time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.claims, i.lifetime = claims, lifetime
}

func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		writeJSON(w, map[string]any{"issuer": i.URL, "jwks_uri": i.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"}})
	case "/jwks":
		writeJSON(w, i.jwks)
	case "/token":
		if r.TLS != nil {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+i.RequestToken {
			http.Error(w, "bad request token", http.StatusUnauthorized)
			return
		}
		tok, err := i.mint(r.URL.Query().Get("audience"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		i.requests.Add(1)
		writeJSON(w, map[string]string{"value": tok})
	default:
		http.NotFound(w, r)
	}
}

func (i *Issuer) mint(audience string) (string, error) {
	i.mu.Lock()
	claims, lifetime := i.claims, i.lifetime
	i.mu.Unlock()
	now := time.Now()
	std := jwt.Claims{Issuer: i.URL, Audience: jwt.Audience{audience}, IssuedAt: jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(now.Add(lifetime))}
	return jwt.Signed(i.signer).Claims(std).Claims(claims).Serialize()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Verify checks a token the issuer minted, as a cloud's token exchange
// does (signature, issuer, audience, expiry), and returns its claims.
func (i *Issuer) Verify(token, audience string) (map[string]any, error) {
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	claims := map[string]any{}
	if err := parsed.Claims(i.jwks.Keys[0].Key, &std, &claims); err != nil {
		return nil, err
	}
	if err := std.Validate(jwt.Expected{Issuer: i.URL, AnyAudience: jwt.Audience{audience}, Time: time.Now()}); err != nil {
		return nil, err
	}
	return claims, nil
}

// APIServerArgs are the kube-apiserver flags that make it trust the
// issuer for audience, as structured authentication
// (AuthenticationConfiguration, written under dir): tokens whose
// repository and ref claims are those given, mapped to the user
// "github:" + sub.
func (i *Issuer) APIServerArgs(t testing.TB, dir, audience, repository, ref string) []string {
	t.Helper()
	indented := "        " + strings.ReplaceAll(strings.TrimSpace(string(i.CA)), "\n", "\n        ")
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
  - issuer:
      url: ` + i.URL + `
      audiences: [` + audience + `]
      certificateAuthority: |
` + indented + `
    claimValidationRules:
      - expression: 'claims.repository == "` + repository + `"'
        message: only ` + repository + ` deploys
      - expression: 'claims.ref == "` + ref + `"'
        message: only ` + ref + ` deploys
    claimMappings:
      username:
        expression: '"github:" + claims.sub'
`
	file := filepath.Join(dir, "authentication.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--authentication-config=" + file}
}
