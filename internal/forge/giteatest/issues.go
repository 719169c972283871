package giteatest

import (
	"net/http"
	"testing"

	"code.gitea.io/sdk/gitea"
)

// PullRequest is a pull request as tests check it.
type PullRequest struct {
	Number      int64
	Title, Body string
	// Head and Base are the branches it merges from and into.
	Head, Base string
	// URL is its web page.
	URL string
}

// Comment is a comment on an issue or pull request.
type Comment struct {
	ID int64
	// Author is the login of the user who wrote it.
	Author string
	Body   string
}

// Issue is an issue (not a pull request) with its comments' bodies, oldest
// first.
type Issue struct {
	Number      int64
	Title, Body string
	// State is "open" or "closed".
	State    string
	Labels   []string
	Comments []string
}

// OpenPullRequests returns the open pull requests of owner/repo, every
// page of them (as the server's Link header chains them), as the user of
// token sees them.
func (g *Gitea) OpenPullRequests(t testing.TB, token, owner, repo string) []PullRequest {
	t.Helper()
	c := g.Client(t, token)
	opts := gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{PageSize: PageSize}}
	var out []PullRequest
	for {
		list, resp, err := c.ListRepoPullRequests(owner, repo, opts)
		if err != nil {
			t.Fatalf("giteatest: listing pull requests of %s/%s: %v", owner, repo, err)
		}
		for _, p := range list {
			out = append(out, pullRequest(p))
		}
		if resp.NextPage == 0 || len(list) == 0 {
			return out
		}
		opts.Page = resp.NextPage
	}
}

// CreatePullRequest opens a pull request from head into base of owner/repo
// as the user of token.
func (g *Gitea) CreatePullRequest(t testing.TB, token, owner, repo, head, base, title string) PullRequest {
	t.Helper()
	p, _, err := g.Client(t, token).CreatePullRequest(owner, repo, gitea.CreatePullRequestOption{Head: head, Base: base, Title: title})
	if err != nil {
		t.Fatalf("giteatest: opening a pull request %s -> %s in %s/%s: %v", head, base, owner, repo, err)
	}
	return pullRequest(p)
}

func pullRequest(p *gitea.PullRequest) PullRequest {
	out := PullRequest{Number: p.Index, Title: p.Title, Body: p.Body, URL: p.HTMLURL}
	if p.Head != nil {
		out.Head = p.Head.Ref
	}
	if p.Base != nil {
		out.Base = p.Base.Ref
	}
	return out
}

// Comments returns the comments on issue or pull request number of
// owner/repo, oldest first: every page of them where the server pages
// them (Gitea lists an issue's comments all at once).
func (g *Gitea) Comments(t testing.TB, token, owner, repo string, number int64) []Comment {
	t.Helper()
	c := g.Client(t, token)
	opts := gitea.ListIssueCommentOptions{ListOptions: gitea.ListOptions{PageSize: PageSize}}
	var out []Comment
	for {
		list, resp, err := c.ListIssueComments(owner, repo, number, opts)
		if err != nil {
			t.Fatalf("giteatest: listing comments on %s/%s#%d: %v", owner, repo, number, err)
		}
		for _, cm := range list {
			out = append(out, comment(cm))
		}
		if resp.NextPage == 0 || len(list) == 0 {
			return out
		}
		opts.Page = resp.NextPage
	}
}

// CreateComment comments on issue or pull request number of owner/repo as
// the user of token.
func (g *Gitea) CreateComment(t testing.TB, token, owner, repo string, number int64, body string) Comment {
	t.Helper()
	cm, _, err := g.Client(t, token).CreateIssueComment(owner, repo, number, gitea.CreateIssueCommentOption{Body: body})
	if err != nil {
		t.Fatalf("giteatest: commenting on %s/%s#%d: %v", owner, repo, number, err)
	}
	return comment(cm)
}

func comment(c *gitea.Comment) Comment {
	out := Comment{ID: c.ID, Body: c.Body}
	if c.Poster != nil {
		out.Author = c.Poster.UserName
	}
	return out
}

// Issues returns the issues of owner/repo, open and closed, pull requests
// left out, with their comments, every page of them.
func (g *Gitea) Issues(t testing.TB, token, owner, repo string) []Issue {
	t.Helper()
	c := g.Client(t, token)
	opts := gitea.ListIssueOption{State: gitea.StateAll, Type: gitea.IssueTypeIssue, ListOptions: gitea.ListOptions{PageSize: PageSize}}
	var out []Issue
	for {
		list, resp, err := c.ListRepoIssues(owner, repo, opts)
		if err != nil {
			t.Fatalf("giteatest: listing issues of %s/%s: %v", owner, repo, err)
		}
		for _, is := range list {
			i := Issue{Number: is.Index, Title: is.Title, Body: is.Body, State: string(is.State)}
			for _, l := range is.Labels {
				i.Labels = append(i.Labels, l.Name)
			}
			for _, cm := range g.Comments(t, token, owner, repo, is.Index) {
				i.Comments = append(i.Comments, cm.Body)
			}
			out = append(out, i)
		}
		if resp.NextPage == 0 || len(list) == 0 {
			return out
		}
		opts.Page = resp.NextPage
	}
}

// RenderMarkdown returns the HTML Gitea makes of body shown as a comment.
func (g *Gitea) RenderMarkdown(t testing.TB, token, body string) string {
	t.Helper()
	html, resp, err := g.Client(t, token).RenderMarkdown(gitea.MarkdownOption{Text: body, Mode: "comment"})
	if err == nil && resp.StatusCode != http.StatusOK {
		t.Fatalf("giteatest: rendering markdown: %s", resp.Status)
	}
	if err != nil {
		t.Fatalf("giteatest: rendering markdown: %v", err)
	}
	return html
}
