package forge

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"code.gitea.io/sdk/gitea"
)

// giteaPageSize is the page size asked for in list calls; the server caps it
// at its [api] MAX_RESPONSE_ITEMS (50 by default).
const giteaPageSize = 50

// giteaLabelColor is the colour of a label CreateIssue has to create.
const giteaLabelColor = "#d93f0b"

// Gitea is a Forge on a Gitea (or Forgejo) server, through Gitea's SDK.
type Gitea struct {
	url   string
	token string
	owner string
	repo  string
	http  *http.Client

	mu sync.Mutex
	me string // cached login of the token's user
}

var _ Forge = (*Gitea)(nil)

// NewGitea returns the Gitea forge cfg describes; cfg.APIURL is the
// server's root URL (the SDK adds /api/v1). Nothing is asked of the server
// until the first call.
func NewGitea(cfg Config) (*Gitea, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.APIURL == "" {
		return nil, fmt.Errorf("forge: no Gitea server URL given for %s/%s", cfg.Owner, cfg.Repo)
	}
	url := strings.TrimRight(cfg.APIURL, "/")
	url = strings.TrimSuffix(url, "/api/v1")
	return &Gitea{
		url:   url,
		token: cfg.Token,
		owner: cfg.Owner,
		repo:  cfg.Repo,
		http:  &http.Client{Timeout: 2 * time.Minute},
	}, nil
}

// Kind is Gitea.
func (g *Gitea) Kind() Kind { return KindGitea }

func (g *Gitea) slug() string { return g.owner + "/" + g.repo }

// client returns an SDK client bound to ctx. The SDK keeps one context per
// client, so each call gets its own (cheap: the version probe is skipped,
// ferry needs Gitea 1.22 or later anyway).
func (g *Gitea) client(ctx context.Context) (*gitea.Client, error) {
	c, err := gitea.NewClient(g.url,
		gitea.SetHTTPClient(g.http),
		gitea.SetToken(g.token),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""),
		gitea.SetUserAgent("ferry"),
	)
	if err != nil {
		return nil, fmt.Errorf("gitea client for %s: %w", g.slug(), err)
	}
	return c, nil
}

func (g *Gitea) fail(what, perm string, resp *gitea.Response, err error) error {
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
		if status >= 400 && status != http.StatusNotFound && status != http.StatusUnauthorized &&
			status != http.StatusForbidden && !strings.Contains(err.Error(), fmt.Sprint(status)) {
			err = fmt.Errorf("HTTP %d: %w", status, err)
		}
	}
	return apiError(what, status, perm, err)
}

// failOnIssue is fail for a call about issue number. Gitea answers 500, not
// 404, to comment calls on an issue that does not exist: the issue is asked
// for to tell the two apart.
func (g *Gitea) failOnIssue(c *gitea.Client, number int, what, perm string, resp *gitea.Response, err error) error {
	if resp != nil && resp.StatusCode >= 500 {
		if _, iresp, ierr := c.GetIssue(g.owner, g.repo, int64(number)); ierr != nil && iresp != nil && iresp.StatusCode == http.StatusNotFound {
			return g.fail(what, perm, iresp, ierr)
		}
	}
	return g.fail(what, perm, resp, err)
}

// Me returns the login of the token's user (asked once, then remembered).
func (g *Gitea) Me(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.me != "" {
		return g.me, nil
	}
	c, err := g.client(ctx)
	if err != nil {
		return "", err
	}
	u, resp, err := c.GetMyUserInfo()
	if err != nil {
		return "", g.fail("gitea: reading the token's user", "", resp, err)
	}
	if u.UserName == "" {
		return "", fmt.Errorf("gitea: reading the token's user: no login in the answer")
	}
	g.me = u.UserName
	return g.me, nil
}

