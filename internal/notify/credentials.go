package notify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ferry-ci/ferry/internal/images"
)

// secretKeys are the keys of a provider's secretRef ferry reads, and
// certKeys those of its certSecretRef.
var (
	secretKeys = []string{"address", "token", "username", "password", "headers"}
	certKeys   = []string{"ca.crt", "tls.crt", "tls.key"}
	proxyKeys  = []string{"address", "username", "password"}
)

// SecretEnvPrefix is the prefix of the variables that stand in for the
// Secret name when the renders do not hold it: FERRY_SECRET_<NAME>_, the
// name spelled as for registry credentials (images.SecretEnv: hook-url is
// HOOK__URL); false for a name no variable can stand for.
func SecretEnvPrefix(name string) (string, bool) {
	p, ok := images.SecretEnv(name)
	return p + "_", ok
}

// credentials is what a provider sends with: its address and secrets,
// resolved once per Send.
type credentials struct {
	address            string
	token              string
	username, password string
	headers            map[string]string
	tls                *tls.Config
	proxy              *url.URL
}

// lookupSecret finds the Secret namespace/name: in the renders first, else
// its FERRY_SECRET_<NAME>_<KEY> variables (found when any key is set).
func lookupSecret(opts *Options, namespace, name string, keys []string) (map[string]string, error) {
	if opts.Secret != nil {
		if data, ok := opts.Secret(namespace, name); ok {
			return data, nil
		}
	}
	var data map[string]string
	if opts.Getenv != nil {
		data = secretFromEnv(opts, name, keys)
	}
	if len(data) == 0 {
		prefix, ok := SecretEnvPrefix(name)
		if !ok {
			return nil, fmt.Errorf("Secret/%s/%s is not in the renders, and no variable can stand for a Secret of that name", namespace, name)
		}
		return nil, fmt.Errorf("Secret/%s/%s is neither in the renders nor given as %s<KEY> variables (keys %s)",
			namespace, name, prefix, strings.Join(keys, ", "))
	}
	return data, nil
}

// secretFromEnv reads the keys of the Secret name from their
// FERRY_SECRET_<NAME>_<KEY> variables (the key spelled as the name is:
// ca.crt is CA_CRT); when none is set, from those of the former spelling
// of the name (images.FormerSecretEnv) if no other Secret of the run's
// Providers spells the same way, with a warning in opts.warnings.
func secretFromEnv(opts *Options, name string, keys []string) map[string]string {
	data := map[string]string{}
	read := func(variable func(key string) (string, bool)) {
		for _, k := range keys {
			if v, ok := variable(k); ok {
				if v := opts.Getenv(v); v != "" {
					data[k] = v
				}
			}
		}
	}
	read(func(k string) (string, bool) { return images.SecretKeyEnv(name, k) })
	former, clashing, differs := images.FormerSecretEnv(name, opts.secretNames)
	if len(data) > 0 || !differs {
		return data
	}
	read(func(k string) (string, bool) {
		return former + "_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_")), true
	})
	if len(data) == 0 {
		return data
	}
	prefix, _ := SecretEnvPrefix(name) // the name has a spelling: its former one differs
	if clashing != "" {
		opts.warn(fmt.Sprintf("%s_* is not read for Secret %s: that former spelling also stands for Secret %s; name the variables %s<KEY>", former, name, clashing, prefix))
		return map[string]string{}
	}
	opts.warn(fmt.Sprintf("%s_<KEY> are the former spelling for Secret %s, read while no other Secret spells the same way; rename them %s<KEY>", former, name, prefix))
	return data
}

