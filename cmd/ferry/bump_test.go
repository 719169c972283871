package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBumpDockerRegistry(t *testing.T) {
	reg := startBumpRegistry(t)

	t.Run("dry run prints the exact edit and changes nothing", func(t *testing.T) {
		repo := bumpScenario(t, reg.Host, "fleet", nil).dir
		before := readTree(t, repo)
		res := ferry(t, reg.env(), "bump", "--dry-run", "--repo", repo)
		if res.code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
		}
		golden(t, "bump/fleet.diff", []byte(reg.placeholders(res.stdout)))
		golden(t, "bump/fleet.dry-run.stderr", []byte(reg.placeholders(res.stderr)))
		if diff := cmp.Diff(before, readTree(t, repo)); diff != "" {
			t.Errorf("--dry-run changed files (-before +after):\n%s", diff)
		}
	})

	t.Run("plain run rewrites exactly the marked lines", func(t *testing.T) {
		repo := bumpScenario(t, reg.Host, "fleet", nil).dir
		res := ferry(t, reg.env(), "bump", "--repo", repo)
		if res.code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
		}
		want := bumpScenario(t, reg.Host, "fleet-bumped", nil).tree()
		if diff := cmp.Diff(want, readTree(t, repo)); diff != "" {
			t.Errorf("bumped repository (-want +got):\n%s", diff)
		}
		golden(t, "bump/fleet.stdout", []byte(reg.placeholders(res.stdout)))
		// A second run has nothing left to do.
		again := ferry(t, reg.env(), "bump", "--dry-run", "--repo", repo)
		if again.code != exitOK || again.stdout != "" {
			t.Errorf("second run: exit %d, diff:\n%s\nstderr:\n%s", again.code, again.stdout, again.stderr)
		}
	})

	t.Run("one policy", func(t *testing.T) {
		repo := bumpScenario(t, reg.Host, "fleet", nil).dir
		res := ferry(t, reg.env(), "bump", "--repo", repo, "--policy", "apps/build")
		if res.code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
		}
		want := bumpScenario(t, reg.Host, "fleet", map[string][2]string{
			"apps/build/values.yaml": {"'03300207'", "'03300208'"},
		}).tree()
		if diff := cmp.Diff(want, readTree(t, repo)); diff != "" {
			t.Errorf("repository (-want +got):\n%s", diff)
		}
	})

	t.Run("webhook payload scans only the pushed image", func(t *testing.T) {
		repo := bumpScenario(t, reg.Host, "fleet", nil).dir
		payload := filepath.Join(t.TempDir(), "event.json")
		harbor := `{"type": "PUSH_ARTIFACT", "event_data": {"resources": [{"tag": "api-0.21.0", "resource_url": "` + reg.Host + `/team/mono:api-0.21.0"}],
		  "repository": {"name": "mono", "namespace": "team", "repo_full_name": "team/mono"}}}`
		if err := os.WriteFile(payload, []byte(harbor), 0o644); err != nil {
			t.Fatal(err)
		}
		res := ferry(t, reg.env(), "bump", "--repo", repo, "--webhook-payload", payload)
		if res.code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
		}
		want := bumpScenario(t, reg.Host, "fleet", map[string][2]string{
			"apps/mono/kustomization.yaml": {`"api-0.20.0"`, `"api-0.21.0"`},
		}).tree()
		if diff := cmp.Diff(want, readTree(t, repo)); diff != "" {
			t.Errorf("repository (-want +got):\n%s", diff)
		}
	})

	t.Run("no matching tag is a warning, not an error", func(t *testing.T) {
		repo := bumpScenario(t, reg.Host, "fleet", map[string][2]string{
			"clusters/prod/image-automation.yaml": {"range: '>=1.0.0'", "range: '>=9.0.0'"},
		}).dir
		before := readTree(t, repo)
		res := ferry(t, reg.env(), "bump", "--repo", repo, "--policy", "app")
		if res.code != exitOK {
			t.Fatalf("exit %d, want 0; stderr:\n%s", res.code, res.stderr)
		}
		want := "ferry: warning: ImagePolicy/flux-system/app: no tag of " + reg.Host + "/team/app matches the policy (6 tags listed); nothing to bump\n"
		if res.stderr != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", res.stderr, want)
		}
		if diff := cmp.Diff(before, readTree(t, repo)); diff != "" {
			t.Errorf("files changed (-before +after):\n%s", diff)
		}
	})

	// Bad inputs: exit 2, a message naming the policy or the file, and
	// not one file changed (the other policies would have bumped).
	closed := closedPort(t)
	bad := []struct {
		name  string
		edits map[string][2]string
		env   map[string]string
		want  string
	}{
		{
			name:  "invalid regex",
			edits: map[string][2]string{"clusters/prod/image-automation.yaml": {"'^api-(?P<version>.*)$'", "'^api-(?P<version>.*$'"}},
			want:  "ferry: ImagePolicy/flux-system/api (clusters/prod/image-automation.yaml:35): filterTags.pattern: invalid regular expression \"^api-(?P<version>.*$\": missing closing ): `^api-(?P<version>.*$`\n",
		},
		{
			name:  "extract naming a missing group",
			edits: map[string][2]string{"clusters/prod/image-automation.yaml": {"extract: '$version'", "extract: '$ver'"}},
			want:  "ferry: ImagePolicy/flux-system/api (clusters/prod/image-automation.yaml:35): filterTags.extract \"$ver\": the pattern has no group named \"ver\" (it has version)\n",
		},
		{
			name:  "invalid semver range",
			edits: map[string][2]string{"clusters/prod/image-automation.yaml": {"range: '>=1.0.0'", "range: '>=1.0.0 <<2'"}},
			want:  "ferry: ImagePolicy/flux-system/app (clusters/prod/image-automation.yaml:13): policy.semver.range \">=1.0.0 <<2\": improper constraint: \">=1.0.0 <<2\"\n",
		},
		{
			name:  "marker naming a policy that does not exist",
			edits: map[string][2]string{"apps/app/deployment.yaml": {`image: "REGISTRY/team/app:1.23.0"`, `image: "REGISTRY/team/app:1.23.0" # {"$imagepolicy": "flux-system:app-migrate"}`}},
			want:  "ferry: apps/app/deployment.yaml:21: marker names ImagePolicy/flux-system/app-migrate, which the repository does not declare\n",
		},
		{
			name: "registry 401",
			env:  map[string]string{"FERRY_SECRET_REGCRED_PASSWORD": "wrong-password"},
			want: "ferry: ImagePolicy/flux-system/app: registry REGISTRY rejected the credentials from FERRY_SECRET_REGCRED_USERNAME/_PASSWORD for REGISTRY/team/app (401 Unauthorized)\n",
		},
		{
			name:  "registry unreachable",
			edits: map[string][2]string{"clusters/prod/image-automation.yaml": {"image: REGISTRY/team/build", "image: " + closed + "/team/build"}},
			want:  "ferry: ImagePolicy/apps/build: registry " + closed + " is unreachable (reading " + closed + "/team/build): dial tcp " + closed + ": connect: connection refused\n",
		},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			// The fixture's REGISTRY is the live registry; edits name
			// the placeholder, so apply them before substituting.
			repo := bumpScenario(t, reg.Host, "fleet", placeholderEdits(tc.edits, reg.Host)).dir
			before := readTree(t, repo)
			env := reg.env()
			for k, v := range tc.env {
				env[k] = v
			}
			for _, mode := range [][]string{nil, {"--dry-run"}} {
				res := ferry(t, env, append([]string{"bump", "--repo", repo}, mode...)...)
				if res.code != exitError {
					t.Errorf("%v: exit %d, want 2; stderr:\n%s", mode, res.code, res.stderr)
				}
				if got := reg.placeholders(res.stderr); got != tc.want {
					t.Errorf("%v: stderr:\n%s\nwant:\n%s", mode, got, tc.want)
				}
				if res.stdout != "" {
					t.Errorf("%v: stdout:\n%s", mode, res.stdout)
				}
				if strings.Contains(res.stderr, "wrong-password") || strings.Contains(res.stderr, reg.Password) {
					t.Errorf("%v: stderr shows a password", mode)
				}
			}
			if diff := cmp.Diff(before, readTree(t, repo)); diff != "" {
				t.Errorf("files changed (-before +after):\n%s", diff)
			}
		})
	}
}

