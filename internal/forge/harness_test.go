package forge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
)

// world is one fresh repository with an open pull request, seen through
// the forge as ferry's user and as another user.
type world struct {
	ferry *counter // ferry's user
	other forge.Forge
	me    string // ferry's login
	owner string
	repo  string
	pr    int    // an open pull request, head "feature" into "main"
	head  string // the commit SHA of the pull request's head
	token string // ferry's token

	// branch pushes a new branch off main, for a pull request to start from.
	branch func(t *testing.T, name string)
	// label puts label on issue n (as the repository's owner would).
	label func(t *testing.T, n int, label string)

	// serverWrites counts write requests on the wire: all the GitHub
	// test server saw, or those ferry's user sent to Gitea (through a
	// counting proxy), where counter counts only the calls.
	serverWrites func() int
	// render renders markdown as the forge does (Gitea only).
	render func(t *testing.T, md string) string
	// comments reads the pull request's comments straight from the server.
	comments func(t *testing.T) []forge.Comment
	// prLabels reads the labels pull request n carries straight from the
	// server, sorted.
	prLabels func(t *testing.T, n int) []string
}

type forgeCase struct {
	name  string
	setup func(t *testing.T) *world
}

// forges is every forge the generic tests run against.
var forges = []forgeCase{
	{"github", githubWorld},
	{"gitea", giteaWorld},
}

// eachForge runs test against each forge, in parallel with the other
// tests: each world is a repository of its own.
func eachForge(t *testing.T, test func(t *testing.T, w *world)) {
	t.Parallel()
	for _, fc := range forges {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			test(t, fc.setup(t))
		})
	}
}

