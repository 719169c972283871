package forge

import (
	"context"
	"fmt"
	"strings"
)

// PullRequestAction is what SyncPullRequest did.
type PullRequestAction string

const (
	PullRequestCreated   PullRequestAction = "created"
	PullRequestUpdated   PullRequestAction = "updated"
	PullRequestUnchanged PullRequestAction = "unchanged"
)

// SyncPullRequest keeps one open pull request from head into base with
// this title and body: it opens one when none is open, edits the open one
// when its title or body differ, and otherwise leaves it (reported as
// updated when pushed says its branch just moved).
func SyncPullRequest(ctx context.Context, f Forge, head, base, title, body string, pushed bool) (PullRequest, PullRequestAction, error) {
	pr, err := f.OpenPullRequest(ctx, head, base)
	if err != nil {
		return PullRequest{}, "", fmt.Errorf("pull request for %s: %w", head, err)
	}
	switch {
	case pr == nil:
		created, err := f.CreatePullRequest(ctx, NewPullRequest{Title: title, Body: body, Head: head, Base: base})
		if err != nil {
			return PullRequest{}, "", fmt.Errorf("opening a pull request for %s: %w", head, err)
		}
		return created, PullRequestCreated, nil
	case pr.Title != title || strings.TrimSpace(pr.Body) != strings.TrimSpace(body):
		if err := f.EditPullRequest(ctx, pr.Number, title, body); err != nil {
			return *pr, "", fmt.Errorf("updating pull request #%d: %w", pr.Number, err)
		}
		return *pr, PullRequestUpdated, nil
	case pushed:
		return *pr, PullRequestUpdated, nil
	}
	return *pr, PullRequestUnchanged, nil
}
