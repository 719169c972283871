package githubtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge/githubtest"
)

func do(t *testing.T, method, url, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}

// at returns the value at a path of keys and indexes in decoded JSON.
func at(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

func TestAuthentication(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("Octo")
	resp, b := do(t, "GET", s.URL+"user", "", "")
	if resp.StatusCode != 401 || at(decode(t, b), "message") != "Requires authentication" {
		t.Errorf("no token: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, "GET", s.URL+"user", "nope", "")
	if resp.StatusCode != 401 || at(decode(t, b), "message") != "Bad credentials" {
		t.Errorf("bad token: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("GET", s.URL+"user", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r2.Body)
	r2.Body.Close()
	u := decode(t, b)
	if r2.StatusCode != 200 || at(u, "login") != "Octo" || at(u, "id") == nil || at(u, "type") != "User" {
		t.Errorf("GET /user: %d %s", r2.StatusCode, b)
	}
}

func TestDocumentedJSON(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "Change", "body")
	is := s.AddIssue("acme", "fleet", "ferry-bot", "Drift", "b", "ferry-drift")
	s.AddComment("acme", "fleet", pr, "ferry-bot", "hello")

	_, b := do(t, "GET", s.URL+"repos/acme/fleet/issues/1/comments", tok, "")
	c := at(decode(t, b), 0)
	for _, k := range []string{"id", "node_id", "url", "html_url", "issue_url", "body", "user", "created_at", "updated_at", "author_association"} {
		if at(c, k) == nil {
			t.Errorf("comment lacks %q: %s", k, b)
		}
	}
	if at(c, "user", "login") != "ferry-bot" || at(c, "body") != "hello" {
		t.Errorf("comment: %s", b)
	}

	_, b = do(t, "GET", s.URL+"repos/acme/fleet/issues?state=all&direction=asc", tok, "")
	list := decode(t, b)
	if at(list, 0, "number") != float64(pr) || at(list, 0, "pull_request", "url") == nil {
		t.Errorf("a pull request in the issue list must carry pull_request: %s", b)
	}
	if at(list, 1, "number") != float64(is) || at(list, 1, "pull_request") != nil || at(list, 1, "labels", 0, "name") != "ferry-drift" {
		t.Errorf("an issue in the issue list: %s", b)
	}

	_, b = do(t, "GET", s.URL+"repos/acme/fleet/pulls?head=acme:feature&base=main", tok, "")
	p := at(decode(t, b), 0)
	got := map[string]any{
		"number": at(p, "number"), "state": at(p, "state"), "head.ref": at(p, "head", "ref"),
		"head.label": at(p, "head", "label"), "base.ref": at(p, "base", "ref"), "user.login": at(p, "user", "login"),
	}
	want := map[string]any{
		"number": float64(pr), "state": "open", "head.ref": "feature", "head.label": "acme:feature", "base.ref": "main", "user.login": "ferry-bot",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pull request (-want +got):\n%s", diff)
	}
	if sha, _ := at(p, "head", "sha").(string); len(sha) != 40 {
		t.Errorf("head.sha %q is not a commit hash", sha)
	}
	_, b = do(t, "GET", s.URL+"repos/acme/fleet/pulls?head=acme:other", tok, "")
	if string(b) != "[]\n" {
		t.Errorf("no match must be an empty array, got %s", b)
	}
}

func TestPaginationLinks(t *testing.T) {
	s := githubtest.New(t)
	s.SetPerPage(2)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	for range 5 {
		s.AddComment("acme", "fleet", pr, "ferry-bot", "c")
	}
	base := s.URL + "repos/acme/fleet/issues/1/comments"
	resp, b := do(t, "GET", base+"?per_page=100", tok, "")
	if n := len(decode(t, b).([]any)); n != 2 {
		t.Errorf("page 1 has %d comments, want 2", n)
	}
	want := `<` + base + `?page=2&per_page=100>; rel="next", <` + base + `?page=3&per_page=100>; rel="last"`
	if got := resp.Header.Get("Link"); got != want {
		t.Errorf("Link\n got %s\nwant %s", got, want)
	}
	resp, b = do(t, "GET", base+"?page=3", tok, "")
	if n := len(decode(t, b).([]any)); n != 1 {
		t.Errorf("page 3 has %d comments, want 1", n)
	}
	if got := resp.Header.Get("Link"); strings.Contains(got, `rel="next"`) || !strings.Contains(got, `rel="prev"`) {
		t.Errorf("last page Link: %s", got)
	}
}

func TestValidationAndRecording(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	long, _ := json.Marshal(map[string]string{"body": strings.Repeat("x", githubtest.MaxBody+1)})
	resp, b := do(t, "POST", s.URL+"repos/acme/fleet/issues/1/comments", tok, string(long))
	v := decode(t, b)
	if resp.StatusCode != 422 || at(v, "message") != "Validation Failed" ||
		at(v, "errors", 0, "message") != "body is too long (maximum is 65536 characters)" || at(v, "errors", 0, "resource") != "IssueComment" {
		t.Errorf("too long: %d %s", resp.StatusCode, b)
	}
	resp, _ = do(t, "POST", s.URL+"repos/acme/fleet/issues/1/comments", tok, `{"body":"ok"}`)
	if resp.StatusCode != 201 {
		t.Errorf("create: %d", resp.StatusCode)
	}
	resp, b = do(t, "POST", s.URL+"repos/acme/fleet/pulls", tok, `{"title":"again","head":"feature","base":"main"}`)
	if resp.StatusCode != 422 || !strings.Contains(string(b), "A pull request already exists for acme:feature.") {
		t.Errorf("duplicate pull request: %d %s", resp.StatusCode, b)
	}
	resp, _ = do(t, "GET", s.URL+"repos/acme/nope/issues", tok, "")
	if resp.StatusCode != 404 {
		t.Errorf("unknown repository: %d", resp.StatusCode)
	}
	var writes []string
	for _, r := range s.Writes() {
		writes = append(writes, r.Method+" "+r.Path+" "+r.User)
	}
	want := []string{
		"POST /repos/acme/fleet/issues/1/comments ferry-bot",
		"POST /repos/acme/fleet/issues/1/comments ferry-bot",
		"POST /repos/acme/fleet/pulls ferry-bot",
	}
	if diff := cmp.Diff(want, writes); diff != "" {
		t.Errorf("recorded writes (-want +got):\n%s", diff)
	}
	if got := s.Comments("acme", "fleet", pr); len(got) != 1 || got[0].Body != "ok" {
		t.Errorf("comments: %+v", got)
	}
}

func TestCommitStatusJSON(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	s.AddRepo("acme", "fleet")
	sha := "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	statuses := s.URL + "repos/acme/fleet/statuses/" + sha

	resp, b := do(t, "POST", statuses, tok, `{"state":"pending","target_url":"https://ci.example.com/1","description":"applying","context":"kustomization/apps"}`)
	st := decode(t, b)
	if resp.StatusCode != 201 || resp.Header.Get("Location") != statuses {
		t.Errorf("create: %d, Location %q: %s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	// The fields of "Create a commit status" in GitHub's REST reference.
	for _, k := range []string{"url", "avatar_url", "id", "node_id", "state", "description", "target_url", "context", "created_at", "updated_at", "creator"} {
		if at(st, k) == nil {
			t.Errorf("status lacks %q: %s", k, b)
		}
	}
	if at(st, "url") != statuses || at(st, "creator", "login") != "ferry-bot" {
		t.Errorf("status: %s", b)
	}
	// The context defaults to "default"; description and target_url are null when unset.
	_, b = do(t, "POST", statuses, tok, `{"state":"success"}`)
	if st := decode(t, b); at(st, "context") != "default" || at(st, "description") != nil || at(st, "target_url") != nil {
		t.Errorf("a status with the state alone: %s", b)
	}
	do(t, "POST", statuses, tok, `{"state":"failure","description":"apply failed","context":"kustomization/apps"}`)

	// Listed newest first, by full SHA or by the branch of a pull request.
	_, b = do(t, "GET", s.URL+"repos/acme/fleet/commits/"+sha+"/statuses", tok, "")
	list := decode(t, b)
	got := []any{at(list, 0, "state"), at(list, 1, "state"), at(list, 2, "state"), at(list, 3, "state")}
	if diff := cmp.Diff([]any{"failure", "success", "pending", nil}, got); diff != "" {
		t.Errorf("listed states (-want +got):\n%s", diff)
	}
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	head := s.PullRequests("acme", "fleet")[0].PullRequest.HeadSHA
	do(t, "POST", s.URL+"repos/acme/fleet/statuses/"+head, tok, `{"state":"success","context":"diff"}`)
	_, b = do(t, "GET", s.URL+"repos/acme/fleet/commits/feature/statuses", tok, "")
	if list := decode(t, b); at(list, 0, "context") != "diff" || at(list, 1) != nil {
		t.Errorf("statuses of the head branch of #%d: %s", pr, b)
	}

	kept := s.Statuses("acme", "fleet", sha)
	if len(kept) != 3 || kept[0].State != "pending" || kept[0].Context != "kustomization/apps" ||
		kept[0].TargetURL != "https://ci.example.com/1" || kept[2].Description != "apply failed" || kept[2].Creator != "ferry-bot" {
		t.Errorf("statuses the server keeps: %+v", kept)
	}
}

func TestCommitStatusValidation(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	s.AddRepo("acme", "fleet")
	sha := "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	for _, tc := range []struct {
		name, path, body, field, message string
	}{
		{"no state", sha, `{"context":"x"}`, "state", ""},
		{"a state GitHub does not know", sha, `{"state":"warning"}`, "state", "state is not included in the list"},
		{"a description over 140 characters", sha, `{"state":"success","description":"` + strings.Repeat("é", githubtest.MaxStatusDescription+1) + `"}`,
			"description", "description is too long (maximum is 140 characters)"},
		{"not a commit", "main-branch", `{"state":"success"}`, "sha", "No commit found for SHA: main-branch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, "POST", s.URL+"repos/acme/fleet/statuses/"+tc.path, tok, tc.body)
			v := decode(t, b)
			if resp.StatusCode != 422 || at(v, "message") != "Validation Failed" || at(v, "errors", 0, "field") != tc.field ||
				(tc.message != "" && at(v, "errors", 0, "message") != tc.message) {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
		})
	}
	resp, b := do(t, "POST", s.URL+"repos/acme/fleet/statuses/"+sha, tok, `{"state":"success","description":"`+strings.Repeat("é", githubtest.MaxStatusDescription)+`"}`)
	if resp.StatusCode != 201 {
		t.Errorf("a description of exactly 140 characters: %d %s", resp.StatusCode, b)
	}
	if n := len(s.Statuses("acme", "fleet", sha)); n != 1 {
		t.Errorf("%d statuses kept, want only the valid one", n)
	}
}

func TestIssueLabels(t *testing.T) {
	s := githubtest.New(t)
	s.SetPerPage(2)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	labels := s.URL + "repos/acme/fleet/issues/1/labels"
	names := func(b []byte) []any {
		t.Helper()
		var out []any
		for _, l := range decode(t, b).([]any) {
			out = append(out, at(l, "name"))
		}
		return out
	}

	// Added as a bare array (what go-github sends), as {"labels": [...]}
	// with names or objects, and as one name; missing labels are created.
	// The answer is every label the issue carries.
	var b []byte
	for _, body := range []string{`["ferry: render fails"]`, `{"labels":["area/charts"]}`, `{"labels":[{"name":"size/s"}]}`, `"FERRY: Render Fails"`} {
		var resp *http.Response
		resp, b = do(t, "POST", labels, tok, body)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", body, resp.StatusCode, b)
		}
	}
	want := []any{"ferry: render fails", "area/charts", "size/s"}
	if diff := cmp.Diff(want, names(b)); diff != "" {
		t.Errorf("labels after adding (-want +got):\n%s", diff)
	}
	if l := at(decode(t, b), 0); at(l, "id") == nil || at(l, "url") != s.URL+"repos/acme/fleet/labels/ferry:%20render%20fails" || at(l, "color") == nil {
		t.Errorf("a label lacks GitHub's fields: %s", b)
	}

	// Listed in pages; shown on the pull request and on its issue.
	resp, b := do(t, "GET", labels, tok, "")
	if n := len(decode(t, b).([]any)); n != 2 || !strings.Contains(resp.Header.Get("Link"), `rel="next"`) {
		t.Errorf("first page: %d labels, Link %q; want 2 and a next page", n, resp.Header.Get("Link"))
	}
	_, b = do(t, "GET", s.URL+"repos/acme/fleet/pulls/1", tok, "")
	if got := at(decode(t, b), "labels", 0, "name"); got != "ferry: render fails" {
		t.Errorf("the pull request's first label: %v in %s", got, b)
	}
	_, b = do(t, "GET", s.URL+"repos/acme/fleet/issues/1", tok, "")
	if got := at(decode(t, b), "labels", 2, "name"); got != "size/s" {
		t.Errorf("the issue's third label: %v in %s", got, b)
	}

	// Removed by escaped name, in any case, also under /api/v3; 404 once gone.
	for _, path := range []string{labels + "/Ferry:%20render%20fails", s.URL + "api/v3/repos/acme/fleet/issues/1/labels/area%2Fcharts"} {
		resp, b := do(t, "DELETE", path, tok, "")
		if resp.StatusCode != 200 {
			t.Errorf("DELETE %s: %d %s", path, resp.StatusCode, b)
		}
	}
	resp, b = do(t, "DELETE", labels+"/ferry:%20render%20fails", tok, "")
	if resp.StatusCode != 404 || at(decode(t, b), "message") != "Label does not exist" {
		t.Errorf("removing a label the issue lacks: %d %s", resp.StatusCode, b)
	}
	if diff := cmp.Diff([]string{"size/s"}, s.Labels("acme", "fleet", pr)); diff != "" {
		t.Errorf("labels the server keeps (-want +got):\n%s", diff)
	}
	if got := s.PullRequests("acme", "fleet")[0].Labels; !slices.Equal(got, []string{"size/s"}) {
		t.Errorf("PullRequests shows labels %v", got)
	}

	resp, _ = do(t, "GET", s.URL+"repos/acme/fleet/issues/9/labels", tok, "")
	if resp.StatusCode != 404 {
		t.Errorf("labels of a missing issue: %d", resp.StatusCode)
	}
	resp, b = do(t, "POST", labels, tok, `{"labels":[{}]}`)
	if resp.StatusCode != 422 {
		t.Errorf("a label without a name: %d %s", resp.StatusCode, b)
	}
}
