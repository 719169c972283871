package main

import (
	"context"
	"fmt"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/runenv"
)

// notifyPRs sends PullRequestOpened or PullRequestUpdated (info) per
// image policy of each pull request bump opened or updated, its involved
// object the ImagePolicy, through the Alerts of every cluster of the
// repository together (config.AllClusters): a pull request belongs to
// no one cluster. A pull request left unchanged sends nothing.
func (o *bumpOptions) notifyPRs(ctx context.Context, e *env, opened []bump.Opened) {
	if o.notify.off {
		return
	}
	var events []event.Event
	for _, p := range opened {
		events = append(events, p.Events()...)
	}
	if len(events) == 0 {
		return
	}
	repo, err := e.LoadRepo(ctx, runenv.Repo{Dir: o.repo}, false)
	if err != nil {
		e.notifyWarning(fmt.Sprintf("notifications: reading the repository's Flux notification objects: %v", err))
		return
	}
	defer repo.Close()
	e.notify(ctx, o.notify, repo, map[string][]event.Event{config.AllClusters: events})
}
