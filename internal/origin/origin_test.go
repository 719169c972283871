package origin_test

import (
	"net/url"
	"testing"

	"github.com/ferry-ci/ferry/internal/origin"
)

func TestOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string // "" for no origin
	}{
		{"https://Charts.Example.com/stable", "https://charts.example.com:443"},
		{"HTTPS://charts.example.com:443", "https://charts.example.com:443"},
		{"http://charts.example.com", "http://charts.example.com:80"},
		{"http://127.0.0.1:5000/v2/", "http://127.0.0.1:5000"},
		{"https://[::1]/x", "https://[::1]:443"},
		{"https://user:pw@host:8443", "https://host:8443"},
		{"oci://ghcr.io/org", ""},
		{"ftp://host", ""},
		{"http:///path", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			u, err := url.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := origin.Of(u)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("Of(%s) = %q, %v; want %q", tc.in, got, ok, tc.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bound, url string
		want       bool
	}{
		{"https://charts.example.com:443", "https://charts.example.com/index.yaml", true},
		{"https://charts.example.com:443", "https://CHARTS.example.com:443/a.tgz", true},
		{"https://charts.example.com:443", "http://charts.example.com/index.yaml", false},
		{"https://charts.example.com:443", "https://charts.example.com:8443/index.yaml", false},
		{"https://charts.example.com:443", "https://charts-example.com/index.yaml", false},
		{"https://charts.example.com:443", "https://cdn.charts.example.com/a.tgz", false},
		{"https://charts.example.com:443", "https://example.com/a.tgz", false},
		// TLS to the same host and port is never weaker.
		{"http://127.0.0.1:5000", "https://127.0.0.1:5000/v2/", true},
		{"http://127.0.0.1:5000", "http://127.0.0.1:5001/v2/", false},
		{"", "https://charts.example.com/", false},
	} {
		t.Run(tc.bound+" "+tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := origin.Matches(tc.bound, u); got != tc.want {
				t.Errorf("Matches(%s, %s) = %v, want %v", tc.bound, tc.url, got, tc.want)
			}
		})
	}
}

func TestHostKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://ghcr.io:443":          "ghcr.io",
		"http://charts.example.com:80": "charts.example.com",
		"http://127.0.0.1:5000":        "127.0.0.1:5000",
		"https://registry.corp:80":     "registry.corp:80",
	} {
		if got := origin.HostKey(in); got != want {
			t.Errorf("HostKey(%s) = %q, want %q", in, got, want)
		}
	}
}
