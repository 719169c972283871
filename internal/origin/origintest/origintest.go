// Package origintest runs servers for tests of where credentials go:
// httptest servers (plain HTTP or TLS) that record the Host and
// Authorization header of every request they receive, and
// go-containerregistry's in-process registry behind basic or token
// authentication that can send its blobs (or any request) to another
// origin.
package origintest

import (
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Request is what a Server records of one request.
type Request struct {
	// Scheme is https when the request came over TLS, else http.
	Scheme             string
	Method, Host, Path string
	// Authorization is the request's Authorization header, "" for none.
	Authorization string
}

// Server is an httptest server that records every request before its
// handler answers it.
type Server struct {
	*httptest.Server
	// Origin is its scheme://127.0.0.1:PORT.
	Origin string

	cert *x509.Certificate // NewDualServer's

	mu   sync.Mutex
	reqs []Request
}

// NewServer serves h over plain HTTP until the test ends.
func NewServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(s.record(h))
	s.Origin = s.URL
	t.Cleanup(s.Close)
	return s
}

// NewTLSServer serves h over TLS until the test ends; clients trust it
// through s.Client() or s.Certificate().
func NewTLSServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewTLSServer(s.record(h))
	s.Origin = s.URL
	t.Cleanup(s.Close)
	return s
}

func (s *Server) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		s.reqs = append(s.reqs, Request{Scheme: scheme, Method: r.Method, Host: r.Host, Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Reset forgets the requests received so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

// Authorizations are the distinct Authorization headers received so
// far, sorted; none when no request carried one.
func (s *Server) Authorizations() []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Authorization != "" {
			out = append(out, r.Authorization)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// AuthorizationsFor are the distinct Authorization headers of the
// requests for Host host, sorted.
func (s *Server) AuthorizationsFor(host string) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Host == host && r.Authorization != "" {
			out = append(out, r.Authorization)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Redirect answers every request with 307 to the same path (and query)
// at origin.
func Redirect(origin string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, origin+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
}

// RegistryOptions configure a Registry.
type RegistryOptions struct {
	// Username and Password are the credentials the registry (or its
	// token server) accepts; empty lets everyone in.
	Username, Password string
	// Token makes the registry answer with a Bearer challenge whose realm
	// is a token server of its own on localhost (go-containerregistry
	// refuses a realm on a loopback IP literal at another port), which
	// takes the basic credentials and issues a token; else the registry
	// asks for the basic credentials itself.
	Token bool
	// ToCDN picks the requests answered with 307 to the same path at
	// the registry's CDN (Blobs, Manifests, TagLists); nil sends none.
	ToCDN func(r *http.Request) bool
}

// Registry is go-containerregistry's in-process registry behind
// authentication, with the servers it uses recording every request.
type Registry struct {
	*Server
	// Host is 127.0.0.1:PORT.
	Host string
	// TokenServer is the token server (nil without RegistryOptions.Token).
	TokenServer *Server
	// CDN serves the registry's content without any authentication, as
	// a blob store does behind signed URLs (RegistryOptions.ToCDN).
	CDN *Server
}

// The token the token server issues for good credentials.
const token = "origintest-registry-token"

// NewRegistry starts a registry until the test ends.
func NewRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r := &Registry{CDN: NewServer(t, inner)}
	challenge := `Basic realm="origintest"`
	if opts.Token {
		r.TokenServer = NewServer(t, tokenHandler(opts))
		realm := strings.Replace(r.TokenServer.URL, "127.0.0.1", "localhost", 1) + "/token"
		challenge = `Bearer realm="` + realm + `",service="origintest"`
	}
	r.Server = NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !authorized(req, opts) {
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		if opts.ToCDN != nil && opts.ToCDN(req) {
			Redirect(r.CDN.Origin).ServeHTTP(w, req)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	r.Host = r.Listener.Addr().String()
	return r
}

// Blobs are the blob GETs.
func Blobs(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/")
}

// Manifests are the manifest GETs and HEADs.
func Manifests(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.Contains(r.URL.Path, "/manifests/")
}

// TagLists are the tag list GETs.
func TagLists(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tags/list")
}

// Reset forgets the requests its servers received so far (a push's,
// say).
func (r *Registry) Reset() {
	for _, s := range []*Server{r.Server, r.TokenServer, r.CDN} {
		if s != nil {
			s.Reset()
		}
	}
}

// authorized checks a request to the registry: the basic credentials,
// or the token; anything goes without credentials configured.
func authorized(req *http.Request, opts RegistryOptions) bool {
	if opts.Username == "" {
		return true
	}
	if opts.Token {
		return req.Header.Get("Authorization") == "Bearer "+token
	}
	u, p, ok := req.BasicAuth()
	return ok && u == opts.Username && p == opts.Password
}

// tokenHandler issues the token for the basic credentials of opts.
func tokenHandler(opts RegistryOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || u != opts.Username || p != opts.Password {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"token": token})
	})
}
