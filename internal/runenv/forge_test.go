package runenv

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/inputprovider"
)

// The forge ResourceSetInputProviders may call with the job's token is
// the one the Actions environment names; outside Actions there is none.
func TestInputProvidersFromEnvironment(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want *inputprovider.Forge
	}{
		{"github.com", map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": "https://api.github.com", "GITHUB_REPOSITORY": "lab/fleet", "GITHUB_TOKEN": "t1"},
			&inputprovider.Forge{Kind: "github", ServerURL: "https://github.com", APIURL: "https://api.github.com", Token: "t1"}},
		{"gitea", map[string]string{"GITEA_ACTIONS": "true", "GITHUB_SERVER_URL": "https://git.example.com", "GITHUB_REPOSITORY": "lab/fleet", "GITEA_TOKEN": "t2"},
			&inputprovider.Forge{Kind: "gitea", ServerURL: "https://git.example.com", APIURL: "https://git.example.com", Token: "t2"}},
		{"outside actions", map[string]string{"GITHUB_TOKEN": "t3"}, nil},
		{"no token", map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "lab/fleet"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(func(k string) string { return tt.vars[k] }, nil, io.Discard)
			got := e.inputProviders()
			if diff := cmp.Diff(tt.want, got.Forge); diff != "" {
				t.Errorf("forge (-want +got):\n%s", diff)
			}
		})
	}
}
