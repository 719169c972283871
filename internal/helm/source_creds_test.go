package helm_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/origin/origintest"
)

// The credentials of every test here.
const credUser, credPass = "chart-reader", "s3cret-chart-pass"

var basicCreds = "Basic " + base64.StdEncoding.EncodeToString([]byte(credUser+":"+credPass))

// chartFiles serves files by path; with auth, only to requests carrying
// the test's credentials.
func chartFiles(files map[string][]byte, auth bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); auth && (!ok || u != credUser || p != credPass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	})
}

// demoIndex is an index.yaml listing demo 1.0.0 at url.
func demoIndex(url string, archive []byte) []byte {
	return fmt.Appendf(nil, "apiVersion: v1\nentries:\n  demo:\n    - name: demo\n      version: 1.0.0\n      urls: [%q]\n      digest: %s\n", url, helmtest.Digest(archive))
}

// authorizations maps each server (and, for a server serving TLS and
// plain HTTP on one port, each scheme) to the distinct Authorization
// headers it received.
func authorizations(servers map[string]*origintest.Server) map[string][]string {
	got := map[string][]string{}
	for name, s := range servers {
		dual := s.TLS == nil && strings.HasPrefix(s.Origin, "https://")
		if dual {
			got[name+" http"], got[name+" https"] = nil, nil
		} else {
			got[name] = nil
		}
		for _, r := range s.Requests() {
			k := name
			if dual {
				k += " " + r.Scheme
			}
			if r.Authorization != "" && !slices.Contains(got[k], r.Authorization) {
				got[k] = append(got[k], r.Authorization)
			}
		}
	}
	return got
}

// An HTTP chart repository's credentials go to its origin only: not to
// an archive the index lists on another origin, nor to a redirect of the
// index or an archive to another port, nor to plain HTTP after TLS (on
// another port, or on the same one).
func TestFetchHTTPCredentialsBoundToOrigin(t *testing.T) {
	t.Parallel()
	archive, _ := helmtest.Package(t, demoChart(t), "1.0.0")
	tgz := "/demo-1.0.0.tgz"

	for _, tc := range []struct {
		name string
		// repo makes the servers; "repo" is the one the source names.
		repo func(t *testing.T) map[string]*origintest.Server
		want map[string][]string
	}{
		{name: "archive on another origin", repo: func(t *testing.T) map[string]*origintest.Server {
			cdn := origintest.NewServer(t, chartFiles(map[string][]byte{tgz: archive}, false))
			repo := origintest.NewServer(t, chartFiles(map[string][]byte{"/index.yaml": demoIndex(cdn.URL+tgz, archive)}, true))
			return map[string]*origintest.Server{"repo": repo, "cdn": cdn}
		}, want: map[string][]string{"repo": {basicCreds}, "cdn": nil}},
		{name: "archive redirected to another port", repo: func(t *testing.T) map[string]*origintest.Server {
			cdn := origintest.NewServer(t, chartFiles(map[string][]byte{tgz: archive}, false))
			mux := http.NewServeMux()
			mux.Handle("/index.yaml", chartFiles(map[string][]byte{"/index.yaml": demoIndex("demo-1.0.0.tgz", archive)}, true))
			mux.Handle(tgz, origintest.Redirect(cdn.Origin))
			return map[string]*origintest.Server{"repo": origintest.NewServer(t, mux), "cdn": cdn}
		}, want: map[string][]string{"repo": {basicCreds}, "cdn": nil}},
		{name: "index redirected to another port", repo: func(t *testing.T) map[string]*origintest.Server {
			mirror := origintest.NewServer(t, chartFiles(map[string][]byte{"/index.yaml": demoIndex("demo-1.0.0.tgz", archive)}, false))
			mux := http.NewServeMux()
			mux.Handle("/index.yaml", origintest.Redirect(mirror.Origin))
			mux.Handle(tgz, chartFiles(map[string][]byte{tgz: archive}, true))
			return map[string]*origintest.Server{"repo": origintest.NewServer(t, mux), "mirror": mirror}
		}, want: map[string][]string{"repo": {basicCreds}, "mirror": nil}},
		{name: "TLS repository, archive on plain HTTP", repo: func(t *testing.T) map[string]*origintest.Server {
			plain := origintest.NewServer(t, chartFiles(map[string][]byte{tgz: archive}, false))
			repo := origintest.NewTLSServer(t, chartFiles(map[string][]byte{"/index.yaml": demoIndex(plain.URL+tgz, archive)}, true))
			return map[string]*origintest.Server{"repo": repo, "plain": plain}
		}, want: map[string][]string{"repo": {basicCreds}, "plain": nil}},
		{name: "TLS repository redirected to plain HTTP on its own port", repo: func(t *testing.T) map[string]*origintest.Server {
			files := map[string][]byte{"/index.yaml": demoIndex("demo-1.0.0.tgz", archive), tgz: archive}
			return map[string]*origintest.Server{"repo": origintest.NewDualServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.TLS != nil && r.URL.Path == tgz {
					origintest.Redirect("http://"+r.Host).ServeHTTP(w, r)
					return
				}
				chartFiles(files, r.TLS != nil).ServeHTTP(w, r)
			}))}
		}, want: map[string][]string{"repo https": {basicCreds}, "repo http": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers := tc.repo(t)
			repo := servers["repo"]
			src := helm.ChartSource{Kind: helm.HTTPRepository, URL: repo.URL, Chart: "demo", Version: "1.0.0"}
			o, err := src.Origin()
			if err != nil {
				t.Fatal(err)
			}
			src.Credentials = &helm.Credentials{Origin: o, Username: credUser, Password: credPass}
			s := helm.NewSources(helm.SourcesOptions{HTTPClient: &http.Client{Transport: repo.Transport()}})
			f, err := s.Fetch(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			if f.Digest != sha(archive) {
				t.Errorf("digest %s, want %s", f.Digest, sha(archive))
			}
			if d := cmp.Diff(tc.want, authorizations(servers)); d != "" {
				t.Errorf("Authorization headers received (-want +got):\n%s", d)
			}
			for name, s := range servers {
				if len(s.Requests()) == 0 {
					t.Errorf("%s received no request", name)
				}
			}
		})
	}
}

