package giteatest_test

import (
	"fmt"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

func TestPullRequestsIssuesAndComments(t *testing.T) {
	g := giteatest.Require(t)
	owner, other := giteatest.Unique("owner"), giteatest.Unique("other")
	tok, otherTok := g.CreateUser(t, owner), g.CreateUser(t, other)
	repo := giteatest.Unique("repo")
	g.CreateRepo(t, owner, repo)
	dir := testtree.New(t, map[string]string{"a.txt": "one\n"})
	g.PushDir(t, owner, repo, dir, "main")
	testtree.Write(t, dir, map[string]string{"a.txt": "two\n"})
	g.PushDir(t, owner, repo, dir, "feature")

	pr := g.CreatePullRequest(t, tok, owner, repo, "feature", "main", "Change a")
	want := giteatest.PullRequest{Number: pr.Number, Title: "Change a", Head: "feature", Base: "main",
		URL: fmt.Sprintf("%s%s/%s/pulls/%d", g.URL, owner, repo, pr.Number)}
	if diff := cmp.Diff(want, pr); diff != "" {
		t.Errorf("created pull request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]giteatest.PullRequest{want}, g.OpenPullRequests(t, otherTok, owner, repo)); diff != "" {
		t.Errorf("open pull requests (-want +got):\n%s", diff)
	}

	// More comments than a page, by two users, all listed oldest first.
	var wantComments []giteatest.Comment
	for i := range giteatest.PageSize + 2 {
		author, token := owner, tok
		if i%3 == 0 {
			author, token = other, otherTok
		}
		c := g.CreateComment(t, token, owner, repo, pr.Number, fmt.Sprintf("comment %d", i))
		wantComments = append(wantComments, giteatest.Comment{ID: c.ID, Author: author, Body: fmt.Sprintf("comment %d", i)})
		if c != wantComments[i] {
			t.Errorf("created comment %+v, want %+v", c, wantComments[i])
		}
	}
	if diff := cmp.Diff(wantComments, g.Comments(t, tok, owner, repo, pr.Number)); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}

	// Issues leave the pull request out and carry labels and comments.
	c := g.Client(t, tok)
	label, _, err := c.CreateLabel(owner, repo, gitea.CreateLabelOption{Name: "drift", Color: "#ff0000"})
	if err != nil {
		t.Fatal(err)
	}
	is, _, err := c.CreateIssue(owner, repo, gitea.CreateIssueOption{Title: "Drift", Body: "body", Labels: []int64{label.ID}})
	if err != nil {
		t.Fatal(err)
	}
	g.CreateComment(t, otherTok, owner, repo, is.Index, "seen")
	closed := gitea.StateClosed
	if _, _, err := c.EditIssue(owner, repo, is.Index, gitea.EditIssueOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	wantIssues := []giteatest.Issue{{Number: is.Index, Title: "Drift", Body: "body", State: "closed", Labels: []string{"drift"}, Comments: []string{"seen"}}}
	if diff := cmp.Diff(wantIssues, g.Issues(t, tok, owner, repo)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}

	if html := g.RenderMarkdown(t, tok, "**bold** <script>x</script>"); !strings.Contains(html, "<strong>bold</strong>") || strings.Contains(html, "<script") {
		t.Errorf("rendered markdown: %s", html)
	}
}
