package forge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
)

// GitHub-only behaviour; the contract every forge keeps is in forge_test.go.

func newGitHub(t *testing.T, s *githubtest.Server, api, token string) *forge.GitHub {
	t.Helper()
	f, err := forge.NewGitHub(forge.Config{Kind: forge.KindGitHub, APIURL: api, Token: token, Owner: "acme", Repo: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGitHubFollowsPagination(t *testing.T) {
	s := githubtest.New(t)
	s.SetPerPage(2)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	for i := range 5 {
		s.AddComment("acme", "fleet", pr, "ferry-bot", strings.Repeat("x", i+1))
	}
	for i := range 5 {
		s.AddIssue("acme", "fleet", "ferry-bot", "issue", "body", "drift")
		s.AddPullRequest("acme", "fleet", "ferry-bot", "other-"+strings.Repeat("x", i+1), "main", "t", "")
	}
	f := newGitHub(t, s, s.URL, tok)
	ctx := context.Background()
	cs, err := f.Comments(ctx, pr)
	if err != nil || len(cs) != 5 {
		t.Fatalf("Comments: %d, %v; want 5", len(cs), err)
	}
	issues, err := f.Issues(ctx, "drift", "open")
	if err != nil || len(issues) != 5 {
		t.Fatalf("Issues: %d, %v; want 5", len(issues), err)
	}
	if p, err := f.OpenPullRequest(ctx, "feature", "main"); err != nil || p == nil || p.Number != pr {
		t.Fatalf("OpenPullRequest = %+v, %v", p, err)
	}
	pages := map[string]int{}
	for _, r := range s.Requests() {
		if r.Method == "GET" {
			pages[r.Path]++
			if !strings.Contains(r.Query, "per_page=100") {
				t.Errorf("%s %s?%s does not ask for the largest page", r.Method, r.Path, r.Query)
			}
		}
	}
	if n := pages["/repos/acme/fleet/issues/1/comments"]; n != 3 {
		t.Errorf("comments were read in %d requests, want 3 pages of 2", n)
	}
	if n := pages["/repos/acme/fleet/issues"]; n != 3 {
		t.Errorf("issues were read in %d requests, want 3 pages of 2", n)
	}
}

func TestGitHubEnterpriseURL(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	f := newGitHub(t, s, s.URL+"api/v3", tok) // no trailing slash: added
	if _, err := f.CreateComment(context.Background(), pr, "hello"); err != nil {
		t.Fatal(err)
	}
	if got := s.Comments("acme", "fleet", pr); len(got) != 1 || got[0].Author != "ferry-bot" {
		t.Errorf("comments %+v, want one by ferry-bot", got)
	}
}

func TestGitHubBodyLimit(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	f := newGitHub(t, s, s.URL, tok)
	ctx := context.Background()
	// GitHub counts characters, not bytes: 65,536 two-byte characters fit.
	if _, err := f.CreateComment(ctx, pr, strings.Repeat("é", githubtest.MaxBody)); err != nil {
		t.Errorf("a comment of exactly the limit: %v", err)
	}
	_, err := f.CreateComment(ctx, pr, strings.Repeat("x", githubtest.MaxBody+1))
	if err == nil || !strings.Contains(err.Error(), "body is too long (maximum is 65536 characters)") || !strings.Contains(err.Error(), "acme/fleet#1") {
		t.Errorf("a comment over the limit: %v, want GitHub's 422 naming the pull request", err)
	}
}

func TestGitHubTokenErrors(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	ctx := context.Background()

	bad := newGitHub(t, s, s.URL, "ghp_wrongtoken123")
	_, err := bad.Me(ctx)
	if !errors.Is(err, forge.ErrPermission) || strings.Contains(err.Error(), "ghp_wrongtoken123") {
		t.Errorf("Me with a wrong token: %v, want ErrPermission without the token", err)
	}

	s.SetReadOnly(tok, true)
	ro := newGitHub(t, s, s.URL, tok)
	_, err = ro.CreateComment(ctx, pr, "x")
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "pull-requests: write") || strings.Contains(err.Error(), tok) {
		t.Errorf("commenting with a read-only token: %v, want ErrPermission naming pull-requests: write", err)
	}
	_, err = ro.CreateIssue(ctx, forge.NewIssue{Title: "t"})
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "issues: write") {
		t.Errorf("opening an issue with a read-only token: %v, want ErrPermission naming issues: write", err)
	}
	err = ro.SetPullRequestLabel(ctx, pr, "ferry: render fails", true)
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "pull-requests: write") || !strings.Contains(err.Error(), "issues: write") {
		t.Errorf("labelling with a read-only token: %v, want ErrPermission naming pull-requests: write and issues: write", err)
	}
	if err := ro.SetPullRequestLabel(ctx, pr, "ferry: render fails", false); err != nil {
		t.Errorf("removing a label the pull request lacks with a read-only token: %v, want nothing asked", err)
	}
	if _, err := ro.Comments(ctx, pr); err != nil {
		t.Errorf("reading with a read-only token: %v", err)
	}
	t.Logf("read-only error: %v", err)
}

