package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/origin/origintest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// The "creds" class: credentials are bound to the exact origin
// (scheme://host:port) they are for. Each case starts real servers in
// its setup that record every request's Host and Authorization header,
// and checks, when the run is over, which origins received which
// credentials: their own, and no other (an archive the index lists on
// another host, a redirect to another port or to plain HTTP, a blob a
// registry sends to a CDN, a host whose variable names collide). The
// password is the corpus's canary, so the harness also finds it in any
// output it would leak into.

const credsUser = "chart-reader"

// credsAuth is the Authorization header of the cases' credentials.
var credsAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(credsUser+":"+hostileCanary))

// credsArgs render the charts target, with the chart cache in the folder
// the case gives ferry (a slice of its own: the harness fills it in).
func credsArgs() []string {
	return []string{"render", "--repo", "{{REPO}}", "charts", "--cache-dir", "{{OUT}}/cache"}
}

// credsRepo lays out the case's repo: a target charts whose HelmRelease
// shop/web takes chart web 1.0.0 from the HelmRepository
// flux-system/charts (spec its spec lines, more its other objects), and,
// with secret, the SOPS-encrypted Secret flux-system/chart-creds holding
// the credentials in the app target (rendered, not printed).
func credsRepo(t *testing.T, c *hostileRun, spec, more string, secret bool) {
	t.Helper()
	c.write(t, "ferry.yaml", "targets:\n  - name: app\n    path: app\n  - name: charts\n    path: charts\n")
	c.write(t, "charts/kustomization.yaml", "resources: [source.yaml, release.yaml]\n")
	c.write(t, "charts/source.yaml", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: flux-system}\nspec:\n  interval: 1h\n"+spec+more)
	c.write(t, "charts/release.yaml", credsRelease("web", "charts"))
	if secret {
		c.write(t, "app/kustomization.yaml", "resources: [deployment.yaml, secret.yaml, creds.yaml]\n")
		c.encrypt(t, "app/creds.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: chart-creds, namespace: flux-system}\nstringData:\n  username: "+credsUser+"\n  password: "+strconv.Quote(hostileCanary)+"\n", "^(data|stringData)$")
	}
}

// credsRelease is the HelmRelease shop/name of chart web 1.0.0 from the
// HelmRepository flux-system/source.
func credsRelease(name, source string) string {
	return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + name + ", namespace: shop}\nspec:\n  interval: 10m\n" +
		"  chart:\n    spec:\n      chart: web\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: " + source + ", namespace: flux-system}\n"
}

// webArchive is the web chart's archive, 1.0.0.
func webArchive(t *testing.T) []byte {
	t.Helper()
	archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	return archive
}

// webIndex is an index.yaml listing web 1.0.0 at url.
func webIndex(url string, archive []byte) []byte {
	return fmt.Appendf(nil, "apiVersion: v1\nentries:\n  web:\n    - name: web\n      version: 1.0.0\n      urls: [%q]\n      digest: %s\n", url, helmtest.Digest(archive))
}

// credsFiles serves files by path; with auth only to requests carrying
// the cases' credentials.
func credsFiles(files map[string][]byte, auth bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); auth && (!ok || u != credsUser || p != hostileCanary) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if b, ok := files[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	})
}

