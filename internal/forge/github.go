package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v88/github"
)

// DefaultGitHubAPIURL is github.com's REST API.
const DefaultGitHubAPIURL = "https://api.github.com/"

// githubPerPage is the page size asked for in list calls (GitHub's maximum).
const githubPerPage = 100

// GitHub is a Forge on GitHub or GitHub Enterprise Server, through go-github.
type GitHub struct {
	client *github.Client
	owner  string
	repo   string

	mu sync.Mutex
	me string // cached login of the token's user
}

var _ Forge = (*GitHub)(nil)

// NewGitHub returns the GitHub forge cfg describes. cfg.APIURL defaults to
// https://api.github.com/; a GitHub Enterprise Server URL ends in /api/v3/.
func NewGitHub(cfg Config) (*GitHub, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	api := cfg.APIURL
	if api == "" {
		api = DefaultGitHubAPIURL
	}
	client, err := github.NewClient(
		github.WithHTTPClient(&http.Client{Timeout: 2 * time.Minute}),
		github.WithAuthToken(cfg.Token),
		github.WithURLs(&api, nil),
		github.WithUserAgent("ferry"),
	)
	if err != nil {
		return nil, fmt.Errorf("github client for %s/%s: %w", cfg.Owner, cfg.Repo, err)
	}
	return &GitHub{client: client, owner: cfg.Owner, repo: cfg.Repo}, nil
}

// Kind is GitHub.
func (g *GitHub) Kind() Kind { return KindGitHub }

func (g *GitHub) slug() string { return g.owner + "/" + g.repo }

func (g *GitHub) fail(what, perm string, err error) error {
	status := 0
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		status = er.Response.StatusCode
	}
	return apiError(what, status, perm, err)
}

// Me returns the login of the token's user (asked once, then remembered).
func (g *GitHub) Me(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.me != "" {
		return g.me, nil
	}
	u, _, err := g.client.Users.Get(ctx, "")
	if err != nil {
		return "", g.fail("github: reading the token's user", "", err)
	}
	if u.GetLogin() == "" {
		return "", fmt.Errorf("github: reading the token's user: no login in the answer")
	}
	g.me = u.GetLogin()
	return g.me, nil
}

// Comments lists every comment on issue or pull request number, oldest first.
func (g *GitHub) Comments(ctx context.Context, number int) ([]Comment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: githubPerPage}}
	var out []Comment
	for {
		page, resp, err := g.client.Issues.ListComments(ctx, g.owner, g.repo, number, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("github: listing comments of %s#%d", g.slug(), number), permCommentsRead, err)
		}
		for _, c := range page {
			out = append(out, githubComment(c))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func githubComment(c *github.IssueComment) Comment {
	return Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody(), URL: c.GetHTMLURL()}
}

// CreateComment adds a comment to issue or pull request number.
func (g *GitHub) CreateComment(ctx context.Context, number int, body string) (Comment, error) {
	c, _, err := g.client.Issues.CreateComment(ctx, g.owner, g.repo, number, &github.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, g.fail(fmt.Sprintf("github: commenting on %s#%d", g.slug(), number), permCommentsWrite, err)
	}
	return githubComment(c), nil
}

// EditComment replaces the body of comment id.
func (g *GitHub) EditComment(ctx context.Context, id int64, body string) error {
	if _, _, err := g.client.Issues.EditComment(ctx, g.owner, g.repo, id, &github.IssueComment{Body: &body}); err != nil {
		return g.fail(fmt.Sprintf("github: editing comment %d in %s", id, g.slug()), permCommentsWrite, err)
	}
	return nil
}

// DeleteComment deletes comment id.
func (g *GitHub) DeleteComment(ctx context.Context, id int64) error {
	if _, err := g.client.Issues.DeleteComment(ctx, g.owner, g.repo, id); err != nil {
		return g.fail(fmt.Sprintf("github: deleting comment %d in %s", id, g.slug()), permCommentsWrite, err)
	}
	return nil
}