func TestGitHubUnknownRepository(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	f := newGitHub(t, s, s.URL, tok)
	_, err := f.Issues(context.Background(), "drift", "open")
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "acme/fleet") {
		t.Errorf("Issues of a repository that does not exist: %v, want ErrNotFound naming it", err)
	}
	t.Logf("error: %v", err)
}

func TestGitHubOpenPullRequestFromFork(t *testing.T) {
	s := githubtest.New(t)
	tok := s.AddUser("ferry-bot")
	pr := s.AddPullRequest("acme", "fleet", "ferry-bot", "feature", "main", "t", "")
	f := newGitHub(t, s, s.URL, tok)
	ctx := context.Background()
	if p, err := f.OpenPullRequest(ctx, "acme:feature", "main"); err != nil || p == nil || p.Number != pr {
		t.Errorf("owner:branch = %+v, %v; want #%d", p, err, pr)
	}
	if p, err := f.OpenPullRequest(ctx, "someone:feature", "main"); err != nil || p != nil {
		t.Errorf("another owner's branch = %+v, %v; want none", p, err)
	}
}

func TestGitHubCommitStatuses(t *testing.T) {
	s := githubtest.New(t)
	s.SetPerPage(2)
	tok := s.AddUser("ferry-bot")
	s.AddRepo("acme", "fleet")
	f := newGitHub(t, s, s.URL, tok)
	ctx := context.Background()
	sha := "6dcb09b5b57875f334f61aebed695e2e4193db5e"

	// Seven statuses over three contexts: the latest of each is found
	// across four pages.
	for i, st := range []forge.CommitStatus{
		{State: "pending", Context: "kustomization/apps"},
		{State: "pending", Context: "kustomization/infra"},
		{State: "success", Context: "kustomization/infra", Description: "applied"},
		{State: "pending", Context: "diff"},
		{State: "failure", Context: "kustomization/apps", Description: "apply failed"},
		{State: "success", Context: "diff", Description: "2 targets change"},
		{State: "success", Context: "kustomization/apps", Description: "applied", TargetURL: "https://ci.example.com/3"},
	} {
		if err := f.SetCommitStatus(ctx, sha, st); err != nil {
			t.Fatalf("status %d: %v", i, err)
		}
	}
	s.ResetRequests()
	got, err := f.CommitStatuses(ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	want := []forge.CommitStatus{
		{State: "success", Context: "diff", Description: "2 targets change"},
		{State: "success", Context: "kustomization/apps", Description: "applied", TargetURL: "https://ci.example.com/3"},
		{State: "success", Context: "kustomization/infra", Description: "applied"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("latest statuses (-want +got):\n%s", diff)
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("statuses were read in %d requests, want 4 pages of 2", n)
	}

	// Refused before GitHub is asked: a state only Gitea knows.
	s.ResetRequests()
	err = f.SetCommitStatus(ctx, sha, forge.CommitStatus{State: forge.StatusWarning, Context: "diff"})
	if err == nil || !strings.Contains(err.Error(), `state "warning" is not one of pending, success, failure, error`) || len(s.Requests()) != 0 {
		t.Errorf("a warning status: %v (%d requests), want it refused without asking", err, len(s.Requests()))
	}
	// GitHub's own refusals come back naming the status.
	err = f.SetCommitStatus(ctx, sha, forge.CommitStatus{State: "success", Context: "diff", Description: strings.Repeat("x", githubtest.MaxStatusDescription+1)})
	if err == nil || !strings.Contains(err.Error(), "description is too long") || !strings.Contains(err.Error(), `"diff"`) || !strings.Contains(err.Error(), sha) {
		t.Errorf("a description too long: %v, want GitHub's 422 naming the status and commit", err)
	}
	t.Logf("error: %v", err)

	s.SetReadOnly(tok, true)
	err = f.SetCommitStatus(ctx, sha, forge.CommitStatus{State: "success", Context: "diff"})
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "statuses: write") || strings.Contains(err.Error(), tok) {
		t.Errorf("a status with a read-only token: %v, want ErrPermission naming statuses: write", err)
	}
	t.Logf("error: %v", err)
	if _, err := f.CommitStatuses(ctx, sha); err != nil {
		t.Errorf("reading statuses with a read-only token: %v", err)
	}
	if n := len(s.Statuses("acme", "fleet", sha)); n != 7 {
		t.Errorf("the server keeps %d statuses, want the 7 set", n)
	}
}
