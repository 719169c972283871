// Package origin binds credentials to the exact origin (scheme, host and
// port) they were given for: the transports it makes send an
// Authorization header only to that origin, whatever a server redirects
// to or an index names.
package origin

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// defaultPorts are the ports a URL without one reaches.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// Of is the origin of u, scheme://host:port with the scheme and host in
// lower case and the scheme's default port written out
// (https://charts.example.com:443); false when u is not an http or https
// URL with a host.
func Of(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	def, ok := defaultPorts[scheme]
	if !ok || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = def
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// Parse is the origin of the URL raw (see Of).
func Parse(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a URL: %w", err)
	}
	o, ok := Of(u)
	if !ok {
		return "", fmt.Errorf("%q is not an http:// or https:// URL with a host", redacted(u))
	}
	return o, nil
}

// Join is the origin of host (host or host:port, as a registry is named)
// reached over scheme.
func Join(scheme, host string) (string, error) {
	return Parse(scheme + "://" + host)
}

// Matches reports whether credentials bound to origin bound may go with a
// request to u: u's origin is bound, or bound is plain http and u reaches
// the same host and port over https (go-containerregistry tries TLS
// first even on a registry named insecure, and TLS is never weaker).
func Matches(bound string, u *url.URL) bool {
	o, ok := Of(u)
	if !ok || bound == "" {
		return false
	}
	if o == bound {
		return true
	}
	rest, ok := strings.CutPrefix(bound, "http://")
	return ok && o == "https://"+rest
}

// HostKey is how a host is named in credential lookups (the
// FERRY_REGISTRY_<HOST> variables, a Docker config.json): host, with
// ":port" only when the port is not the default of the origin's scheme.
func HostKey(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return origin
	}
	if u.Port() == defaultPorts[u.Scheme] {
		return u.Hostname()
	}
	return u.Host
}

// redacted is u without a password, for messages.
func redacted(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
