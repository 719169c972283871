package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/verify/verifytest"
)

// TestDiffCommentGitea opens a pull request on a real Gitea and runs diff
// --comment as a Gitea Actions step would, three times with different
// heads: the comment is created, split over several comments when the
// diff is huge, shrunk back; another user's comment with ferry's marker
// is never touched; Gitea renders the comment with its structure intact.
func TestDiffCommentGitea(t *testing.T) {
	g := giteatest.Require(t)
	bot := giteatest.Unique("ferry-bot")
	token := g.CreateUser(t, bot)
	other := giteatest.Unique("mallory")
	otherToken := g.CreateUser(t, other)
	name := giteatest.Unique("gitops")
	g.CreateRepo(t, bot, name)

	p, base := newPRRepo(t, "single-app", nil)
	p.push(g, bot, name, "main")
	p.replace("shop/base/deployment.yaml", "web:2.4.0", "web:2.5.0")
	head1 := p.commit("2.5.0")
	p.push(g, bot, name, "shop-2.5.0")
	pr := g.CreatePullRequest(t, token, bot, name, "shop-2.5.0", "main", "Bump shop")
	forged := "<!-- ferry:diff part 1 -->\nnot ferry's comment"
	g.CreateComment(t, otherToken, bot, name, pr.Number, forged)

	// With trusted keys, the comment says how the head's commits verify.
	reviewer := verifytest.SSHKey(t, "reviewer@example.com")
	summary := filepath.Join(t.TempDir(), "summary.md")
	vars := func(head string) map[string]string {
		return map[string]string{
			"GITHUB_ACTIONS":      "true",
			"GITEA_ACTIONS":       "true",
			"GITHUB_EVENT_NAME":   "pull_request",
			"GITHUB_EVENT_PATH":   pullRequestEvent(t, "gitea-pull_request.json", int(pr.Number), base, head),
			"GITHUB_REPOSITORY":   bot + "/" + name,
			"GITHUB_SERVER_URL":   strings.TrimSuffix(g.URL, "/"),
			"GITHUB_API_URL":      g.URL + "api/v1",
			"GITHUB_TOKEN":        token,
			"GITHUB_STEP_SUMMARY": summary,
			"GITHUB_OUTPUT":       filepath.Join(t.TempDir(), "output"),
			"SOPS_AGE_KEY":        exampleKeyText(t),
			"FERRY_TRUSTED_KEYS":  reviewer.Public,
		}
	}
	comments := func() (ours, theirs []giteatest.Comment) {
		t.Helper()
		for _, c := range g.Comments(t, token, bot, name, pr.Number) {
			if c.Author == bot {
				ours = append(ours, c)
			} else {
				theirs = append(theirs, c)
			}
		}
		return ours, theirs
	}
	diffRun := func(head string) {
		t.Helper()
		if res := ferry(t, vars(head), "diff", "--repo", p.dir, "--comment"); res.code != 0 {
			t.Fatalf("diff --comment: exit %d: %s", res.code, res.stderr)
		}
	}

	// 1: one comment created.
	diffRun(head1)
	ours, _ := comments()
	if len(ours) != 1 || !strings.Contains(ours[0].Body, "web:2.5.0") {
		t.Fatalf("first run: ferry's comments %d: %+v", len(ours), ours)
	}
	if want := "⚠️ **Signatures** (the base's trusted keys): 1 commit, 0 signed by trusted keys, 1 unsigned: " + head1[:7]; !strings.Contains(ours[0].Body, want) {
		t.Errorf("the comment lacks %q:\n%s", want, ours[0].Body)
	}
	firstID := ours[0].ID

	// 2: a huge diff, split over numbered comments, the first edited in place.
	for i := 0; i < 24; i++ {
		var data strings.Builder
		for j := 0; j < 400; j++ {
			fmt.Fprintf(&data, "  key%03d: \"value %d of generated map %d, long enough to fill lines\"\n", j, j, i)
		}
		p.write(fmt.Sprintf("shop/base/generated-%02d.yaml", i), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: generated-%02d\ndata:\n%s", i, data.String()))
		p.replace("shop/base/kustomization.yaml", "resources:\n", fmt.Sprintf("resources:\n  - generated-%02d.yaml\n", i))
	}
	head2 := p.commit("huge")
	p.push(g, bot, name, "shop-2.5.0")
	diffRun(head2)
	ours, _ = comments()
	if len(ours) < 3 {
		t.Fatalf("huge diff: %d comments, want it split over at least 3", len(ours))
	}
	if ours[0].ID != firstID {
		t.Errorf("part 1 is a new comment (%d), not the first one edited (%d)", ours[0].ID, firstID)
	}
	for i, c := range ours {
		if n := len([]rune(c.Body)); n > 65536 {
			t.Errorf("part %d has %d characters", i+1, n)
		}
		if !strings.Contains(c.Body, fmt.Sprintf("<!-- ferry:diff part %d -->", i+1)) {
			t.Errorf("comment %d lacks its part marker", i+1)
		}
		if strings.Count(c.Body, "<details>") != strings.Count(c.Body, "</details>") {
			t.Errorf("part %d leaves a details element open", i+1)
		}
		html := g.RenderMarkdown(t, token, c.Body)
		if strings.Contains(html, "<script") {
			t.Errorf("part %d renders a script element", i+1)
		}
		if i == 0 && (!strings.Contains(html, "<table") || !strings.Contains(html, "<details") || !strings.Contains(html, "<summary>")) {
			t.Errorf("part 1 does not render as a table with collapsible sections:\n%s", html[:min(len(html), 2000)])
		}
		if i > 0 && !strings.Contains(html, "<pre") {
			t.Errorf("part %d renders no code block", i+1)
		}
	}

	// 3: the diff shrinks back to one comment; the surplus parts go.
	for i := 0; i < 24; i++ {
		p.remove(fmt.Sprintf("shop/base/generated-%02d.yaml", i))
		p.replace("shop/base/kustomization.yaml", fmt.Sprintf("  - generated-%02d.yaml\n", i), "")
	}
	p.replace("shop/base/deployment.yaml", "web:2.5.0", "web:2.5.1")
	head3 := p.commit("2.5.1")
	p.push(g, bot, name, "shop-2.5.0")
	diffRun(head3)
	ours, theirs := comments()
	if len(ours) != 1 || ours[0].ID != firstID || !strings.Contains(ours[0].Body, "web:2.5.1") || strings.Contains(ours[0].Body, "generated-") {
		t.Fatalf("after shrinking: %d comments by ferry (first %v)", len(ours), ours)
	}
	if len(theirs) != 1 || theirs[0].Body != forged {
		t.Errorf("the other user's comment with ferry's marker was touched: %+v", theirs)
	}
	if b, _ := os.ReadFile(summary); !strings.Contains(string(b), "web:2.5.1") {
		t.Error("the step summary lacks the report")
	}
}