// Comments lists every comment on issue or pull request number, oldest
// first. (Gitea answers this call in one page.)
func (g *Gitea) Comments(ctx context.Context, number int) ([]Comment, error) {
	what := fmt.Sprintf("gitea: listing comments of %s#%d", g.slug(), number)
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	opts := gitea.ListIssueCommentOptions{ListOptions: gitea.ListOptions{PageSize: giteaPageSize}}
	var out []Comment
	for {
		page, resp, err := c.ListIssueComments(g.owner, g.repo, int64(number), opts)
		if err != nil {
			return nil, g.failOnIssue(c, number, what, permCommentsRead, resp, err)
		}
		for _, cm := range page {
			out = append(out, giteaComment(cm))
		}
		if resp.NextPage == 0 || len(page) == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func giteaComment(c *gitea.Comment) Comment {
	out := Comment{ID: c.ID, Body: c.Body, URL: c.HTMLURL}
	if c.Poster != nil {
		out.Author = c.Poster.UserName
	}
	return out
}

// CreateComment adds a comment to issue or pull request number.
func (g *Gitea) CreateComment(ctx context.Context, number int, body string) (Comment, error) {
	c, err := g.client(ctx)
	if err != nil {
		return Comment{}, err
	}
	cm, resp, err := c.CreateIssueComment(g.owner, g.repo, int64(number), gitea.CreateIssueCommentOption{Body: body})
	if err != nil {
		return Comment{}, g.failOnIssue(c, number, fmt.Sprintf("gitea: commenting on %s#%d", g.slug(), number), permCommentsWrite, resp, err)
	}
	return giteaComment(cm), nil
}

// EditComment replaces the body of comment id.
func (g *Gitea) EditComment(ctx context.Context, id int64, body string) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := c.EditIssueComment(g.owner, g.repo, id, gitea.EditIssueCommentOption{Body: body}); err != nil {
		return g.fail(fmt.Sprintf("gitea: editing comment %d in %s", id, g.slug()), permCommentsWrite, resp, err)
	}
	return nil
}

// DeleteComment deletes comment id.
func (g *Gitea) DeleteComment(ctx context.Context, id int64) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	if resp, err := c.DeleteIssueComment(g.owner, g.repo, id); err != nil {
		return g.fail(fmt.Sprintf("gitea: deleting comment %d in %s", id, g.slug()), permCommentsWrite, resp, err)
	}
	return nil
}

// OpenPullRequest returns the open pull request from branch head into
// branch base of this repository, or nil when there is none. head may also
// be given as "owner:branch" for a pull request from a fork.
func (g *Gitea) OpenPullRequest(ctx context.Context, head, base string) (*PullRequest, error) {
	headOwner, headRef := g.owner, head
	if o, r, ok := strings.Cut(head, ":"); ok {
		headOwner, headRef = o, r
	}
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	opts := gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{PageSize: giteaPageSize}}
	for {
		page, resp, err := c.ListRepoPullRequests(g.owner, g.repo, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("gitea: looking for the open pull request %s -> %s in %s", head, base, g.slug()), permPullRequestsRead, resp, err)
		}
		for _, pr := range page {
			if pr.Head == nil || pr.Base == nil || pr.State != gitea.StateOpen ||
				pr.Head.Ref != headRef || pr.Base.Ref != base {
				continue
			}
			if r := pr.Head.Repository; r != nil && r.Owner != nil && !strings.EqualFold(r.Owner.UserName, headOwner) {
				continue
			}
			p := giteaPull(pr)
			return &p, nil
		}
		if resp.NextPage == 0 || len(page) == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

func giteaPull(pr *gitea.PullRequest) PullRequest {
	out := PullRequest{
		Number: int(pr.Index),
		Title:  pr.Title,
		Body:   pr.Body,
		URL:    pr.HTMLURL,
		State:  string(pr.State),
	}
	if pr.Head != nil {
		out.Head = pr.Head.Ref
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	return out
}

// CreatePullRequest opens a pull request.
func (g *Gitea) CreatePullRequest(ctx context.Context, pr NewPullRequest) (PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	created, resp, err := c.CreatePullRequest(g.owner, g.repo, gitea.CreatePullRequestOption{
		Head:  pr.Head,
		Base:  pr.Base,
		Title: pr.Title,
		Body:  pr.Body,
	})
	if err != nil {
		return PullRequest{}, g.fail(fmt.Sprintf("gitea: opening a pull request %s -> %s in %s", pr.Head, pr.Base, g.slug()), permPullRequestsWrite, resp, err)
	}
	return giteaPull(created), nil
}

// EditPullRequest sets the title (unless empty) and body of pull request number.
func (g *Gitea) EditPullRequest(ctx context.Context, number int, title, body string) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := c.EditPullRequest(g.owner, g.repo, int64(number), gitea.EditPullRequestOption{Title: title, Body: &body}); err != nil {
		return g.fail(fmt.Sprintf("gitea: editing pull request %s#%d", g.slug(), number), permPullRequestsWrite, resp, err)
	}
	return nil
}

