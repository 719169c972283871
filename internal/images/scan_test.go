package images_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/origin/origintest"
)

// fakeRegistry is go-containerregistry's in-process registry behind a
// front that pages tag lists (pageSize per page, with Link headers as
// GHCR and Harbor send them) and can answer the first requests of a path
// with an error status.
type fakeRegistry struct {
	*httptest.Server
	pageSize int

	mu       sync.Mutex
	lists    map[string]int // tag list requests per repository
	failures map[string][]failure
}

type failure struct {
	status     int
	retryAfter string
}

func newFakeRegistry(t *testing.T, pageSize int) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{pageSize: pageSize, lists: map[string]int{}, failures: map[string][]failure{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		if fs := f.failures[r.URL.Path]; len(fs) > 0 {
			f.failures[r.URL.Path] = fs[1:]
			f.mu.Unlock()
			if fs[0].retryAfter != "" {
				w.Header().Set("Retry-After", fs[0].retryAfter)
			}
			w.WriteHeader(fs[0].status)
			return
		}
		f.mu.Unlock()
		if repo, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v2/"), "/tags/list"); ok && r.Method == http.MethodGet {
			f.mu.Lock()
			f.lists[repo]++
			f.mu.Unlock()
			f.pageTags(w, r, inner, repo)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// pageTags serves one page of the sorted tag list after ?last=.
func (f *fakeRegistry) pageTags(w http.ResponseWriter, r *http.Request, inner http.Handler, repo string) {
	rec := httptest.NewRecorder()
	inner.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/"+repo+"/tags/list", nil))
	if rec.Code != http.StatusOK {
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	var all struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &all); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sort.Strings(all.Tags)
	last := r.URL.Query().Get("last")
	start := sort.SearchStrings(all.Tags, last)
	if last != "" && start < len(all.Tags) && all.Tags[start] == last {
		start++
	}
	end := min(start+f.pageSize, len(all.Tags))
	page := all.Tags[start:end]
	if end < len(all.Tags) {
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=%d&last=%s>; rel="next"`, repo, f.pageSize, url.QueryEscape(page[len(page)-1])))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"name": all.Name, "tags": page})
}

func (f *fakeRegistry) host() string { return strings.TrimPrefix(f.URL, "http://") }

func (f *fakeRegistry) failFirst(path string, fs ...failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[path] = append(f.failures[path], fs...)
}

func (f *fakeRegistry) listCount(repo string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists[repo]
}

// push pushes a distinct image per tag and returns the digests.
func (f *fakeRegistry) push(t *testing.T, repo string, tags ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tag := range tags {
		img, err := random.Image(32, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(f.host() + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		out[tag] = d.String()
	}
	return out
}

func fastOptions() images.ScanOptions {
	o := images.DefaultScanOptions()
	o.RetryWait = time.Millisecond
	o.Timeout = 30 * time.Second
	return o
}

type scanned struct {
	Policy, Tag, Digest, Warning string
	Tags                         int
	Truncated                    bool
}

func summarize(r *images.ScanResult) []scanned {
	var out []scanned
	for _, p := range r.Policies {
		out = append(out, scanned{p.Policy.ID(), p.Tag, p.Digest, p.Warning, p.Tags, p.Truncated})
	}
	return out
}

func TestScan(t *testing.T) {
	t.Parallel()
	reg := newFakeRegistry(t, 2)
	mono := reg.push(t, "org/mono", "api-0.20.0", "api-0.21.0", "api-0.22.0-rc.1", "sherpa-0.20.0", "sherpa-0.20.1", "api-0.99.0.sig")
	app := reg.push(t, "org/app", "1.23.0", "1.24.0", "latest")
	image := func(repo string) string { return reg.host() + "/" + repo }
	policies := []*images.Policy{
		policy(func(p *images.Policy) {
			p.Name, p.Image = "api", image("org/mono")
			p.FilterTags = &images.TagFilter{Pattern: `^api-(?P<v>.*)$`, Extract: "$v"}
			p.SemVer = &images.SemVerPolicy{Range: ">=0.1.0"}
		}),
		policy(func(p *images.Policy) {
			p.Name, p.Image = "sherpa", image("org/mono")
			p.FilterTags = &images.TagFilter{Pattern: `^sherpa-(?P<v>.*)$`, Extract: "$v"}
			p.SemVer = &images.SemVerPolicy{Range: ">=0.1.0"}
		}),
		policy(func(p *images.Policy) {
			p.Name, p.Image = "app", image("org/app")
			p.SemVer = &images.SemVerPolicy{Range: "^1.0.0"}
		}),
		policy(func(p *images.Policy) {
			p.Name, p.Image = "app-two", image("org/app")
			p.SemVer = &images.SemVerPolicy{Range: ">=2.0.0"}
		}),
	}
	res, err := images.Scan(context.Background(), policies, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []scanned{
		{"ImagePolicy/flux-system/api", "api-0.21.0", mono["api-0.21.0"], "", 6, false},
		{"ImagePolicy/flux-system/sherpa", "sherpa-0.20.1", mono["sherpa-0.20.1"], "", 6, false},
		{"ImagePolicy/flux-system/app", "1.24.0", app["1.24.0"], "", 3, false},
		{"ImagePolicy/flux-system/app-two", "", "", "no tag of " + image("org/app") + " matches the policy (3 tags listed); nothing to bump", 3, false},
	}
	if diff := cmp.Diff(want, summarize(res)); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	// One listing per repository, however many policies read it: the
	// 6 tags of org/mono in 3 pages of 2.
	if n := reg.listCount("org/mono"); n != 3 {
		t.Errorf("org/mono tag list requests = %d, want 3 (one listing, 3 pages)", n)
	}
	if n := reg.listCount("org/app"); n != 2 {
		t.Errorf("org/app tag list requests = %d, want 2 (one listing, 2 pages)", n)
	}
	if got := res.Warnings(); len(got) != 1 || !strings.HasPrefix(got[0], "ImagePolicy/flux-system/app-two: no tag") {
		t.Errorf("Warnings = %q", got)
	}
}

func TestScanMaxTags(t *testing.T) {
	t.Parallel()
	reg := newFakeRegistry(t, 2)
	reg.push(t, "org/many", "1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0")
	p := semverPolicy("*")
	p.Image = reg.host() + "/org/many"
	o := fastOptions()
	o.MaxTags = 3
	res, err := images.Scan(context.Background(), []*images.Policy{p}, o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Policies[0]
	// Pages of 2: the listing stops after the second page, cut to 3.
	if r.Tag != "1.2.0" || r.Tags != 3 || !r.Truncated || !strings.Contains(r.Warning, "more than 3 tags") {
		t.Errorf("result = %+v; want the latest of the first 3 tags, truncated, with a warning", r)
	}
	if n := reg.listCount("org/many"); n != 2 {
		t.Errorf("tag list requests = %d, want 2", n)
	}
}

func TestScanRetries(t *testing.T) {
	t.Parallel()
	reg := newFakeRegistry(t, 100)
	d := reg.push(t, "org/app", "1.0.0", "1.1.0")
	reg.failFirst("/v2/org/app/tags/list",
		failure{http.StatusTooManyRequests, "0"},
		failure{http.StatusServiceUnavailable, ""},
		failure{http.StatusBadGateway, ""})
	reg.failFirst("/v2/org/app/manifests/1.1.0", failure{http.StatusTooManyRequests, "0"})
	p := semverPolicy("*")
	p.Image = reg.host() + "/org/app"
	res, err := images.Scan(context.Background(), []*images.Policy{p}, fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Policies[0]; r.Tag != "1.1.0" || r.Digest != d["1.1.0"] {
		t.Errorf("result = %+v, want 1.1.0 with digest %s", r, d["1.1.0"])
	}
	if n := reg.listCount("org/app"); n != 1 {
		t.Errorf("successful tag list requests = %d, want 1", n)
	}

	// Out of retries: the error names the status, the registry, the image
	// and the policy.
	reg.failFirst("/v2/org/app/tags/list",
		failure{http.StatusServiceUnavailable, ""}, failure{http.StatusServiceUnavailable, ""},
		failure{http.StatusServiceUnavailable, ""})
	o := fastOptions()
	o.Retries = 2
	_, err = images.Scan(context.Background(), []*images.Policy{p}, o)
	var re *images.RegistryError
	if !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Scan = %v, want a RegistryError with status 503", err)
	}
	for _, w := range []string{"ImagePolicy/flux-system/app", reg.host(), p.Image} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
}

func TestScanInvalidPolicies(t *testing.T) {
	t.Parallel()
	bad := policy(func(p *images.Policy) {
		p.Name = "bad-regex"
		p.FilterTags = &images.TagFilter{Pattern: "("}
		p.SemVer = &images.SemVerPolicy{Range: "*"}
	})
	badRange := semverPolicy(">=1.0.0 <<2")
	badRange.Name = "bad-range"
	badImage := semverPolicy("*")
	badImage.Name, badImage.Image = "bad-image", "Not An Image"
	_, err := images.Scan(context.Background(), []*images.Policy{bad, badRange, badImage}, fastOptions())
	if err == nil {
		t.Fatal("Scan of invalid policies succeeded")
	}
	for _, w := range []string{"ImagePolicy/flux-system/bad-regex", "ImagePolicy/flux-system/bad-range", "ImagePolicy/flux-system/bad-image"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
}

func TestScanInsecureRegistries(t *testing.T) {
	t.Parallel()
	reg := newFakeRegistry(t, 100)
	reg.push(t, "org/app", "1.0.0")
	// registry.internal:5000 is not a loopback name, so it is HTTPS
	// unless declared insecure; the transport sends every request to the
	// test server and records the scheme asked for.
	var mu sync.Mutex
	var schemes []string
	target, _ := url.Parse(reg.URL)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path != "/v2/" { // go-containerregistry pings both schemes
			mu.Lock()
			schemes = append(schemes, r.URL.Scheme)
			mu.Unlock()
		}
		if r.URL.Scheme != "http" {
			return nil, errors.New("TLS is not served here")
		}
		r2 := r.Clone(r.Context())
		r2.URL.Host, r2.Host = target.Host, target.Host
		return http.DefaultTransport.RoundTrip(r2)
	})
	p := semverPolicy("*")
	p.Image = "registry.internal:5000/org/app"
	o := fastOptions()
	o.Transport = rt
	o.InsecureRegistries = []string{"registry.internal:5000"}
	res, err := images.Scan(context.Background(), []*images.Policy{p}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Policies[0].Tag != "1.0.0" {
		t.Errorf("tag = %q", res.Policies[0].Tag)
	}
	for _, s := range schemes {
		if s != "http" {
			t.Errorf("an insecure registry was asked over %s", s)
		}
	}

	// The policy's own insecure: true does the same.
	p.Insecure = true
	o.InsecureRegistries = nil
	if _, err := images.Scan(context.Background(), []*images.Policy{p}, o); err != nil {
		t.Errorf("Scan with insecure: true: %v", err)
	}

	// Without either, HTTPS is required.
	p.Insecure = false
	mu.Lock()
	schemes = nil
	mu.Unlock()
	if _, err := images.Scan(context.Background(), []*images.Policy{p}, o); err == nil {
		t.Error("Scan of an HTTPS registry over a transport without TLS succeeded")
	}
	for _, s := range schemes {
		if s != "https" {
			t.Errorf("a registry not declared insecure was asked over %s", s)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestScanUnreachable(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: the listener is closed at once.
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	p := semverPolicy("*")
	p.Image = host + "/org/app"
	_, err := images.Scan(context.Background(), []*images.Policy{p}, fastOptions())
	var re *images.RegistryError
	if !errors.As(err, &re) || re.StatusCode != 0 {
		t.Fatalf("Scan = %v, want a RegistryError without status", err)
	}
	for _, w := range []string{"ImagePolicy/flux-system/app", "registry " + host + " is unreachable", p.Image} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestScanDockerRegistry reads a real docker-registry with htpasswd
// authentication, with credentials from each source.
func TestScanDockerRegistry(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	digests := reg.MustPush(t, "team/app", "1.24.0", "1.25.0", "1.26.0-rc.1", "1.25.0.sig")
	p := semverPolicy(">=1.0.0")
	p.Image = reg.Image("team/app")
	p.SecretRef = "regcred"
	good := images.Basic{Username: reg.Username, Password: reg.Password, Source: "FERRY_REGISTRY_TEST_USERNAME"}
	wrong := images.Basic{Username: reg.Username, Password: "not-the-password", Source: "FERRY_SECRET_REGCRED_USERNAME"}
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	dockerConfig := `{"auths": {"http://` + reg.Host + `/v2/": {"auth": "` + auth + `"}}}`

	ok := []struct {
		name  string
		creds images.Credentials
	}{
		{"per-registry credentials", images.Credentials{Registries: map[string]images.Basic{reg.Host: good}}},
		{"secretRef credentials", images.Credentials{Secrets: map[string]images.Basic{"regcred": good}}},
		{"secretRef first, then the registry's", images.Credentials{
			Secrets:    map[string]images.Basic{"regcred": good},
			Registries: map[string]images.Basic{reg.Host: wrong},
		}},
		{"docker config.json", images.Credentials{DockerConfig: []byte(dockerConfig)}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			o := fastOptions()
			o.Credentials = tc.creds
			res, err := images.Scan(context.Background(), []*images.Policy{p}, o)
			if err != nil {
				t.Fatal(err)
			}
			if r := res.Policies[0]; r.Tag != "1.25.0" || r.Digest != digests["1.25.0"] || r.Tags != 4 {
				t.Errorf("result = %+v, want 1.25.0 (%s) of 4 tags", r, digests["1.25.0"])
			}
		})
	}

	bad := []struct {
		name  string
		creds images.Credentials
		want  string
	}{
		{"wrong password", images.Credentials{Secrets: map[string]images.Basic{"regcred": wrong}},
			"registry " + reg.Host + " rejected the credentials from FERRY_SECRET_REGCRED_USERNAME for " + p.Image + " (401 Unauthorized)"},
		{"no credentials", images.Credentials{},
			"registry " + reg.Host + " requires credentials to list the tags of " + p.Image + " (401 Unauthorized"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			o := fastOptions()
			o.Credentials = tc.creds
			_, err := images.Scan(context.Background(), []*images.Policy{p}, o)
			var re *images.RegistryError
			if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized {
				t.Fatalf("Scan = %v, want a 401 RegistryError", err)
			}
			if !strings.Contains(err.Error(), "ImagePolicy/flux-system/app: "+tc.want) {
				t.Errorf("error %q\ndoes not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "not-the-password") || strings.Contains(err.Error(), reg.Password) {
				t.Errorf("error %q shows a password", err)
			}
		})
	}
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, registry, secret string // "" for no spelling
	}{
		{"ghcr.io", "FERRY_REGISTRY_GHCR_IO", "FERRY_SECRET_GHCR_IO"},
		{"charts.example.com", "FERRY_REGISTRY_CHARTS_EXAMPLE_COM", "FERRY_SECRET_CHARTS_EXAMPLE_COM"},
		{"charts-example.com", "FERRY_REGISTRY_CHARTS__EXAMPLE_COM", "FERRY_SECRET_CHARTS__EXAMPLE_COM"},
		{"127.0.0.1:5000", "FERRY_REGISTRY_127_0_0_1___5000", "FERRY_SECRET_127_0_0_1___5000"},
		{"xn--bcher-kva.example", "FERRY_REGISTRY_XN____BCHER__KVA_EXAMPLE", "FERRY_SECRET_XN____BCHER__KVA_EXAMPLE"},
		{"reg-cred", "FERRY_REGISTRY_REG__CRED", "FERRY_SECRET_REG__CRED"},
		{"Quay.IO", "FERRY_REGISTRY_QUAY_IO", ""},
		{"[::1]:5000", "", ""},
		{"a_b", "", ""},
		{"a..b", "", ""},
		{"a.-b", "", ""},
		{"-a", "", ""},
		{"", "", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, rok := images.RegistryEnv(tc.in)
			s, sok := images.SecretEnv(tc.in)
			if !rok {
				r = ""
			}
			if !sok {
				s = ""
			}
			if d := cmp.Diff([]string{tc.registry, tc.secret}, []string{r, s}); d != "" {
				t.Errorf("RegistryEnv, SecretEnv (-want +got):\n%s", d)
			}
		})
	}
	if v, ok := images.SecretKeyEnv("hook-url", "ca.crt"); !ok || v != "FERRY_SECRET_HOOK__URL_CA_CRT" {
		t.Errorf("SecretKeyEnv(hook-url, ca.crt) = %q, %v", v, ok)
	}
}

// No two names spell alike: every spelling reads back as the one name it
// spells (decodeEnvName), over every name of up to five characters of
// the alphabet that matters ("a", "1", ".", "-", ":"), and over names
// that differ by one separator.
func TestEnvNamesOneToOne(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		if prefix != "" {
			if v, ok := images.SecretEnv(prefix); ok {
				if other, dup := seen[v]; dup {
					t.Errorf("%q and %q are both spelled %s", other, prefix, v)
				}
				seen[v] = prefix
				if back := decodeEnvName(strings.TrimPrefix(v, "FERRY_SECRET_")); back != prefix {
					t.Errorf("%s reads back as %q, not %q", v, back, prefix)
				}
			}
		}
		if n == 0 {
			return
		}
		for _, c := range []string{"a", "1", ".", "-", ":"} {
			walk(prefix+c, n-1)
		}
	}
	walk("", 5)
	if len(seen) < 100 {
		t.Fatalf("only %d names spelled", len(seen))
	}
	a, _ := images.RegistryEnv("charts.example.com")
	b, _ := images.RegistryEnv("charts-example.com")
	if a == b {
		t.Errorf("charts.example.com and charts-example.com share %s", a)
	}
}

// decodeEnvName reads a spelling back: a run of one "_" is ".", of three
// ":", of 2n n "-".
func decodeEnvName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '_' {
			b.WriteByte(strings.ToLower(s[i : i+1])[0])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '_' {
			j++
		}
		switch n := j - i; {
		case n == 1:
			b.WriteByte('.')
		case n == 3:
			b.WriteByte(':')
		case n%2 == 0:
			b.WriteString(strings.Repeat("-", n/2))
		default:
			b.WriteString("?")
		}
		i = j
	}
	return b.String()
}

// TestScanTokenRegistry reads a real docker-registry behind a token
// server, as GHCR, Docker Hub and Harbor work: one login and one token
// (with every repository's pull scope) serve every repository of the
// registry.
func TestScanTokenRegistry(t *testing.T) {
	t.Parallel()
	reg := registrytest.StartWith(t, registrytest.Options{Auth: registrytest.Token})
	var policies []*images.Policy
	want := map[string]string{}
	for _, repo := range []string{"team/a", "team/b", "other/c"} {
		d := reg.MustPush(t, repo, "1.0.0", "1.1.0", "2.0.0-rc.1")
		p := semverPolicy(">=1.0.0")
		p.Name, p.Image = strings.ReplaceAll(repo, "/", "-"), reg.Image(repo)
		policies = append(policies, p)
		want[p.Name] = d["1.1.0"]
	}
	before := reg.TokensIssued()
	o := fastOptions()
	o.Credentials.Registries = map[string]images.Basic{reg.Host: {Username: reg.Username, Password: reg.Password}}
	res, err := images.Scan(context.Background(), policies, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Policies {
		if r.Tag != "1.1.0" || r.Digest != want[r.Policy.Name] {
			t.Errorf("%s: %s %s, want 1.1.0 %s", r.Policy.ID(), r.Tag, r.Digest, want[r.Policy.Name])
		}
	}
	if n := reg.TokensIssued() - before; n != 1 {
		t.Errorf("the scan asked for %d tokens, want 1 for the 3 repositories", n)
	}

	o.Credentials.Registries[reg.Host] = images.Basic{Username: reg.Username, Password: "not-the-password", Source: "FERRY_REGISTRY_X_USERNAME/_PASSWORD"}
	_, err = images.Scan(context.Background(), policies[:1], o)
	var re *images.RegistryError
	if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Scan with a wrong password = %v, want a 401 RegistryError", err)
	}
	if want := "rejected the credentials from FERRY_REGISTRY_X_USERNAME/_PASSWORD for " + policies[0].Image; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// A scan's credentials go to the registry and to the token realm it
// names, and not to the CDN it sends tag lists or manifests to (on
// another port of the same host): go-containerregistry decides each
// request, and this is the test that it does for ferry bump.
func TestScanCredentialsBoundToOrigin(t *testing.T) {
	t.Parallel()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p"))
	for _, tc := range []struct {
		name                    string
		opts                    origintest.RegistryOptions
		wantRegistry, wantToken []string
	}{
		{name: "basic, tag lists on a CDN", opts: origintest.RegistryOptions{ToCDN: origintest.TagLists},
			wantRegistry: []string{basic}},
		{name: "basic, manifests on a CDN", opts: origintest.RegistryOptions{ToCDN: origintest.Manifests},
			wantRegistry: []string{basic}},
		{name: "token, tag lists on a CDN", opts: origintest.RegistryOptions{Token: true, ToCDN: origintest.TagLists},
			wantRegistry: []string{"Bearer origintest-registry-token"}, wantToken: []string{basic}},
		{name: "token, manifests on a CDN", opts: origintest.RegistryOptions{Token: true, ToCDN: origintest.Manifests},
			wantRegistry: []string{"Bearer origintest-registry-token"}, wantToken: []string{basic}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Username, tc.opts.Password = "u", "p"
			reg := origintest.NewRegistry(t, tc.opts)
			ref, err := name.ParseReference(reg.Host + "/team/app:1.25.0")
			if err != nil {
				t.Fatal(err)
			}
			img, err := random.Image(256, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "u", Password: "p"})); err != nil {
				t.Fatal(err)
			}
			reg.Reset()
			p := semverPolicy(">=1.0.0")
			p.Image = reg.Host + "/team/app"
			o := fastOptions()
			o.Credentials = images.Credentials{Registries: map[string]images.Basic{reg.Host: {Username: "u", Password: "p"}}}
			res, err := images.Scan(context.Background(), []*images.Policy{p}, o)
			if err != nil {
				t.Fatal(err)
			}
			if r := res.Policies[0]; r.Tag != "1.25.0" {
				t.Errorf("tag %q, want 1.25.0", r.Tag)
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
