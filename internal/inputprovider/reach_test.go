package inputprovider_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/inputprovider"
)

// recorder is a server that answers every list with one branch and
// remembers the Authorization header of every request.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]map[string]any{{"name": "main", "commit": map[string]any{"sha": "abc", "id": "abc"}}})
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) headers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

func hostOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// The job's token goes to its forge's API origin and nowhere else: a
// provider on another host, allowed, is read without it; one on a host
// not allowed is not called at all.
func TestTokenOnlyToTheForge(t *testing.T) {
	forgeAPI, other := newRecorder(t), newRecorder(t)
	opts := inputprovider.Options{
		Forge:      &inputprovider.Forge{Kind: inputprovider.KindGitea, ServerURL: forgeAPI.URL, APIURL: forgeAPI.URL, Token: "job-token"},
		AllowHosts: []string{hostOf(t, other.URL)},
	}
	spec := func(typ, url string) string {
		return "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata: {name: p, namespace: ns}\nspec: {type: " + typ + ", url: '" + url + "'}"
	}
	if _, err := inputprovider.Resolve(t.Context(), provider(t, spec("GiteaBranch", forgeAPI.URL+"/lab/app")), opts); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"GiteaBranch", "GitHubBranch"} {
		if _, err := inputprovider.Resolve(t.Context(), provider(t, spec(typ, other.URL+"/lab/app")), opts); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range forgeAPI.headers() {
		if h != "token job-token" {
			t.Errorf("forge got Authorization %q, want the job's token", h)
		}
	}
	if len(forgeAPI.headers()) == 0 {
		t.Error("the forge was not called")
	}
	for _, h := range other.headers() {
		if h != "" {
			t.Errorf("another host got Authorization %q", h)
		}
	}
	if len(other.headers()) == 0 {
		t.Error("the allowed host was not called")
	}

	// A GitHub provider on the Gitea forge's host is not of the forge's
	// kind: it gets no token either, and its host is not allowed.
	n := len(forgeAPI.headers())
	_, err := inputprovider.Resolve(t.Context(), provider(t, spec("GitHubPullRequest", forgeAPI.URL+"/lab/app")), inputprovider.Options{Forge: opts.Forge})
	wantSkip(t, err, "is not the forge the job runs on")
	_, err = inputprovider.Resolve(t.Context(), provider(t, spec("GiteaBranch", other.URL+"/lab/app")), inputprovider.Options{Forge: opts.Forge})
	wantSkip(t, err, "inputProviderAPIs: {allowHosts: [")
	_, err = inputprovider.Resolve(t.Context(), provider(t, spec("OCIArtifactTag", "oci://"+hostOf(t, other.URL)+"/app")), inputprovider.Options{Forge: opts.Forge})
	wantSkip(t, err, "is not allowed")
	if len(forgeAPI.headers()) != n {
		t.Error("a provider ferry may not call reached the forge")
	}
}

// What Resolve cannot do is a SkipError saying so: a type it does not
// call, a change request held by spec.skip (the cluster keeps inputs a
// render cannot know), an anonymous call refused.
func TestResolveSkips(t *testing.T) {
	gh := githubtest.New(t)
	token := gh.AddUser("ci-bot")
	n := gh.AddPullRequest("lab", "app", "ci-bot", "feat/x", "main", "X", "")
	gh.AddLabels("lab", "app", n, "deploy/preview")
	forge := &inputprovider.Forge{Kind: inputprovider.KindGitHub, ServerURL: "https://github.example.com", APIURL: gh.URL, Token: token}
	doc := func(spec string) string {
		return "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata: {name: p, namespace: ns}\nspec:\n" + spec
	}
	_, err := inputprovider.Resolve(t.Context(), provider(t, doc("  type: GitLabMergeRequest\n  url: https://gitlab.com/a/b")), inputprovider.Options{Forge: forge})
	wantSkip(t, err, "ferry does not call the API of type GitLabMergeRequest")

	_, err = inputprovider.Resolve(t.Context(), provider(t, doc("  type: GitHubPullRequest\n  url: https://github.example.com/lab/app\n  skip: {labels: ['!ci/passed']}")), inputprovider.Options{Forge: forge})
	wantSkip(t, err, "change request 1 is held by spec.skip.labels (!ci/passed)")

	got, err := inputprovider.Resolve(t.Context(), provider(t, doc("  type: GitHubPullRequest\n  url: https://github.example.com/lab/app\n  skip: {labels: [paused]}")), inputprovider.Options{Forge: forge})
	if err != nil || len(got) != 1 {
		t.Errorf("a change request no skip rule holds: %v, %v", got, err)
	}

	// The test server refuses anonymous calls, as a private repository's
	// API does.
	ghHost := strings.TrimSuffix(strings.TrimPrefix(gh.URL, "http://"), "/")
	_, err = inputprovider.Resolve(t.Context(), provider(t, doc("  type: GitHubBranch\n  url: "+strings.TrimSuffix(gh.URL, "/")+"/lab/app")), inputprovider.Options{AllowHosts: []string{ghHost}})
	wantSkip(t, err, "answered 401 to an anonymous call")
}

// allowHosts entries are host:port, or a host alone for the scheme's
// default port: another port of the same host is another host.
func TestAllowHostsPorts(t *testing.T) {
	doc := func(url string) string {
		return "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata: {name: p, namespace: ns}\nspec: {type: OCIArtifactTag, url: '" + url + "'}"
	}
	for _, url := range []string{"oci://registry.example.com:5000/app", "oci://other.example.com/app"} {
		_, err := inputprovider.Resolve(t.Context(), provider(t, doc(url)), inputprovider.Options{AllowHosts: []string{"registry.example.com"}})
		wantSkip(t, err, "is not allowed")
	}
}
