package notify

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// forwardProxy is an HTTP forward proxy for plain-HTTP targets: it
// records the absolute URL and Proxy-Authorization of each request and
// answers 200 itself, so the target host need not exist.
type forwardProxy struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // "URL auth"
}

func newForwardProxy(t *testing.T) *forwardProxy {
	p := &forwardProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.URL.String()+" "+r.Header.Get("Proxy-Authorization"))
		p.mu.Unlock()
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestProviderProxy: a Provider's spec.proxy, or its proxySecretRef's
// address with username and password, carries the webhook; a github
// provider with a proxy is refused naming it, never sent around it.
func TestProviderProxy(t *testing.T) {
	const target = "http://hooks.invalid/services/T0/B0/secret"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("proxyuser:proxypass"))
	for _, tc := range []struct {
		name     string
		provider func(proxy string) Provider
		secret   map[string]string
		want     string // what the proxy saw; "" for nothing
		err      string
	}{
		{name: "spec.proxy", provider: func(proxy string) Provider {
			return Provider{Type: TypeGeneric, Address: target, Proxy: proxy}
		}, want: target + " "},
		{name: "proxySecretRef", provider: func(string) Provider {
			return Provider{Type: TypeGeneric, Address: target, Proxy: "http://wrong.invalid:1", ProxySecretRef: "proxy"}
		}, secret: map[string]string{"username": "proxyuser", "password": "proxypass"}, want: target + " " + basic},
		{name: "proxySecretRef without address", provider: func(string) Provider {
			return Provider{Type: TypeGeneric, Address: target, ProxySecretRef: "proxy"}
		}, secret: map[string]string{"username": "u"}, err: "Provider/flux-system/p: proxySecretRef Secret/flux-system/proxy has no address key"},
		{name: "not a proxy URL", provider: func(string) Provider {
			return Provider{Type: TypeGeneric, Address: target, Proxy: "ftp://x"}
		}, err: "Provider/flux-system/p: the proxy is not an http, https or socks5 URL"},
		{name: "github provider with a proxy", provider: func(proxy string) Provider {
			return Provider{Type: TypeGitHub, Address: "https://github.com/o/r", Proxy: proxy, SecretRef: "gh"}
		}, secret: map[string]string{"token": "t0ken"}, err: "Provider/flux-system/p: ferry sets github commit statuses through its forge client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := newForwardProxy(t)
			opts := fastOptions()
			var hidden []string
			opts.Hide = func(v ...string) { hidden = append(hidden, v...) }
			opts.Secret = func(ns, name string) (map[string]string, bool) {
				switch name {
				case "proxy":
					d := map[string]string{}
					for k, v := range tc.secret {
						d[k] = v
					}
					if tc.err == "" {
						d["address"] = px.srv.URL
					}
					return d, true
				case "gh":
					return tc.secret, true
				}
				return nil, false
			}
			opts.OpenStatuses = func(kind, address, token string) (Statuses, error) {
				t.Error("a github provider with a proxy was opened")
				return nil, nil
			}
			ds := Send(context.Background(), setup(tc.provider(px.srv.URL)), []Event{appliedEvent()}, opts)
			if len(ds) != 1 {
				t.Fatalf("deliveries %+v", ds)
			}
			if tc.err != "" {
				if ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), tc.err) {
					t.Errorf("error %v, want one containing %q", ds[0].Err, tc.err)
				}
				if len(px.seen) > 0 {
					t.Errorf("the proxy was sent %v", px.seen)
				}
				return
			}
			if ds[0].Err != nil {
				t.Fatalf("delivery failed: %v", ds[0].Err)
			}
			if len(px.seen) != 1 || px.seen[0] != tc.want {
				t.Errorf("the proxy saw %q, want [%q]", px.seen, tc.want)
			}
			if tc.secret != nil && !strings.Contains(strings.Join(hidden, "\n"), "proxypass") {
				t.Errorf("the proxy password was not hidden: %q", hidden)
			}
		})
	}
}