// resolve reads a provider's secrets, tells opts.Hide every value read
// from them (and the address, a secret of most types, wherever it comes
// from), and builds the TLS configuration of its certSecretRef. As in
// notification-controller, the secret's address wins over spec.address
// and its username, with a password, over spec.username.
func resolve(opts *Options, p *Provider) (*credentials, error) {
	c := &credentials{address: p.Address, username: p.Username}
	hide := func(values ...string) {
		if opts.Hide != nil {
			opts.Hide(values...)
		}
	}
	if p.SecretRef != "" {
		data, err := lookupSecret(opts, p.Namespace, p.SecretRef, secretKeys)
		if err != nil {
			return nil, fmt.Errorf("%s: secretRef: %w", p.ID(), err)
		}
		// Every value of the Secret is hidden, also the keys ferry does
		// not read: they are secrets all the same.
		for _, k := range slices.Sorted(maps.Keys(data)) {
			hide(data[k], strings.TrimSpace(data[k]))
		}
		if v := strings.TrimSpace(data["address"]); v != "" {
			c.address = v
		}
		c.token = strings.TrimSpace(data["token"])
		if u, pw := data["username"], data["password"]; u != "" && pw != "" {
			c.username, c.password = u, pw
		}
		if h := data["headers"]; h != "" {
			if err := yaml.Unmarshal([]byte(h), &c.headers); err != nil {
				// The error of the YAML parser may quote the value.
				return nil, fmt.Errorf("%s: secretRef Secret/%s/%s: key headers is not a YAML map of header names to values", p.ID(), p.Namespace, p.SecretRef)
			}
			for _, k := range slices.Sorted(maps.Keys(c.headers)) {
				hide(c.headers[k])
			}
		}
	}
	if !isCommitStatusProvider(p.Type) {
		// A webhook's address holds its credentials.
		hide(c.address)
	}
	if p.CertSecretRef != "" {
		data, err := lookupSecret(opts, p.Namespace, p.CertSecretRef, certKeys)
		if err != nil {
			return nil, fmt.Errorf("%s: certSecretRef: %w", p.ID(), err)
		}
		hide(data["tls.key"])
		cfg, err := tlsConfig(data)
		if err != nil {
			return nil, fmt.Errorf("%s: certSecretRef Secret/%s/%s: %w", p.ID(), p.Namespace, p.CertSecretRef, err)
		}
		c.tls = cfg
	}
	if c.address == "" {
		return nil, fmt.Errorf("%s: no address (neither spec.address nor the address key of its secretRef)", p.ID())
	}
	proxy, err := proxyOf(opts, p, hide)
	if err != nil {
		return nil, err
	}
	c.proxy = proxy
	return c, nil
}

// proxyOf is the proxy a provider sends through, as notification-controller
// reads it: the proxySecretRef Secret's address (with its username and
// password), else spec.proxy; nil for none. Every part of it is hidden:
// a proxy address may carry credentials.
func proxyOf(opts *Options, p *Provider, hide func(...string)) (*url.URL, error) {
	raw, user, pass := p.Proxy, "", ""
	if p.ProxySecretRef != "" {
		data, err := lookupSecret(opts, p.Namespace, p.ProxySecretRef, proxyKeys)
		if err != nil {
			return nil, fmt.Errorf("%s: proxySecretRef: %w", p.ID(), err)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			hide(data[k], strings.TrimSpace(data[k]))
		}
		raw, user, pass = strings.TrimSpace(data["address"]), data["username"], data["password"]
		if raw == "" {
			return nil, fmt.Errorf("%s: proxySecretRef Secret/%s/%s has no address key", p.ID(), p.Namespace, p.ProxySecretRef)
		}
	}
	if raw == "" {
		return nil, nil
	}
	hide(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !slices.Contains([]string{"http", "https", "socks5"}, u.Scheme) {
		return nil, fmt.Errorf("%s: the proxy is not an http, https or socks5 URL with a host", p.ID())
	}
	if user != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u, nil
}

// tlsConfig trusts the Secret's ca.crt (besides nothing else, as Flux's
// TLSConfigFromSecret) and presents tls.crt/tls.key when both are there.
func tlsConfig(data map[string]string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := data["ca.crt"]; ca != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(ca)) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	crt, key := data["tls.crt"], data["tls.key"]
	switch {
	case crt != "" && key != "":
		pair, err := tls.X509KeyPair([]byte(crt), []byte(key))
		if err != nil {
			return nil, errors.New("tls.crt and tls.key are not a certificate and its key")
		}
		cfg.Certificates = []tls.Certificate{pair}
	case crt != "" || key != "":
		return nil, errors.New("tls.crt and tls.key go together")
	}
	if cfg.RootCAs == nil && len(cfg.Certificates) == 0 {
		return nil, errors.New("none of ca.crt, tls.crt and tls.key is set")
	}
	return cfg, nil
}

// client is the HTTP client of a provider: opts.HTTPClient, else one
// whose transport has the provider's TLS configuration.
func (c *credentials) client(opts *Options) *http.Client {
	if opts.HTTPClient != nil && c.proxy == nil {
		return opts.HTTPClient
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.tls != nil {
		tr.TLSClientConfig = c.tls
	}
	if c.proxy != nil { // else the runner's own (HTTPS_PROXY), as before
		tr.Proxy = http.ProxyURL(c.proxy)
	}
	return &http.Client{Transport: tr}
}

// isCommitStatusProvider says whether the type sets commit statuses.
func isCommitStatusProvider(t string) bool { return t == TypeGitHub || t == TypeGitea }

// isGenericProvider says whether the type forwards events as they are.
func isGenericProvider(t string) bool { return t == TypeGeneric || t == TypeGenericHMAC }