// placeholderEdits writes REGISTRY in edits as host, as the fixture's
// files hold it once copied.
func placeholderEdits(edits map[string][2]string, host string) map[string][2]string {
	out := map[string][2]string{}
	for k, e := range edits {
		out[k] = [2]string{strings.ReplaceAll(e[0], "REGISTRY", host), strings.ReplaceAll(e[1], "REGISTRY", host)}
	}
	return out
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestBumpFlags(t *testing.T) {
	t.Parallel()
	repo := bumpScenario(t, "127.0.0.1:1", "fleet", nil).dir
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"dry-run and pr", []string{"--dry-run", "--pr"}, "ferry: --dry-run and --pr exclude each other\n"},
		{"unknown policy", []string{"--policy", "nope"}, "ferry: --policy \"nope\": no such image policy (the repository has apps/build, flux-system/api, flux-system/app, flux-system/sherpa)\n"},
		{"not a repository", []string{"--repo", filepath.Join(repo, "missing")}, "ferry: repository " + filepath.Join(repo, "missing") + ": not a directory\n"},
		{"unreadable webhook payload", []string{"--webhook-payload", filepath.Join(repo, "missing.json")}, "ferry: --webhook-payload: open " + filepath.Join(repo, "missing.json") + ": no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"bump", "--repo", repo}, tc.args...)
			res := ferry(t, nil, args...)
			if res.code != exitError || res.stderr != tc.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", res.code, res.stderr, tc.want)
			}
		})
	}
}

