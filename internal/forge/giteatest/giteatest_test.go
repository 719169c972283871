package giteatest_test

import (
	"os"
	"path/filepath"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	giteatest.Stop()
	os.Exit(code)
}

func TestStartPushAndClone(t *testing.T) {
	g := giteatest.Require(t)
	t.Logf("gitea started in %s at %s", g.Startup, g.URL)

	owner := giteatest.Unique("owner")
	tok := g.CreateUser(t, owner)
	me, _, err := g.Client(t, tok).GetMyUserInfo()
	if err != nil || me.UserName != owner {
		t.Fatalf("user token: got %v, %v; want %s", me, err, owner)
	}
	repo := giteatest.Unique("repo")
	g.CreateRepo(t, owner, repo)

	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "one\n")
	write("sub/b.txt", "two\n")
	main1 := g.PushDir(t, owner, repo, dir, "main")

	write("a.txt", "changed\n")
	if err := os.Remove(filepath.Join(dir, "sub/b.txt")); err != nil {
		t.Fatal(err)
	}
	feature := g.PushDir(t, owner, repo, dir, "feature")
	if feature == main1 {
		t.Fatal("feature commit equals main commit")
	}

	c := g.Client(t, tok)
	br, _, err := c.GetRepoBranch(owner, repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if br.Commit.ID != main1 {
		t.Errorf("main is at %s, want %s", br.Commit.ID, main1)
	}
	fb, _, err := c.GetRepoBranch(owner, repo, "feature")
	if err != nil {
		t.Fatal(err)
	}
	if fb.Commit.ID != feature {
		t.Errorf("feature is at %s, want %s", fb.Commit.ID, feature)
	}
	// feature is based on main: a pull request between them can be opened.
	pr, _, err := c.CreatePullRequest(owner, repo, gitea.CreatePullRequestOption{Head: "feature", Base: "main", Title: "t"})
	if err != nil {
		t.Fatalf("opening a pull request feature -> main: %v", err)
	}
	files, _, err := c.ListPullRequestFiles(owner, repo, pr.Index, gitea.ListPullRequestFilesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Filename] = f.Status
	}
	if got["a.txt"] != "changed" || got["sub/b.txt"] != "deleted" || len(got) != 2 {
		t.Errorf("pull request files = %v, want a.txt changed and sub/b.txt deleted", got)
	}
	if want := g.URL + owner + "/" + repo + ".git"; g.CloneURL(owner, repo) != want {
		t.Errorf("CloneURL = %s, want %s", g.CloneURL(owner, repo), want)
	}
}
