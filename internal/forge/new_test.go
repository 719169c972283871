package forge_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge"
)

func TestDetect(t *testing.T) {
	github := map[string]string{
		"GITHUB_ACTIONS":    "true",
		"GITHUB_SERVER_URL": "https://github.com",
		"GITHUB_API_URL":    "https://api.github.com",
		"GITHUB_REPOSITORY": "acme/fleet",
		"GITHUB_TOKEN":      "ghs_x",
	}
	gitea := map[string]string{
		"GITHUB_ACTIONS":    "true",
		"GITEA_ACTIONS":     "true",
		"GITHUB_SERVER_URL": "https://gitea.example.com",
		"GITHUB_API_URL":    "https://gitea.example.com/api/v1",
		"GITHUB_REPOSITORY": "acme/fleet",
		"GITHUB_TOKEN":      "gta_x",
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name     string
		env      map[string]string
		override forge.Kind
		want     forge.Config
		err      string
	}{
		{name: "github", env: github,
			want: forge.Config{Kind: forge.KindGitHub, APIURL: "https://api.github.com", Token: "ghs_x", Owner: "acme", Repo: "fleet"}},
		{name: "github without api url", env: with(github, "GITHUB_API_URL", ""),
			want: forge.Config{Kind: forge.KindGitHub, APIURL: "https://api.github.com/", Token: "ghs_x", Owner: "acme", Repo: "fleet"}},
		{name: "github enterprise", env: with(github, "GITHUB_SERVER_URL", "https://ghe.example.com", "GITHUB_API_URL", ""),
			want: forge.Config{Kind: forge.KindGitHub, APIURL: "https://ghe.example.com/api/v3/", Token: "ghs_x", Owner: "acme", Repo: "fleet"}},
		{name: "gitea", env: gitea,
			want: forge.Config{Kind: forge.KindGitea, APIURL: "https://gitea.example.com", Token: "gta_x", Owner: "acme", Repo: "fleet"}},
		{name: "gitea without server url", env: with(gitea, "GITHUB_SERVER_URL", ""),
			want: forge.Config{Kind: forge.KindGitea, APIURL: "https://gitea.example.com", Token: "gta_x", Owner: "acme", Repo: "fleet"}},
		{name: "forgejo", env: with(gitea, "GITEA_ACTIONS", "", "FORGEJO_ACTIONS", "true"),
			want: forge.Config{Kind: forge.KindGitea, APIURL: "https://gitea.example.com", Token: "gta_x", Owner: "acme", Repo: "fleet"}},
		{name: "override wins", env: gitea, override: forge.KindGitHub,
			want: forge.Config{Kind: forge.KindGitHub, APIURL: "https://gitea.example.com/api/v1", Token: "gta_x", Owner: "acme", Repo: "fleet"}},
		{name: "override to gitea", env: with(github, "GITHUB_SERVER_URL", "https://git.example.com"), override: forge.KindGitea,
			want: forge.Config{Kind: forge.KindGitea, APIURL: "https://git.example.com", Token: "ghs_x", Owner: "acme", Repo: "fleet"}},
		{name: "unknown override", env: github, override: "gitlab", err: `unknown forge "gitlab"`},
		{name: "no actions", env: map[string]string{"GITHUB_TOKEN": "x"}, err: "GITEA_ACTIONS, GITHUB_SERVER_URL and GITHUB_API_URL are all unset"},
		{name: "gitea without urls", env: with(gitea, "GITHUB_SERVER_URL", "", "GITHUB_API_URL", ""), err: "GITHUB_SERVER_URL is not set"},
		{name: "no repository", env: with(github, "GITHUB_REPOSITORY", ""), err: "GITHUB_REPOSITORY is not set"},
		{name: "bad repository", env: with(github, "GITHUB_REPOSITORY", "fleet"), err: `GITHUB_REPOSITORY is "fleet", want owner/name`},
		{name: "no token", env: with(gitea, "GITHUB_TOKEN", ""), err: "GITHUB_TOKEN is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := forge.Detect(func(k string) string { return tt.env[k] }, tt.override)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Detect (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNew(t *testing.T) {
	cfg := forge.Config{APIURL: "https://api.github.com/", Token: "t", Owner: "acme", Repo: "fleet"}
	for kind, want := range map[forge.Kind]string{forge.KindGitHub: "github", forge.KindGitea: "gitea"} {
		c := cfg
		c.Kind = kind
		f, err := forge.New(c)
		if err != nil || string(f.Kind()) != want {
			t.Errorf("New(%s) = %v, %v", kind, f, err)
		}
	}
	for _, c := range []forge.Config{
		{Kind: "gitlab", Token: "t", Owner: "a", Repo: "b"},
		{Token: "t", Owner: "a", Repo: "b"},
		{Kind: forge.KindGitHub, Owner: "a", Repo: "b"},
		{Kind: forge.KindGitea, APIURL: "https://x", Token: "t", Owner: "a"},
		{Kind: forge.KindGitea, Token: "t", Owner: "a", Repo: "b"},
	} {
		if _, err := forge.New(c); err == nil {
			t.Errorf("New(%+v): no error", c)
		}
	}
	if k, err := forge.ParseKind(" GitHub "); err != nil || k != forge.KindGitHub {
		t.Errorf("ParseKind: %v, %v", k, err)
	}
	if _, err := forge.ParseKind("gitlab"); err == nil {
		t.Error("ParseKind(gitlab): no error")
	}
}