func githubWorld(t *testing.T) *world {
	s := githubtest.New(t)
	s.SetPerPage(3) // small pages: every list call has to follow Link headers
	ferryTok := s.AddUser("ferry-bot")
	otherTok := s.AddUser("someone-else")
	s.AddRepo("acme", "fleet")
	pr := s.AddPullRequest("acme", "fleet", "someone-else", "feature", "main", "Change things", "")
	head := s.PullRequests("acme", "fleet")[0].PullRequest.HeadSHA
	newForge := func(tok string) *forge.GitHub {
		f, err := forge.NewGitHub(forge.Config{Kind: forge.KindGitHub, APIURL: s.URL, Token: tok, Owner: "acme", Repo: "fleet"})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	return &world{
		ferry:  &counter{Forge: newForge(ferryTok)},
		other:  newForge(otherTok),
		me:     "ferry-bot",
		owner:  "acme",
		repo:   "fleet",
		pr:     pr,
		head:   head,
		token:  ferryTok,
		branch: func(*testing.T, string) {}, // the test server has no git
		label:  func(*testing.T, int, string) {},
		serverWrites: func() int {
			return len(s.Writes())
		},
		comments: func(t *testing.T) []forge.Comment {
			var out []forge.Comment
			for _, c := range s.Comments("acme", "fleet", pr) {
				out = append(out, forge.Comment{ID: c.ID, Author: c.Author, Body: c.Body})
			}
			return out
		},
		prLabels: func(t *testing.T, n int) []string {
			return slices.Sorted(slices.Values(s.Labels("acme", "fleet", n)))
		},
	}
}

// giteaUsers are ferry's and the other user on the shared Gitea, made once.
var giteaUsers struct {
	once         sync.Once
	me, other    string
	meTok, otTok string
}

func giteaWorld(t *testing.T) *world {
	g := giteatest.Require(t)
	u := &giteaUsers
	u.once.Do(func() {
		u.me, u.other = giteatest.Unique("ferry-bot"), giteatest.Unique("someone-else")
		u.meTok, u.otTok = g.CreateUser(t, u.me), g.CreateUser(t, u.other)
	})
	if u.meTok == "" {
		t.Fatal("gitea users were not created")
	}
	repo := giteatest.Unique("fleet")
	g.CreateRepo(t, u.me, repo)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "README.md"), "fleet\n")
	g.PushDir(t, u.me, repo, dir, "main")
	writeFile(t, filepath.Join(dir, "README.md"), "fleet, changed\n")
	g.PushDir(t, u.me, repo, dir, "feature")
	pr, _, err := g.Client(t, u.meTok).CreatePullRequest(u.me, repo, gitea.CreatePullRequestOption{Head: "feature", Base: "main", Title: "Change things"})
	if err != nil {
		t.Fatalf("opening the pull request: %v", err)
	}
	newForge := func(api, tok string) *forge.Gitea {
		f, err := forge.NewGitea(forge.Config{Kind: forge.KindGitea, APIURL: api, Token: tok, Owner: u.me, Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	proxy, writes := countingProxy(t, g.URL)
	admin := g.Client(t, g.AdminToken)
	return &world{
		ferry:        &counter{Forge: newForge(proxy, u.meTok)},
		other:        newForge(g.URL, u.otTok),
		me:           u.me,
		owner:        u.me,
		repo:         repo,
		pr:           int(pr.Index),
		head:         pr.Head.Sha,
		token:        u.meTok,
		serverWrites: writes,
		branch: func(t *testing.T, name string) {
			t.Helper()
			d := t.TempDir()
			writeFile(t, filepath.Join(d, "README.md"), "fleet\n")
			writeFile(t, filepath.Join(d, name+".txt"), name+"\n")
			g.PushDir(t, u.me, repo, d, name)
		},
		label: func(t *testing.T, n int, label string) {
			t.Helper()
			labels, _, err := admin.ListRepoLabels(u.me, repo, gitea.ListLabelsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range labels {
				if l.Name == label {
					if _, _, err := admin.AddIssueLabels(u.me, repo, int64(n), gitea.IssueLabelsOption{Labels: []int64{l.ID}}); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatalf("no label %q in %s/%s", label, u.me, repo)
		},
		render: func(t *testing.T, md string) string {
			t.Helper()
			html, _, err := admin.RenderMarkdown(gitea.MarkdownOption{Text: md, Mode: "comment", Context: g.URL + u.me + "/" + repo})
			if err != nil {
				t.Fatalf("rendering markdown on gitea: %v", err)
			}
			return html
		},
		comments: func(t *testing.T) []forge.Comment {
			t.Helper()
			cs, _, err := admin.ListIssueComments(u.me, repo, pr.Index, gitea.ListIssueCommentOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var out []forge.Comment
			for _, c := range cs {
				out = append(out, forge.Comment{ID: c.ID, Author: c.Poster.UserName, Body: c.Body})
			}
			return out
		},
		prLabels: func(t *testing.T, n int) []string {
			t.Helper()
			p, _, err := admin.GetPullRequest(u.me, repo, int64(n))
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range p.Labels {
				out = append(out, l.Name)
			}
			slices.Sort(out)
			return out
		},
	}
}

// countingProxy forwards to the server at target and counts the write
// requests it forwards. It returns its own URL and the count.
func countingProxy(t *testing.T, target string) (string, func() int) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	srv := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		if r.In.Method != http.MethodGet && r.In.Method != http.MethodHead {
			writes.Add(1)
		}
	}})
	t.Cleanup(srv.Close)
	return srv.URL + "/", func() int { return int(writes.Load()) }
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// counter is a Forge that counts the write calls made through it.
type counter struct {
	forge.Forge
	mu     sync.Mutex
	writes []string
}

func (c *counter) count(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, what)
}

// Writes returns the write calls made so far and forgets them.
func (c *counter) Writes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

func (c *counter) CreateComment(ctx context.Context, n int, body string) (forge.Comment, error) {
	c.count("CreateComment")
	return c.Forge.CreateComment(ctx, n, body)
}

func (c *counter) EditComment(ctx context.Context, id int64, body string) error {
	c.count("EditComment")
	return c.Forge.EditComment(ctx, id, body)
}

func (c *counter) DeleteComment(ctx context.Context, id int64) error {
	c.count("DeleteComment")
	return c.Forge.DeleteComment(ctx, id)
}

func (c *counter) CreatePullRequest(ctx context.Context, pr forge.NewPullRequest) (forge.PullRequest, error) {
	c.count("CreatePullRequest")
	return c.Forge.CreatePullRequest(ctx, pr)
}

func (c *counter) EditPullRequest(ctx context.Context, n int, title, body string) error {
	c.count("EditPullRequest")
	return c.Forge.EditPullRequest(ctx, n, title, body)
}

func (c *counter) CreateIssue(ctx context.Context, is forge.NewIssue) (forge.Issue, error) {
	c.count("CreateIssue")
	return c.Forge.CreateIssue(ctx, is)
}

func (c *counter) EditIssue(ctx context.Context, n int, title, body string) error {
	c.count("EditIssue")
	return c.Forge.EditIssue(ctx, n, title, body)
}

func (c *counter) CloseIssue(ctx context.Context, n int) error {
	c.count("CloseIssue")
	return c.Forge.CloseIssue(ctx, n)
}

func (c *counter) SetCommitStatus(ctx context.Context, sha string, s forge.CommitStatus) error {
	c.count("SetCommitStatus")
	return c.Forge.SetCommitStatus(ctx, sha, s)
}

// mine returns the comments in cs by login that start with a marker of key.
func mine(cs []forge.Comment, login, key string) []forge.Comment {
	var out []forge.Comment
	for _, c := range cs {
		if strings.EqualFold(c.Author, login) && strings.HasPrefix(c.Body, "<!-- ferry:"+key+" part ") {
			out = append(out, c)
		}
	}
	return out
}