// OpenPullRequest returns the open pull request from branch head into
// branch base of this repository, or nil when there is none. head may also
// be given as "owner:branch" for a pull request from a fork.
func (g *GitHub) OpenPullRequest(ctx context.Context, head, base string) (*PullRequest, error) {
	headOwner, headRef := g.owner, head
	if o, r, ok := strings.Cut(head, ":"); ok {
		headOwner, headRef = o, r
	}
	opts := &github.PullRequestListOptions{
		State:       "open",
		Head:        headOwner + ":" + headRef,
		Base:        base,
		ListOptions: github.ListOptions{PerPage: githubPerPage},
	}
	for {
		page, resp, err := g.client.PullRequests.List(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("github: looking for the open pull request %s -> %s in %s", head, base, g.slug()), permPullRequestsRead, err)
		}
		for _, pr := range page {
			if pr.GetHead().GetRef() == headRef && pr.GetBase().GetRef() == base && pr.GetState() == "open" &&
				(pr.GetHead().GetUser().GetLogin() == "" || strings.EqualFold(pr.GetHead().GetUser().GetLogin(), headOwner)) {
				p := githubPull(pr)
				return &p, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

func githubPull(pr *github.PullRequest) PullRequest {
	return PullRequest{
		Number: pr.GetNumber(),
		Title:  pr.GetTitle(),
		Body:   pr.GetBody(),
		Head:   pr.GetHead().GetRef(),
		Base:   pr.GetBase().GetRef(),
		URL:    pr.GetHTMLURL(),
		State:  pr.GetState(),
	}
}

// CreatePullRequest opens a pull request.
func (g *GitHub) CreatePullRequest(ctx context.Context, pr NewPullRequest) (PullRequest, error) {
	created, _, err := g.client.PullRequests.Create(ctx, g.owner, g.repo, &github.NewPullRequest{
		Title: &pr.Title,
		Body:  &pr.Body,
		Head:  &pr.Head,
		Base:  &pr.Base,
	})
	if err != nil {
		return PullRequest{}, g.fail(fmt.Sprintf("github: opening a pull request %s -> %s in %s", pr.Head, pr.Base, g.slug()), permPullRequestsWrite, err)
	}
	return githubPull(created), nil
}

// EditPullRequest sets the title (unless empty) and body of pull request number.
func (g *GitHub) EditPullRequest(ctx context.Context, number int, title, body string) error {
	edit := &github.PullRequest{Body: &body}
	if title != "" {
		edit.Title = &title
	}
	if _, _, err := g.client.PullRequests.Edit(ctx, g.owner, g.repo, number, edit); err != nil {
		return g.fail(fmt.Sprintf("github: editing pull request %s#%d", g.slug(), number), permPullRequestsWrite, err)
	}
	return nil
}

// Issues lists the issues carrying label (any label when empty) in state
// "open" (the default), "closed" or "all". GitHub lists pull requests as
// issues too; they are left out.
func (g *GitHub) Issues(ctx context.Context, label, state string) ([]Issue, error) {
	if state == "" {
		state = "open"
	}
	opts := &github.IssueListByRepoOptions{
		State:       state,
		Sort:        "created",
		Direction:   "asc",
		ListOptions: github.ListOptions{PerPage: githubPerPage},
	}
	if label != "" {
		opts.Labels = []string{label}
	}
	var out []Issue
	for {
		page, resp, err := g.client.Issues.ListByRepo(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("github: listing %s issues labelled %q in %s", state, label, g.slug()), permIssuesRead, err)
		}
		for _, is := range page {
			if is.IsPullRequest() {
				continue
			}
			out = append(out, githubIssue(is))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

func githubIssue(is *github.Issue) Issue {
	out := Issue{
		Number: is.GetNumber(),
		Author: is.GetUser().GetLogin(),
		Title:  is.GetTitle(),
		Body:   is.GetBody(),
		State:  is.GetState(),
		URL:    is.GetHTMLURL(),
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// CreateIssue opens an issue; GitHub creates labels that do not exist yet.
func (g *GitHub) CreateIssue(ctx context.Context, issue NewIssue) (Issue, error) {
	req := &github.IssueRequest{Title: &issue.Title, Body: &issue.Body}
	if len(issue.Labels) > 0 {
		labels := append([]string(nil), issue.Labels...)
		req.Labels = &labels
	}
	created, _, err := g.client.Issues.Create(ctx, g.owner, g.repo, req)
	if err != nil {
		return Issue{}, g.fail(fmt.Sprintf("github: opening issue %q in %s", issue.Title, g.slug()), permIssuesWrite, err)
	}
	return githubIssue(created), nil
}

// EditIssue sets the title (unless empty) and body of issue number.
func (g *GitHub) EditIssue(ctx context.Context, number int, title, body string) error {
	req := &github.IssueRequest{Body: &body}
	if title != "" {
		req.Title = &title
	}
	if _, _, err := g.client.Issues.Edit(ctx, g.owner, g.repo, number, req); err != nil {
		return g.fail(fmt.Sprintf("github: editing issue %s#%d", g.slug(), number), permIssuesWrite, err)
	}
	return nil
}

// CloseIssue closes issue number as completed.
func (g *GitHub) CloseIssue(ctx context.Context, number int) error {
	state, reason := "closed", "completed"
	if _, _, err := g.client.Issues.Edit(ctx, g.owner, g.repo, number, &github.IssueRequest{State: &state, StateReason: &reason}); err != nil {
		return g.fail(fmt.Sprintf("github: closing issue %s#%d", g.slug(), number), permIssuesWrite, err)
	}
	return nil
}
