package origin

import (
	"net/http"
)

// Basic returns a transport that sends username and password (basic
// authentication) with every request to the origin bound, and no
// Authorization header with a request anywhere else: a redirect to
// another host, port or scheme, or an archive an index lists on another
// host. The header is set on a copy of each request, so that a redirect
// never starts from a request that has it (http.Client copies the first
// request's Authorization header onto a redirect to another port or
// scheme of the same host name).
func Basic(inner http.RoundTripper, bound, username, password string) http.RoundTripper {
	if inner == nil {
		inner = http.DefaultTransport
	}
	return &basic{inner: inner, bound: bound, username: username, password: password}
}

type basic struct {
	inner              http.RoundTripper
	bound              string
	username, password string
}

// RoundTrip sends req with the credentials when it goes to the bound
// origin, else without an Authorization header; a RoundTripper must not
// change the request it is given, so either is done on a copy.
func (t *basic) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case Matches(t.bound, req.URL):
		req = req.Clone(req.Context())
		req.SetBasicAuth(t.username, t.password)
	case req.Header.Get("Authorization") != "":
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	return t.inner.RoundTrip(req)
}
