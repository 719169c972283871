package actions

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestEventPayloads(t *testing.T) {
	for _, tc := range []struct {
		file, name string
		want       Event
	}{
		{"github/pull_request.json", "pull_request", Event{Repository: "acme/fleet", PullRequest: &PullRequest{
			Number: 42, BaseRef: "main", BaseSHA: "5a2c8e1f0b9d7c3a6e4f2b1d0c9a8e7f6b5d4c3a",
			HeadRef: "bump-podinfo", HeadSHA: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", HeadRepo: "acme/fleet",
			Body: "Bumps podinfo in stage."}}},
		{"github/pull_request_fork.json", "pull_request", Event{Repository: "acme/fleet", PullRequest: &PullRequest{
			Number: 43, BaseRef: "main", BaseSHA: "5a2c8e1f0b9d7c3a6e4f2b1d0c9a8e7f6b5d4c3a",
			HeadRef: "typo", HeadSHA: "c0ffee0000000000000000000000000000000043", HeadRepo: "drive-by/fleet", Fork: true, Draft: true}}},
		{"github/push.json", "push", Event{Repository: "acme/fleet", Push: &Push{Ref: "refs/heads/main",
			Before: "5a2c8e1f0b9d7c3a6e4f2b1d0c9a8e7f6b5d4c3a", After: "9a1c0f5e3b7d2a4c6e8f0a1b3c5d7e9f1a2b3c4d"}}},
		{"github/push_created.json", "push", Event{Repository: "acme/fleet", Push: &Push{Ref: "refs/heads/release-1",
			Before: "0000000000000000000000000000000000000000", After: "9a1c0f5e3b7d2a4c6e8f0a1b3c5d7e9f1a2b3c4d"}}},
		{"github/schedule.json", "schedule", Event{Repository: "acme/fleet", Schedule: "17 6 * * 1-5"}},
		{"github/repository_dispatch.json", "repository_dispatch", Event{Repository: "acme/fleet", Dispatch: &Dispatch{
			Type: "image-pushed", ClientPayload: map[string]any{"image": "ghcr.io/acme/podinfo", "tag": "6.7.2",
				"digest": "sha256:0f8a3c4b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"}}}},
		{"gitea/pull_request.json", "pull_request", Event{Repository: "acme/fleet", PullRequest: &PullRequest{
			Number: 7, BaseRef: "main", BaseSHA: "1f4e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f",
			HeadRef: "bump-podinfo", HeadSHA: "8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4", HeadRepo: "acme/fleet",
			MergeBase: "1f4e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f"}}},
		{"gitea/push.json", "push", Event{Repository: "acme/fleet", Push: &Push{Ref: "refs/heads/main",
			Before: "1f4e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f", After: "8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4"}}},
		// Gitea's schedule payload is the push payload that registered it.
		{"gitea/schedule.json", "schedule", Event{Repository: "acme/fleet", Schedule: "17 6 * * 1-5"}},
		{"gitea/workflow_dispatch.json", "workflow_dispatch", Event{Repository: "acme/fleet", Dispatch: &Dispatch{
			Type: "workflow_dispatch", ClientPayload: map[string]any{"image": "git.example.org/acme/podinfo", "tag": "6.7.2"}}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			vars := map[string]string{
				"GITHUB_EVENT_NAME": tc.name,
				"GITHUB_EVENT_PATH": filepath.Join("testdata", "events", filepath.FromSlash(tc.file)),
			}
			r := New(func(k string) string { return vars[k] }, &bytes.Buffer{})
			got, err := r.Event()
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Name = tc.name
			if d := cmp.Diff(&tc.want, got, cmpopts.IgnoreFields(Event{}, "Payload")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if len(got.Payload) == 0 {
				t.Error("the raw payload is kept")
			}
		})
	}
}

func TestPushBaseHead(t *testing.T) {
	created := &Push{Before: "0000000000000000000000000000000000000000", After: "abc"}
	if created.Base() != "" || created.Head() != "abc" {
		t.Errorf("created: base %q head %q", created.Base(), created.Head())
	}
	deleted := &Push{Before: "abc", After: "0000000000000000000000000000000000000000"}
	if deleted.Base() != "abc" || deleted.Head() != "" {
		t.Errorf("deleted: base %q head %q", deleted.Base(), deleted.Head())
	}
	var none *Push
	if none.Base() != "" {
		t.Error("nil push")
	}
}

func TestEventErrors(t *testing.T) {
	r := New(func(k string) string {
		return map[string]string{"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": "testdata/nope.json"}[k]
	}, &bytes.Buffer{})
	if _, err := r.Event(); err == nil {
		t.Error("a missing payload file is an error")
	}
	r = New(func(k string) string { return map[string]string{"GITHUB_EVENT_NAME": "push"}[k] }, &bytes.Buffer{})
	ev, err := r.Event()
	if err != nil || ev.Name != "push" || ev.Push != nil {
		t.Errorf("no payload: %+v, %v", ev, err)
	}
}
