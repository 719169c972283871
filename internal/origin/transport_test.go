package origin_test

import (
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/origin"
	"github.com/ferry-ci/ferry/internal/origin/origintest"
)

func basicHeader(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// ok answers 200 with a body.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })

// Basic sends the credentials to their origin only: not to a redirect to
// another port of the same host (which http.Client itself would follow
// with the header), nor to plain HTTP on the same host and port, nor to
// plain HTTP elsewhere, nor to a URL elsewhere that the caller asks for
// with a header of its own; a redirect back home gets them again.
func TestBasic(t *testing.T) {
	t.Parallel()
	other := origintest.NewServer(t, ok)
	plain := origintest.NewServer(t, ok)
	mux := http.NewServeMux()
	home := origintest.NewDualServer(t, mux)
	mux.Handle("/index.yaml", ok)
	mux.Handle("/to-other/", origintest.Redirect(other.Origin))
	mux.Handle("/to-plain/", origintest.Redirect(plain.Origin))
	mux.Handle("/downgrade/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			ok(w, r)
			return
		}
		origintest.Redirect("http://"+r.Host).ServeHTTP(w, r)
	}))
	back := origintest.NewServer(t, origintest.Redirect(home.Origin))

	client := &http.Client{Transport: origin.Basic(home.Transport(), home.Origin, "u", "p")}
	get := func(u string, header bool) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if header {
			req.Header.Set("Authorization", "Bearer set-by-the-caller")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", u, resp.Status)
		}
	}
	get(home.URL+"/index.yaml", false)
	get(home.URL+"/to-other/a.tgz", false)
	get(home.URL+"/to-plain/a.tgz", false)
	get(home.URL+"/downgrade/a.tgz", false)
	get(other.URL+"/direct.tgz", true)
	get(back.URL+"/index.yaml", false)

	got := map[string][]string{"other": other.Authorizations(), "plain": plain.Authorizations(), "back": back.Authorizations()}
	for _, r := range home.Requests() {
		k := "home " + r.Scheme
		if r.Authorization != "" && !slices.Contains(got[k], r.Authorization) {
			got[k] = append(got[k], r.Authorization)
		}
	}
	want := map[string][]string{"home https": {basicHeader("u", "p")}, "other": nil, "plain": nil, "back": nil}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Authorization headers received (-want +got):\n%s", d)
	}
	var schemes []string
	for _, r := range home.Requests() {
		schemes = append(schemes, r.Scheme+" "+r.Path)
	}
	wantSchemes := []string{"https /index.yaml", "https /to-other/a.tgz", "https /to-plain/a.tgz", "https /downgrade/a.tgz", "http /downgrade/a.tgz", "https /index.yaml"}
	if d := cmp.Diff(wantSchemes, schemes); d != "" {
		t.Errorf("requests home received (-want +got):\n%s", d)
	}
	if n := len(other.Requests()); n != 2 {
		t.Errorf("the other origin received %d requests, want 2 (the redirect and the direct request)", n)
	}
}

// The reason Basic sets the header on a copy of each request: http.Client
// copies a request's Authorization header onto the redirect to another
// port of the same host name. (If Go ever stops doing that, this test
// says so; Basic does not depend on it.)
func TestClientForwardsAuthorizationAcrossPorts(t *testing.T) {
	t.Parallel()
	other := origintest.NewServer(t, ok)
	home := origintest.NewServer(t, origintest.Redirect(other.Origin))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, home.URL+"/index.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("u", "p")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := cmp.Diff([]string{basicHeader("u", "p")}, other.Authorizations()); d != "" {
		t.Errorf("headers at the other port (-want +got):\n%s", d)
	}
}
