package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/actions/actionstest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/verify/verifytest"
)

// pullRequestEvent writes the recorded pull_request payload with the
// revisions of a test repository in place of the recorded ones.
func pullRequestEvent(t *testing.T, src string, number int, base, head string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "events", src))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	pr := ev["pull_request"].(map[string]any)
	pr["number"] = number
	ev["number"] = number
	pr["base"].(map[string]any)["sha"] = base
	pr["head"].(map[string]any)["sha"] = head
	ev["before"], ev["after"] = base, head
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiffCommentGitHub runs diff --comment as a pull_request workflow step
// would, against a server speaking GitHub's REST JSON (githubtest).
func TestDiffCommentGitHub(t *testing.T) {
	gh := githubtest.New(t)
	gh.SetPerPage(2) // several pages of comments
	token := gh.AddUser("github-actions[bot]")
	gh.AddUser("mallory")
	gh.AddRepo("acme", "gitops")
	n := gh.AddPullRequest("acme", "gitops", "octocat", "shop-2.5.0", "main", "Bump shop", "")
	for i := 0; i < 3; i++ {
		gh.AddComment("acme", "gitops", n, "octocat", "looks good")
	}
	forged := "<!-- ferry:diff part 1 -->\nnot ferry's comment"
	forgedID := gh.AddComment("acme", "gitops", n, "mallory", forged)

	p, base := newPRRepo(t, "single-app", nil)
	p.replace("shop/base/deployment.yaml", "web:2.4.0", "web:2.5.0")
	head1 := p.commit("2.5.0")
	p.replace("shop/base/deployment.yaml", "web:2.5.0", "web:2.5.1")
	head2 := p.commit("2.5.1")

	// With trusted keys, the comment says how the head's commits verify.
	reviewer := verifytest.SSHKey(t, "reviewer@example.com")
	summary := filepath.Join(t.TempDir(), "summary.md")
	output := filepath.Join(t.TempDir(), "output")
	vars := func(head string) map[string]string {
		v := map[string]string{
			"GITHUB_ACTIONS":      "true",
			"GITHUB_EVENT_NAME":   "pull_request",
			"GITHUB_EVENT_PATH":   pullRequestEvent(t, "github-pull_request.json", n, base, head),
			"GITHUB_REPOSITORY":   "acme/gitops",
			"GITHUB_SERVER_URL":   "https://github.com",
			"GITHUB_API_URL":      gh.URL,
			"GITHUB_TOKEN":        token,
			"GITHUB_STEP_SUMMARY": summary,
			"GITHUB_OUTPUT":       output,
			"SOPS_AGE_KEY":        exampleKeyText(t),
			"FERRY_TRUSTED_KEYS":  reviewer.Public,
		}
		return v
	}
	ours := func() []githubtest.Comment {
		var out []githubtest.Comment
		for _, c := range gh.Comments("acme", "gitops", n) {
			if c.Author == "github-actions[bot]" {
				out = append(out, c)
			}
		}
		return out
	}

	res := ferry(t, vars(head1), "diff", "--repo", p.dir, "--comment", "--format", "markdown")
	if res.code != 0 {
		t.Fatalf("first run: exit %d: %s", res.code, res.stderr)
	}
	first := ours()
	if len(first) != 1 || !strings.Contains(first[0].Body, "web:2.5.0") || !strings.Contains(first[0].Body, "<!-- ferry:diff part 1 -->") {
		t.Fatalf("after the first run, ferry's comments: %+v", first)
	}
	if want := "⚠️ **Signatures** (the base's trusted keys): 1 commit, 0 signed by trusted keys, 1 unsigned: " + head1[:7]; !strings.Contains(first[0].Body, want) {
		t.Errorf("the comment lacks %q:\n%s", want, first[0].Body)
	}

	gh.ResetRequests()
	if res := ferry(t, vars(head1), "diff", "--repo", p.dir, "--comment"); res.code != 0 {
		t.Fatalf("second run: exit %d: %s", res.code, res.stderr)
	}
	if w := gh.Writes(); len(w) != 0 {
		t.Errorf("a re-run with the same report wrote %d times: %+v", len(w), w)
	}

	reportFile := filepath.Join(t.TempDir(), "ferry-diff.md")
	if res := ferry(t, vars(head2), "diff", "--repo", p.dir, "--comment", "--report-file", reportFile); res.code != 0 {
		t.Fatalf("third run: exit %d: %s", res.code, res.stderr)
	}
	outs := actionstest.Outputs(t, output)
	if outs["changed"] != "true" || outs["targets"] != `["production","staging"]` || outs["report-path"] != reportFile {
		t.Errorf("step outputs changed=%q targets=%q report-path=%q", outs["changed"], outs["targets"], outs["report-path"])
	}
	if b, err := os.ReadFile(reportFile); err != nil || !strings.Contains(string(b), "web:2.5.1") {
		t.Errorf("report file: %v\n%s", err, b)
	}
	third := ours()
	if len(third) != 1 || third[0].ID != first[0].ID || !strings.Contains(third[0].Body, "web:2.5.1") {
		t.Fatalf("the comment was not edited in place: before %+v, after %+v", first, third)
	}
	for _, c := range gh.Comments("acme", "gitops", n) {
		if c.ID == forgedID && c.Body != forged {
			t.Errorf("ferry edited mallory's comment carrying its marker: %q", c.Body)
		}
	}
	if len(gh.Comments("acme", "gitops", n)) != 5 {
		t.Errorf("comments on the pull request: %d, want 3 by octocat + mallory's + ferry's", len(gh.Comments("acme", "gitops", n)))
	}
	out, _ := os.ReadFile(output)
	if !regexp.MustCompile(`changed<<(\S+)\ntrue\n`).Match(out) {
		t.Errorf("step outputs lack changed=true:\n%s", out)
	}

	// No token at all in a step (its token input empty, or renamed in
	// action.yml so that its default never arrives): the error names the
	// input, and nothing is written.
	gh.ResetRequests()
	noToken := vars(head2)
	delete(noToken, "GITHUB_TOKEN")
	if res := ferry(t, noToken, "diff", "--repo", p.dir, "--comment"); res.code != 2 || !strings.Contains(res.stderr, "the step's token input is empty or not declared by its action.yml") {
		t.Errorf("no token: exit %d, stderr %s", res.code, res.stderr)
	}
	if w := gh.Writes(); len(w) != 0 {
		t.Errorf("a run without a token wrote %d times", len(w))
	}

	// A token without the permission: the error names it, the report is
	// still in the step summary.
	os.Remove(summary)
	gh.SetReadOnly(token, true)
	p.replace("shop/base/deployment.yaml", "web:2.5.1", "web:2.6.0")
	head3 := p.commit("2.6.0")
	res = ferry(t, vars(head3), "diff", "--repo", p.dir, "--comment")
	if res.code != 2 || !strings.Contains(res.stderr, "pull-requests: write") {
		t.Errorf("read-only token: exit %d, stderr %q", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(summary); !strings.Contains(string(b), "web:2.6.0") {
		t.Errorf("the step summary lacks the report after the comment failed:\n%s", b)
	}
}
