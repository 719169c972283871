package forge_test

import (
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge"
)

func TestForRepoURL(t *testing.T) {
	for _, tc := range []struct {
		kind, address string
		want          forge.Config
		err           string
	}{
		{kind: "github", address: "https://github.com/acme/fleet", want: forge.Config{Kind: forge.KindGitHub, APIURL: forge.DefaultGitHubAPIURL, Owner: "acme", Repo: "fleet", Token: "tok"}},
		{kind: "github", address: "https://ghe.example.com/acme/fleet.git", want: forge.Config{Kind: forge.KindGitHub, APIURL: "https://ghe.example.com/api/v3/", Owner: "acme", Repo: "fleet", Token: "tok"}},
		{kind: "gitea", address: " http://127.0.0.1:3000/git/acme/fleet/ ", want: forge.Config{Kind: forge.KindGitea, APIURL: "http://127.0.0.1:3000/git/", Owner: "acme", Repo: "fleet", Token: "tok"}},
		{kind: "gitea", address: "https://user:hunter2@gitea.example.com", err: "names no repository"},
		{kind: "github", address: "ssh://git@github.com/acme/fleet", err: "not a repository URL"},
		{kind: "slack", address: "https://github.com/acme/fleet", err: `provider type "slack" sets no commit statuses`},
	} {
		got, err := forge.ForRepoURL(tc.kind, tc.address, "tok")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: error %v, want %q", tc.kind, tc.address, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: the error quotes the address: %v", tc.address, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %+v, %v; want %+v", tc.kind, tc.address, got, err, tc.want)
		}
	}
}