// received checks, once the case has run, the Authorization headers
// each server received (by name) against want, and that each received a
// request at all.
func received(t *testing.T, servers map[string]func() []origintest.Request, want map[string][]string) {
	t.Cleanup(func() {
		got := map[string][]string{}
		for name, reqs := range servers {
			rs := reqs()
			if len(rs) == 0 {
				t.Errorf("%s received no request", name)
			}
			got[name] = nil
			for _, r := range rs {
				if r.Authorization != "" && !slices.Contains(got[name], r.Authorization) {
					got[name] = append(got[name], r.Authorization)
				}
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Authorization headers received (-want +got):\n%s", d)
		}
	})
}

// only keeps the requests of reqs that pass keep.
func only(reqs func() []origintest.Request, keep func(origintest.Request) bool) func() []origintest.Request {
	return func() []origintest.Request {
		return slices.DeleteFunc(reqs(), func(r origintest.Request) bool { return !keep(r) })
	}
}

func hostileCredsCases() []hostileCase {
	return []hostileCase{
		{name: "index lists the archive on another host", class: "creds", succeeds: true, args: credsArgs(),
			setup: func(t *testing.T, c *hostileRun) {
				archive := webArchive(t)
				cdn := origintest.NewServer(t, credsFiles(map[string][]byte{"/web-1.0.0.tgz": archive}, false))
				repo := origintest.NewServer(t, credsFiles(map[string][]byte{"/index.yaml": webIndex(cdn.URL+"/web-1.0.0.tgz", archive)}, true))
				credsRepo(t, c, "  url: "+repo.URL+"\n  secretRef: {name: chart-creds}\n", "", true)
				received(t, map[string]func() []origintest.Request{"repository": repo.Requests, "archive host": cdn.Requests},
					map[string][]string{"repository": {credsAuth}, "archive host": nil})
			}},
		// The secretRef's Secret (in the renders) does not follow the
		// repository's index to another port; whether a URL the head
		// changed gets it at all is for the base revision to say.
		{name: "secretRef credentials, index redirected to another port", class: "creds", succeeds: true, args: credsArgs(),
			setup: func(t *testing.T, c *hostileRun) {
				archive := webArchive(t)
				mirror := origintest.NewServer(t, credsFiles(map[string][]byte{"/index.yaml": webIndex("web-1.0.0.tgz", archive)}, false))
				mux := http.NewServeMux()
				mux.Handle("/index.yaml", origintest.Redirect(mirror.Origin))
				mux.Handle("/web-1.0.0.tgz", credsFiles(map[string][]byte{"/web-1.0.0.tgz": archive}, true))
				repo := origintest.NewServer(t, mux)
				credsRepo(t, c, "  url: "+repo.URL+"\n  secretRef: {name: chart-creds}\n", "", true)
				received(t, map[string]func() []origintest.Request{"repository": repo.Requests, "other port": mirror.Requests},
					map[string][]string{"repository": {credsAuth}, "other port": nil})
			}},
		{name: "https repository redirects the archive to plain HTTP on its own port", class: "creds", succeeds: true, args: credsArgs(),
			setup: func(t *testing.T, c *hostileRun) {
				archive := webArchive(t)
				files := map[string][]byte{"/index.yaml": webIndex("web-1.0.0.tgz", archive), "/web-1.0.0.tgz": archive}
				repo := origintest.NewDualServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.TLS != nil && r.URL.Path == "/web-1.0.0.tgz" {
						origintest.Redirect("http://"+r.Host).ServeHTTP(w, r)
						return
					}
					credsFiles(files, r.TLS != nil).ServeHTTP(w, r)
				}))
				ca := filepath.Join(c.dir, "ca.pem")
				if err := os.WriteFile(ca, repo.CertPEM(), 0o644); err != nil {
					t.Fatal(err)
				}
				c.env = map[string]string{"SSL_CERT_FILE": ca}
				credsRepo(t, c, "  url: "+repo.URL+"\n  secretRef: {name: chart-creds}\n", "", true)
				scheme := func(s string) func(origintest.Request) bool {
					return func(r origintest.Request) bool { return r.Scheme == s }
				}
				received(t, map[string]func() []origintest.Request{"https": only(repo.Requests, scheme("https")), "plain http": only(repo.Requests, scheme("http"))},
					map[string][]string{"https": {credsAuth}, "plain http": nil})
			}},
		{name: "OCI registry sends the chart blob to a CDN", class: "creds", succeeds: true, args: credsArgs(),
			setup: func(t *testing.T, c *hostileRun) {
				reg := origintest.NewRegistry(t, origintest.RegistryOptions{Username: credsUser, Password: hostileCanary, Token: true, ToCDN: origintest.Blobs})
				helmtest.Push(t, reg.Host, "charts", webArchive(t), credsUser, hostileCanary)
				reg.Reset()
				credsRepo(t, c, "  type: oci\n  url: oci://"+reg.Host+"/charts\n  secretRef: {name: chart-creds}\n", "", true)
				received(t, map[string]func() []origintest.Request{"registry": reg.Requests, "token realm": reg.TokenServer.Requests, "CDN": reg.CDN.Requests},
					map[string][]string{"registry": {"Bearer origintest-registry-token"}, "token realm": {credsAuth}, "CDN": nil})
			}},
		// Both hosts are reached through an HTTP proxy that records the
		// Host of each request.
		{name: "colliding host names in the environment", class: "creds", succeeds: true, args: credsArgs(),
			want: []string{"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME is not read for host charts-example.com", "FERRY_REGISTRY_CHARTS__EXAMPLE_COM_USERNAME"},
			setup: func(t *testing.T, c *hostileRun) {
				archive := webArchive(t)
				files := map[string][]byte{"/index.yaml": webIndex("web-1.0.0.tgz", archive), "/web-1.0.0.tgz": archive}
				proxy := origintest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					credsFiles(files, r.Host == "charts.example.com").ServeHTTP(w, r)
				}))
				c.env = map[string]string{"HTTP_PROXY": proxy.URL,
					"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME": credsUser, "FERRY_REGISTRY_CHARTS_EXAMPLE_COM_PASSWORD": hostileCanary}
				credsRepo(t, c, "  url: http://charts.example.com\n",
					"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: dashed, namespace: flux-system}\nspec: {interval: 1h, url: \"http://charts-example.com\"}\n", false)
				c.write(t, "charts/kustomization.yaml", "resources: [source.yaml, release.yaml, release2.yaml]\n")
				c.write(t, "charts/release2.yaml", credsRelease("web2", "dashed"))
				host := func(h string) func(origintest.Request) bool {
					return func(r origintest.Request) bool { return r.Host == h }
				}
				received(t, map[string]func() []origintest.Request{"charts.example.com": only(proxy.Requests, host("charts.example.com")), "charts-example.com": only(proxy.Requests, host("charts-example.com"))},
					map[string][]string{"charts.example.com": {credsAuth}, "charts-example.com": nil})
			}},
		// The former spelling of chart-creds is also chart.creds's, a
		// Secret another source names: it is read for neither, and the
		// release fails before anything is fetched.
		{name: "former spelling of a secretRef shared with another Secret", class: "creds", args: credsArgs(),
			want: []string{"HelmRelease/shop/web", "Secret/flux-system/chart-creds", "FERRY_SECRET_CHART__CREDS_USERNAME",
				"FERRY_SECRET_CHART_CREDS_USERNAME is not read for Secret chart-creds: that former spelling also stands for Secret chart.creds"},
			setup: func(t *testing.T, c *hostileRun) {
				archive := webArchive(t)
				repo := origintest.NewServer(t, credsFiles(map[string][]byte{"/index.yaml": webIndex("web-1.0.0.tgz", archive), "/web-1.0.0.tgz": archive}, true))
				c.env = map[string]string{"FERRY_SECRET_CHART_CREDS_USERNAME": credsUser, "FERRY_SECRET_CHART_CREDS_PASSWORD": hostileCanary}
				credsRepo(t, c, "  url: "+repo.URL+"\n  secretRef: {name: chart-creds}\n",
					"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: other, namespace: flux-system}\nspec: {interval: 1h, url: \""+repo.URL+"/other\", secretRef: {name: chart.creds}}\n", false)
				t.Cleanup(func() {
					if n := len(repo.Requests()); n != 0 {
						t.Errorf("the repository received %d requests, want none", n)
					}
				})
			}},
		{name: "bump: registry sends tag lists and manifests to a CDN", class: "creds", succeeds: true,
			args: []string{"bump", "--dry-run", "--repo", "{{REPO}}"},
			setup: func(t *testing.T, c *hostileRun) {
				reg := origintest.NewRegistry(t, origintest.RegistryOptions{Username: credsUser, Password: hostileCanary,
					ToCDN: func(r *http.Request) bool { return origintest.TagLists(r) || origintest.Manifests(r) }})
				ref, err := name.ParseReference(reg.Host + "/team/app:1.1.0")
				if err != nil {
					t.Fatal(err)
				}
				img, err := random.Image(256, 1)
				if err != nil {
					t.Fatal(err)
				}
				if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: credsUser, Password: hostileCanary})); err != nil {
					t.Fatal(err)
				}
				reg.Reset()
				c.env = map[string]string{"FERRY_SECRET_REGCRED_USERNAME": credsUser, "FERRY_SECRET_REGCRED_PASSWORD": hostileCanary}
				c.write(t, "images.yaml", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: app, namespace: flux-system}\nspec: {image: "+reg.Host+"/team/app, interval: 5m, secretRef: {name: regcred}}\n"+
					"---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: app, namespace: flux-system}\nspec: {imageRepositoryRef: {name: app}, policy: {semver: {range: \">=1.0.0\"}}}\n")
				c.write(t, "app/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n"+
					"          image: "+reg.Host+"/team/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n")
				received(t, map[string]func() []origintest.Request{"registry": reg.Requests, "CDN": reg.CDN.Requests},
					map[string][]string{"registry": {credsAuth}, "CDN": nil})
			}},
	}
}