// Issues lists the issues carrying label (any label when empty) in state
// "open" (the default), "closed" or "all", oldest first. Pull requests are
// left out. The label is also checked here: Gitea drops an unknown label
// from its filter instead of matching nothing.
func (g *Gitea) Issues(ctx context.Context, label, state string) ([]Issue, error) {
	if state == "" {
		state = "open"
	}
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	opts := gitea.ListIssueOption{
		State:       gitea.StateType(state),
		Type:        gitea.IssueTypeIssue,
		ListOptions: gitea.ListOptions{PageSize: giteaPageSize},
	}
	if label != "" {
		opts.Labels = []string{label}
	}
	var out []Issue
	for {
		page, resp, err := c.ListRepoIssues(g.owner, g.repo, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("gitea: listing %s issues labelled %q in %s", state, label, g.slug()), permIssuesRead, resp, err)
		}
		for _, is := range page {
			if is.PullRequest != nil {
				continue
			}
			i := giteaIssue(is)
			if label == "" || slices.Contains(i.Labels, label) {
				out = append(out, i)
			}
		}
		if resp.NextPage == 0 || len(page) == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	slices.SortFunc(out, func(a, b Issue) int { return cmp.Compare(a.Number, b.Number) })
	return out, nil
}

func giteaIssue(is *gitea.Issue) Issue {
	out := Issue{
		Number: int(is.Index),
		Title:  is.Title,
		Body:   is.Body,
		State:  string(is.State),
		URL:    is.HTMLURL,
	}
	if is.Poster != nil {
		out.Author = is.Poster.UserName
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}

// CreateIssue opens an issue, creating its labels first where the
// repository lacks them (as GitHub does).
func (g *Gitea) CreateIssue(ctx context.Context, issue NewIssue) (Issue, error) {
	what := fmt.Sprintf("gitea: opening issue %q in %s", issue.Title, g.slug())
	c, err := g.client(ctx)
	if err != nil {
		return Issue{}, err
	}
	ids, err := g.labelIDs(c, what, issue.Labels)
	if err != nil {
		return Issue{}, err
	}
	created, resp, err := c.CreateIssue(g.owner, g.repo, gitea.CreateIssueOption{Title: issue.Title, Body: issue.Body, Labels: ids})
	if err != nil {
		return Issue{}, g.fail(what, permIssuesWrite, resp, err)
	}
	return giteaIssue(created), nil
}

// labelIDs returns the IDs of the named labels, creating missing ones.
func (g *Gitea) labelIDs(c *gitea.Client, what string, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	have := map[string]int64{}
	opts := gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{PageSize: giteaPageSize}}
	for {
		page, resp, err := c.ListRepoLabels(g.owner, g.repo, opts)
		if err != nil {
			return nil, g.fail(what+": listing labels", permIssuesRead, resp, err)
		}
		for _, l := range page {
			have[l.Name] = l.ID
		}
		if resp.NextPage == 0 || len(page) == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	var ids []int64
	for _, name := range names {
		id, ok := have[name]
		if !ok {
			l, resp, err := c.CreateLabel(g.owner, g.repo, gitea.CreateLabelOption{Name: name, Color: giteaLabelColor})
			if err != nil {
				return nil, g.fail(fmt.Sprintf("%s: creating label %q", what, name), permIssuesWrite, resp, err)
			}
			id = l.ID
			have[name] = id
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// EditIssue sets the title (unless empty) and body of issue number.
func (g *Gitea) EditIssue(ctx context.Context, number int, title, body string) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := c.EditIssue(g.owner, g.repo, int64(number), gitea.EditIssueOption{Title: title, Body: &body}); err != nil {
		return g.fail(fmt.Sprintf("gitea: editing issue %s#%d", g.slug(), number), permIssuesWrite, resp, err)
	}
	return nil
}

// CloseIssue closes issue number.
func (g *Gitea) CloseIssue(ctx context.Context, number int) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	closed := gitea.StateClosed
	if _, resp, err := c.EditIssue(g.owner, g.repo, int64(number), gitea.EditIssueOption{State: &closed}); err != nil {
		return g.fail(fmt.Sprintf("gitea: closing issue %s#%d", g.slug(), number), permIssuesWrite, resp, err)
	}
	return nil
}