// Credentials bound to another origin than the source's are not sent;
// credentials withheld say so when the repository refuses access.
func TestFetchHTTPCredentialsElsewhere(t *testing.T) {
	t.Parallel()
	archive, _ := helmtest.Package(t, demoChart(t), "1.0.0")
	repo := origintest.NewServer(t, chartFiles(map[string][]byte{"/index.yaml": demoIndex("demo-1.0.0.tgz", archive)}, true))
	for _, tc := range []struct {
		name     string
		creds    *helm.Credentials
		withheld string
		want     []string
	}{
		{"bound to another port", &helm.Credentials{Origin: "http://127.0.0.1:1", Username: credUser, Password: credPass}, "",
			[]string{"refused access without credentials", "give the source credentials"}},
		{"bound to TLS", &helm.Credentials{Origin: strings.Replace(repo.Origin, "http:", "https:", 1), Username: credUser, Password: credPass}, "",
			[]string{"refused access without credentials"}},
		{"withheld", nil, "its URL is not the base revision's",
			[]string{"refused access without credentials", "the source's credentials were withheld: its URL is not the base revision's"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := helm.ChartSource{Kind: helm.HTTPRepository, URL: repo.URL, Chart: "demo", Version: "1.0.0", Credentials: tc.creds, Withheld: tc.withheld}
			_, err := helm.NewSources(helm.SourcesOptions{}).Fetch(context.Background(), src)
			wantError(t, err, helm.ErrUnauthorized, append(tc.want, "demo", repo.URL), credPass)
		})
	}
	if d := cmp.Diff([]string(nil), repo.Authorizations()); d != "" {
		t.Errorf("Authorization headers received (-want +got):\n%s", d)
	}
}

