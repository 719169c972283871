package inputprovider_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/inputprovider"
)

// TestMain stops the Gitea the Gitea-backed tests start on first use.
func TestMain(m *testing.M) {
	code := m.Run()
	giteatest.Stop()
	os.Exit(code)
}

// The Gitea types against a real Gitea: a repository with branches, two
// open pull requests (one labelled) and tags, read with a token of the
// job's user.
func TestGiteaProviders(t *testing.T) {
	g := giteatest.Require(t)
	user := giteatest.Unique("rsip")
	token := g.CreateUser(t, user)
	repo := "fleet"
	g.CreateRepo(t, user, repo)
	push := func(branch string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(branch+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return g.PushDir(t, user, repo, dir, branch)
	}
	mainSHA := push("main")
	searchSHA := push("feat/search")
	loginSHA := push("fix/login")
	search := g.CreatePullRequest(t, token, user, repo, "feat/search", "main", "Search")
	login := g.CreatePullRequest(t, token, user, repo, "fix/login", "main", "Login fix")
	c := g.Client(t, token)
	l, _, err := c.CreateLabel(user, repo, gitea.CreateLabelOption{Name: "deploy/preview", Color: "#00aabb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.AddIssueLabels(user, repo, search.Number, gitea.IssueLabelsOption{Labels: []int64{l.ID}}); err != nil {
		t.Fatal(err)
	}
	for tag, target := range map[string]string{"v1.0.0": mainSHA, "v1.1.0": searchSHA, "v2.0.0-rc.1": loginSHA} {
		if _, _, err := c.CreateTag(user, repo, gitea.CreateTagOption{TagName: tag, Target: target}); err != nil {
			t.Fatal(err)
		}
	}
	opts := inputprovider.Options{Forge: &inputprovider.Forge{Kind: inputprovider.KindGitea, ServerURL: g.URL, APIURL: g.URL, Token: token}}
	url := g.URL + user + "/" + repo

	tests := []struct {
		name, spec string
		want       []map[string]any
	}{
		{"open pull requests", "type: GiteaPullRequest", []map[string]any{
			{"id": itoa(login.Number), "sha": loginSHA, "branch": "fix/login", "author": user, "title": "Login fix"},
			{"id": itoa(search.Number), "sha": searchSHA, "branch": "feat/search", "author": user, "title": "Search"},
		}},
		{"labelled pull requests", "type: GiteaPullRequest\n  filter: {labels: [deploy/preview]}", []map[string]any{
			{"id": itoa(search.Number), "sha": searchSHA, "branch": "feat/search", "author": user, "title": "Search"},
		}},
		{"branches", "type: GiteaBranch\n  filter: {excludeBranch: ^main$}", []map[string]any{
			{"id": inputprovider.Checksum("feat/search"), "branch": "feat/search", "sha": searchSHA},
			{"id": inputprovider.Checksum("fix/login"), "branch": "fix/login", "sha": loginSHA},
		}},
		{"tags by semver", "type: GiteaTag\n  filter: {semver: '>=1.0.0'}", []map[string]any{
			{"id": inputprovider.Checksum("v1.1.0"), "tag": "v1.1.0", "sha": searchSHA},
			{"id": inputprovider.Checksum("v1.0.0"), "tag": "v1.0.0", "sha": mainSHA},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider(t, "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata: {name: p, namespace: ns}\nspec:\n  url: "+url+"\n  "+tt.spec)
			got, err := inputprovider.Resolve(t.Context(), p, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
