// Package helmtest makes chart sources for tests with Helm's own SDK:
// chart archives packaged from a folder, a static HTTP chart repository
// (index.yaml and .tgz files, as GitHub Pages and S3 serve them) on
// 127.0.0.1 that counts the requests it answers, and charts pushed to an
// OCI registry with Helm's registry client.
package helmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Package packages the chart folder dir as version (Chart.yaml's version
// replaced) with Helm's chartutil.Save and returns the archive and the
// chart's metadata.
func Package(t testing.TB, dir, version string) ([]byte, *chart.Metadata) {
	t.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Metadata.Version = version
	out := t.TempDir()
	p, err := chartutil.Save(c, out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b, c.Metadata
}

// RepoOptions configure a Repo.
type RepoOptions struct {
	// Username and Password, when set, are the basic credentials every
	// request must carry (401 otherwise).
	Username, Password string
	// AbsoluteURLs writes absolute archive URLs into the index instead of
	// URLs relative to it.
	AbsoluteURLs bool
}

// Repo is an HTTP chart repository served from a folder.
type Repo struct {
	// URL is http://127.0.0.1:PORT.
	URL string
	// Dir is the folder served.
	Dir string

	opts  RepoOptions
	index *repo.IndexFile

	mu       sync.Mutex
	requests map[string]int
	authSeen map[string]int
}

// NewRepo serves an empty repository until the test ends.
func NewRepo(t testing.TB, opts RepoOptions) *Repo {
	t.Helper()
	r := &Repo{Dir: t.TempDir(), opts: opts, index: repo.NewIndexFile(), requests: map[string]int{}, authSeen: map[string]int{}}
	files := http.FileServer(http.Dir(r.Dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests[req.URL.Path]++
		if req.Header.Get("Authorization") != "" {
			r.authSeen[req.URL.Path]++
		}
		r.mu.Unlock()
		if opts.Username != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != opts.Username || p != opts.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="helmtest"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.writeIndex(t)
	return r
}

// Add packages the chart folder dir once per version, puts the archives
// in the repository and lists them in its index with their digests. It
// returns each version's archive.
func (r *Repo) Add(t testing.TB, dir string, versions ...string) map[string][]byte {
	t.Helper()
	archives := map[string][]byte{}
	for _, v := range versions {
		b, md := Package(t, dir, v)
		archives[v] = b
		r.AddArchive(t, md, b, Digest(b))
	}
	return archives
}

// AddArchive puts archive in the repository as <name>-<version>.tgz of
// md and lists it in the index with digest (hex, as helm repo index
// writes it; "" for none).
func (r *Repo) AddArchive(t testing.TB, md *chart.Metadata, archive []byte, digest string) {
	t.Helper()
	file := md.Name + "-" + md.Version + ".tgz"
	r.Put(t, file, archive)
	base := ""
	if r.opts.AbsoluteURLs {
		base = r.URL + "/"
	}
	if err := r.index.MustAdd(md, file, base, digest); err != nil {
		t.Fatal(err)
	}
	r.index.SortEntries()
	r.writeIndex(t)
}

// Put writes a file of the repository, replacing what it held.
func (r *Repo) Put(t testing.TB, file string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.Dir, file), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *Repo) writeIndex(t testing.TB) {
	t.Helper()
	if err := r.index.WriteFile(filepath.Join(r.Dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Requests is how many requests for path (/index.yaml, /chart-1.0.0.tgz)
// the repository answered, whatever their outcome.
func (r *Repo) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// AuthorizationSeen is how many requests for path carried an
// Authorization header.
func (r *Repo) AuthorizationSeen(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.authSeen[path]
}

// Digest is the hex SHA-256 of b, as an index.yaml gives it.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Pushed is a chart pushed to an OCI registry.
type Pushed struct {
	// Ref is host/path/name:version.
	Ref string
	// Manifest is the digest of the artifact's manifest, Chart the digest
	// of its chart layer (the archive's), both sha256:<hex>.
	Manifest, Chart string
}

// Push pushes archive to the OCI registry at host (plain HTTP) under
// host/path/<chart name>:<version>, with Helm's registry client logged in
// with username and password.
func Push(t testing.TB, host, path string, archive []byte, username, password string) Pushed {
	t.Helper()
	md, err := loader.LoadArchive(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := registry.NewClient(
		registry.ClientOptBasicAuth(username, password),
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")),
	)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/" + strings.Trim(path, "/") + "/" + md.Name() + ":" + strings.ReplaceAll(md.Metadata.Version, "+", "_")
	res, err := c.Push(archive, ref)
	if err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return Pushed{Ref: ref, Manifest: res.Manifest.Digest, Chart: res.Chart.Digest}
}

// Proxy passes requests on to a server and counts them, so a test can
// say how often a registry was asked for a blob.
type Proxy struct {
	// Host is 127.0.0.1:PORT.
	Host string

	mu       sync.Mutex
	requests map[string]int
}

// NewProxy proxies to the plain-HTTP server at host until the test ends.
func NewProxy(t testing.TB, host string) *Proxy {
	t.Helper()
	p := &Proxy{requests: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		p.requests[req.Method+" "+req.URL.Path]++
		p.mu.Unlock()
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	p.Host = strings.TrimPrefix(srv.URL, "http://")
	return p
}

// Requests is how many requests of method for path it passed on.
func (p *Proxy) Requests(method, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[method+" "+path]
}