func TestBumpWebhookForOtherImage(t *testing.T) {
	t.Parallel()
	repo := bumpScenario(t, "127.0.0.1:1", "fleet", nil).dir
	payload := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(payload, []byte(`{"client_payload": {"image": "ghcr.io/org/unrelated:1.0.0"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := ferry(t, nil, "bump", "--repo", repo, "--webhook-payload", payload)
	if res.code != exitOK || res.stderr != "ferry: the webhook names ghcr.io/org/unrelated; no image policy scans it\n" {
		t.Errorf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

// TestBumpDispatchEvent: in an Actions step started by a dispatch naming
// an image (GitHub's repository_dispatch, Gitea's workflow_dispatch with
// an image input), bump scans only that image's policies with no
// --webhook-payload; a dispatch with an empty image scans everything.
func TestBumpDispatchEvent(t *testing.T) {
	reg := startBumpRegistry(t)
	for _, tc := range []struct {
		forge, event, payload string
		want                  map[string][2]string
	}{
		{"github", "repository_dispatch", `{"action": "image-pushed", "client_payload": {"image": "REGISTRY/team/mono:api-0.21.0"}, "repository": {"full_name": "acme/fleet"}}`,
			map[string][2]string{"apps/mono/kustomization.yaml": {`"api-0.20.0"`, `"api-0.21.0"`}}},
		{"gitea", "workflow_dispatch", `{"inputs": {"image": "REGISTRY/team/build", "tag": "03300208"}, "ref": "refs/heads/main", "repository": {"full_name": "acme/fleet"}}`,
			map[string][2]string{"apps/build/values.yaml": {"'03300207'", "'03300208'"}}},
		{"gitea", "workflow_dispatch", `{"inputs": {"image": "", "tag": ""}, "ref": "refs/heads/main"}`,
			map[string][2]string{
				"apps/app/deployment.yaml":     {"app:1.24.0 #", "app:1.25.0 #"},
				"apps/mono/kustomization.yaml": {`"api-0.20.0"`, `"api-0.21.0"`},
				"apps/build/values.yaml":       {"'03300207'", "'03300208'"},
			}},
	} {
		t.Run(tc.forge+"/"+tc.event, func(t *testing.T) {
			repo := bumpScenario(t, reg.Host, "fleet", nil).dir
			dir := t.TempDir()
			event := filepath.Join(dir, "event.json")
			if err := os.WriteFile(event, []byte(strings.ReplaceAll(tc.payload, "REGISTRY", reg.Host)), 0o644); err != nil {
				t.Fatal(err)
			}
			vars := reg.env()
			for k, v := range map[string]string{
				"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": tc.event, "GITHUB_EVENT_PATH": event,
				"GITHUB_OUTPUT": filepath.Join(dir, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"),
				"INPUT_REPO": repo,
			} {
				vars[k] = v
			}
			if tc.forge == "gitea" {
				vars["GITEA_ACTIONS"] = "true"
			}
			res := ferry(t, vars, "bump")
			if res.code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
			}
			want := bumpScenario(t, reg.Host, "fleet", tc.want).tree()
			if diff := cmp.Diff(want, readTree(t, repo)); diff != "" {
				t.Errorf("repository (-want +got):\n%s", diff)
			}
		})
	}
}
