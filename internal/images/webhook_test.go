package images_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/images"
)

// A Harbor PUSH_ARTIFACT webhook, as Harbor 2.x documents and sends it.
const harborPush = `{
  "type": "PUSH_ARTIFACT",
  "occur_at": 1700000000,
  "operator": "robot$ci",
  "event_data": {
    "resources": [
      {
        "digest": "sha256:7c4ba0dc26a1b4d0de6c0e4a3e18bd1ae1d1bbd5e2e4fba6a2e0d2f8a7c5b3e1",
        "tag": "1.25.0",
        "resource_url": "harbor.example.com/library/app:1.25.0"
      }
    ],
    "repository": {
      "date_created": 1690000000,
      "name": "app",
      "namespace": "library",
      "repo_full_name": "library/app",
      "repo_type": "private"
    }
  }
}`

// Harbor's CloudEvents payload format.
const harborCloudEvent = `{
  "specversion": "1.0",
  "id": "4b2f89a6-548d-4c12-9993-a1f5790b97d2",
  "source": "/projects/1/webhook/policies/1",
  "type": "harbor.artifact.pushed",
  "datacontenttype": "application/json",
  "time": "2024-03-13T06:41:55Z",
  "data": {
    "resources": [
      {"digest": "sha256:aa", "tag": "sherpa-0.20.1", "resource_url": "harbor.example.com/mono/repo:sherpa-0.20.1"},
      {"digest": "sha256:bb", "tag": "api-0.21.0", "resource_url": "harbor.example.com/mono/repo:api-0.21.0"}
    ],
    "repository": {"name": "repo", "namespace": "mono", "repo_full_name": "mono/repo", "repo_type": "public"},
    "operator": "admin"
  }
}`

// A repository_dispatch event as $GITHUB_EVENT_PATH holds it.
const dispatchEvent = `{
  "action": "image-pushed",
  "branch": "main",
  "client_payload": {"image": "ghcr.io/org/app:1.25.0", "digest": "sha256:cc"},
  "repository": {"id": 1, "full_name": "org/gitops"},
  "sender": {"login": "ci-bot"}
}`

func TestParseWebhook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload string
		want    []string
	}{
		{"harbor push", harborPush, []string{"harbor.example.com/library/app"}},
		{"harbor cloudevent, one repository twice", harborCloudEvent, []string{"harbor.example.com/mono/repo"}},
		{"repository_dispatch event", dispatchEvent, []string{"ghcr.io/org/app"}},
		{"client_payload alone, by digest", `{"image": "ghcr.io/org/app@sha256:` + strings.Repeat("a", 64) + `"}`, []string{"ghcr.io/org/app"}},
		{"client_payload with images, Docker Hub names canonical", `{"images": ["nginx:1.27", "ghcr.io/org/b", "docker.io/library/nginx"]}`,
			[]string{"ghcr.io/org/b", "index.docker.io/library/nginx"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := images.ParseWebhook([]byte(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseWebhook (-want +got):\n%s", diff)
			}
		})
	}
	for name, payload := range map[string]string{
		"not JSON":                   "image=ghcr.io/org/app",
		"no image":                   `{"client_payload": {"ref": "main"}}`,
		"image is not a string":      `{"client_payload": {"image": ["a"]}}`,
		"harbor event without a url": `{"type": "PUSH_ARTIFACT", "event_data": {"resources": [{"tag": "1"}]}}`,
		"invalid image":              `{"image": "UPPER CASE"}`,
	} {
		if got, err := images.ParseWebhook([]byte(payload)); err == nil || !strings.HasPrefix(err.Error(), "webhook payload: ") {
			t.Errorf("%s: ParseWebhook = %q, %v; want an error about the payload", name, got, err)
		}
	}
}

func TestForImages(t *testing.T) {
	t.Parallel()
	mk := func(name, image string) *images.Policy {
		return &images.Policy{Name: name, Namespace: "flux-system", Image: image}
	}
	ps := []*images.Policy{
		mk("nginx", "nginx"),
		mk("api", "harbor.example.com/mono/repo"),
		mk("sherpa", "harbor.example.com/mono/repo"),
		mk("other", "harbor.example.com/mono/other"),
	}
	var got []string
	for _, p := range images.ForImages(ps, []string{"harbor.example.com/mono/repo", "index.docker.io/library/nginx"}) {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"nginx", "api", "sherpa"}, got); diff != "" {
		t.Errorf("ForImages (-want +got):\n%s", diff)
	}
}
