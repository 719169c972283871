package inputprovider_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/inputprovider"
)

// The GitHub types against the test server speaking GitHub's documented
// REST shapes: open pull requests filtered by label, newest first;
// branches by expression; tags by semver, highest first, with the
// documented ids and spec.defaultValues under each input set.
func TestGitHubProviders(t *testing.T) {
	gh := githubtest.New(t)
	gh.SetPerPage(2) // the client must follow pagination
	token := gh.AddUser("ci-bot")
	gh.AddUser("alice")
	gh.AddRepo("lab", "app")
	one := gh.AddPullRequest("lab", "app", "alice", "feat/search", "main", "Search", "")
	two := gh.AddPullRequest("lab", "app", "alice", "fix/login", "main", "Login fix", "")
	three := gh.AddPullRequest("lab", "app", "alice", "feat/ui", "main", "UI", "")
	gh.AddLabels("lab", "app", one, "deploy/preview")
	gh.AddLabels("lab", "app", three, "deploy/preview", "other")
	_ = two
	gh.SetBranch("lab", "app", "main", "1111111111111111111111111111111111111111")
	gh.SetBranch("lab", "app", "feat/a", "2222222222222222222222222222222222222222")
	gh.SetBranch("lab", "app", "feat/b", "3333333333333333333333333333333333333333")
	gh.SetBranch("lab", "app", "fix/c", "4444444444444444444444444444444444444444")
	for _, tag := range []string{"v1.0.0", "v1.2.0", "v2.0.0-rc.1", "v1.10.0", "latest"} {
		gh.AddTag("lab", "app", tag, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"+tag[:min(4, len(tag))])
	}
	opts := inputprovider.Options{Forge: &inputprovider.Forge{
		Kind: inputprovider.KindGitHub, ServerURL: "https://github.example.com", APIURL: gh.URL, Token: token,
	}}

	tests := []struct {
		name, spec string
		want       []map[string]any
	}{
		{"pull requests with a label", `
  type: GitHubPullRequest
  url: https://github.example.com/lab/app
  filter: {labels: [deploy/preview]}
  defaultValues: {chart: charts/app}`, []map[string]any{
			{"id": "3", "sha": gh.PullHeadSHA("lab", "app", three), "branch": "feat/ui", "author": "alice", "title": "UI", "chart": "charts/app"},
			{"id": "1", "sha": gh.PullHeadSHA("lab", "app", one), "branch": "feat/search", "author": "alice", "title": "Search", "chart": "charts/app"},
		}},
		{"pull requests by branch, limited", `
  type: GitHubPullRequest
  url: https://github.example.com/lab/app.git
  filter: {includeBranch: "^f", excludeBranch: "^feat/ui$", limit: 1}`, []map[string]any{
			{"id": "2", "sha": gh.PullHeadSHA("lab", "app", two), "branch": "fix/login", "author": "alice", "title": "Login fix"},
		}},
		{"branches", `
  type: GitHubBranch
  url: https://github.example.com/lab/app
  filter: {includeBranch: "^feat/"}`, []map[string]any{
			{"id": inputprovider.Checksum("feat/a"), "branch": "feat/a", "sha": "2222222222222222222222222222222222222222"},
			{"id": inputprovider.Checksum("feat/b"), "branch": "feat/b", "sha": "3333333333333333333333333333333333333333"},
		}},
		{"tags by semver", `
  type: GitHubTag
  url: https://github.example.com/lab/app
  filter: {semver: ">=1.1.0", limit: 2}`, []map[string]any{
			{"id": inputprovider.Checksum("v1.10.0"), "tag": "v1.10.0", "sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaav1.1"},
			{"id": inputprovider.Checksum("v1.2.0"), "tag": "v1.2.0", "sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaav1.2"},
		}},
		{"tags by expression", `
  type: GitHubTag
  url: https://github.example.com/lab/app
  filter: {includeTag: "^v", excludeTag: "-rc"}`, []map[string]any{
			{"id": inputprovider.Checksum("v1.0.0"), "tag": "v1.0.0", "sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaav1.0"},
			{"id": inputprovider.Checksum("v1.2.0"), "tag": "v1.2.0", "sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaav1.2"},
			{"id": inputprovider.Checksum("v1.10.0"), "tag": "v1.10.0", "sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaav1.1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider(t, "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata: {name: p, namespace: flux-system}\nspec:"+tt.spec)
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

// The id of a tag is the Adler-32 of its name: the API's own example
// exports tag 6.0.4 with id 48955639.
func TestChecksumAsDocumented(t *testing.T) {
	if got := inputprovider.Checksum("6.0.4"); got != "48955639" {
		t.Errorf("Checksum(6.0.4) = %s, want 48955639", got)
	}
}
