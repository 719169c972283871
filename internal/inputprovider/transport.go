package inputprovider

import (
	"net/http"

	"github.com/ferry-ci/ferry/internal/origin"
)

// bearer returns a transport that sends token with every request to the
// origin bound and no Authorization header anywhere else (a redirect to
// another host included).
func bearer(inner http.RoundTripper, bound, token string) http.RoundTripper {
	if inner == nil {
		inner = http.DefaultTransport
	}
	return &tokenTransport{inner: inner, bound: bound, token: token}
}

type tokenTransport struct {
	inner        http.RoundTripper
	bound, token string
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case t.token != "" && origin.Matches(t.bound, req.URL):
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "token "+t.token)
	case req.Header.Get("Authorization") != "":
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	return t.inner.RoundTrip(req)
}
