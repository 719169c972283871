package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// The variables a job with `permissions: id-token: write` gets, on GitHub
// Actions and Forgejo Actions alike: where to ask for the job's OIDC ID
// token, and the bearer token that asks.
const (
	IDTokenURLVar   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	IDTokenTokenVar = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// ErrNoIDToken says the job cannot get an OIDC ID token, and what to add.
var ErrNoIDToken = errors.New("the job has no OIDC identity: " + IDTokenURLVar + " and " + IDTokenTokenVar +
	" are unset. Add to the workflow's job:\n  permissions:\n    id-token: write\n" +
	"(Gitea Actions gives jobs no ID tokens yet: reach the cluster with a kubeconfig secret there)")

// IDTokens is the job's OIDC ID tokens for one audience, asked of the
// runner as GitHub documents it (GET $ACTIONS_ID_TOKEN_REQUEST_URL with
// &audience=, the request token as bearer, {"value": JWT} back). Each
// token is handed to hide before it is returned. It is an
// oauth2.TokenSource whose tokens expire when the JWT's exp says.
type IDTokens struct {
	url, bearer, audience string
	hide                  func(...string)
	client                *http.Client

	mu      sync.Mutex
	subject string
}

// NewIDTokens reads the request variables through getenv; ErrNoIDToken
// when they are unset.
func NewIDTokens(getenv func(string) string, audience string, hide func(...string)) (*IDTokens, error) {
	u, bearer := getenv(IDTokenURLVar), getenv(IDTokenTokenVar)
	if u == "" || bearer == "" {
		return nil, ErrNoIDToken
	}
	return &IDTokens{url: u, bearer: bearer, audience: audience, hide: hide, client: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Token asks the runner for a new ID token.
func (s *IDTokens) Token() (*oauth2.Token, error) {
	u, err := url.Parse(s.url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IDTokenURLVar, err)
	}
	q := u.Query()
	q.Set("audience", s.audience)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.bearer)
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the runner for the job's OIDC token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("asking the runner for the job's OIDC token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("asking the runner for the job's OIDC token (audience %s): %s", s.audience, resp.Status)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Value == "" {
		return nil, fmt.Errorf("the runner's OIDC token answer (audience %s) holds no token", s.audience)
	}
	s.hide(out.Value)
	claims, err := jwtClaims(out.Value)
	if err != nil {
		return nil, fmt.Errorf("the job's OIDC token (audience %s): %w", s.audience, err)
	}
	s.mu.Lock()
	s.subject = claims.Subject
	s.mu.Unlock()
	return &oauth2.Token{AccessToken: out.Value, TokenType: "Bearer", Expiry: time.Unix(claims.Expiry, 0)}, nil
}

// Identity names the last token's identity for an error: its audience
// and subject, never the token.
func (s *IDTokens) Identity() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subject == "" {
		return "the job's OIDC token (audience " + s.audience + ")"
	}
	return "the job's OIDC token (audience " + s.audience + ", subject " + s.subject + ")"
}

// idClaims are the claims ferry reads of its own token, unverified: the
// API server verifies it.
type idClaims struct {
	Subject string `json:"sub"`
	Expiry  int64  `json:"exp"`
}

func jwtClaims(token string) (idClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return idClaims{}, errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return idClaims{}, errors.New("not a JWT")
	}
	var c idClaims
	if err := json.Unmarshal(b, &c); err != nil || c.Expiry == 0 {
		return idClaims{}, errors.New("a JWT without an exp claim")
	}
	return c, nil
}