// An OCI registry's credentials go to the registry and to the token
// realm it names, and not to the CDN it sends blobs or manifests to (on
// another port of the same host); go-containerregistry decides each
// request, and this is the test that it does.
func TestFetchOCICredentialsBoundToOrigin(t *testing.T) {
	t.Parallel()
	archive, _ := helmtest.Package(t, demoChart(t), "1.0.0")
	for _, tc := range []struct {
		name                           string
		opts                           origintest.RegistryOptions
		version                        string
		wantRegistry, wantToken        []string
		wantCDNRequests, wantTokenUsed bool
	}{
		{name: "basic, blobs on a CDN", opts: origintest.RegistryOptions{ToCDN: origintest.Blobs}, version: "1.0.0",
			wantRegistry: []string{basicCreds}},
		{name: "token, blobs on a CDN", opts: origintest.RegistryOptions{Token: true, ToCDN: origintest.Blobs}, version: "1.0.0",
			wantRegistry: []string{"Bearer origintest-registry-token"}, wantToken: []string{basicCreds}},
		{name: "token, manifests on a CDN", opts: origintest.RegistryOptions{Token: true, ToCDN: origintest.Manifests}, version: "1.0.0",
			wantRegistry: []string{"Bearer origintest-registry-token"}, wantToken: []string{basicCreds}},
		{name: "basic, tag list on a CDN", opts: origintest.RegistryOptions{ToCDN: origintest.TagLists}, version: "^1",
			wantRegistry: []string{basicCreds}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Username, tc.opts.Password = credUser, credPass
			reg := origintest.NewRegistry(t, tc.opts)
			helmtest.Push(t, reg.Host, "charts", archive, credUser, credPass)
			reg.Reset()
			src := helm.ChartSource{Kind: helm.OCIRepository, URL: "oci://" + reg.Host + "/charts", Chart: "demo", Version: tc.version}
			o, err := src.Origin()
			if err != nil {
				t.Fatal(err)
			}
			if want := "http://" + reg.Host; o != want {
				t.Errorf("origin %s, want %s", o, want)
			}
			src.Credentials = &helm.Credentials{Origin: o, Username: credUser, Password: credPass}
			f, err := helm.NewSources(helm.SourcesOptions{}).Fetch(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			if f.Digest != sha(archive) {
				t.Errorf("digest %s, want %s", f.Digest, sha(archive))
			}
			got := map[string][]string{"registry": reg.Authorizations(), "cdn": reg.CDN.Authorizations(), "token": nil}
			if reg.TokenServer != nil {
				got["token"] = reg.TokenServer.Authorizations()
			}
			want := map[string][]string{"registry": tc.wantRegistry, "cdn": nil, "token": tc.wantToken}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Authorization headers received (-want +got):\n%s", d)
			}
			if len(reg.CDN.Requests()) == 0 {
				t.Error("the CDN received no request: nothing was redirected")
			}
		})
	}
}

// OCI credentials bound to another origin than the registry's (the
// scheme it is reached over included) are not sent.
func TestFetchOCICredentialsElsewhere(t *testing.T) {
	t.Parallel()
	archive, _ := helmtest.Package(t, demoChart(t), "1.0.0")
	reg := origintest.NewRegistry(t, origintest.RegistryOptions{Username: credUser, Password: credPass})
	helmtest.Push(t, reg.Host, "charts", archive, credUser, credPass)
	reg.Reset()
	for _, tc := range []struct {
		name, origin string
	}{
		{"over TLS", "https://" + reg.Host},
		{"another port", "http://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := helm.ChartSource{Kind: helm.OCIRepository, URL: "oci://" + reg.Host + "/charts", Chart: "demo", Version: "1.0.0",
				Credentials: &helm.Credentials{Origin: tc.origin, Username: credUser, Password: credPass}}
			_, err := helm.NewSources(helm.SourcesOptions{}).Fetch(context.Background(), src)
			wantError(t, err, helm.ErrUnauthorized, []string{"demo", reg.Host, "without credentials"}, credPass)
		})
	}
	if d := cmp.Diff([]string(nil), reg.Authorizations()); d != "" {
		t.Errorf("Authorization headers received (-want +got):\n%s", d)
	}
}
