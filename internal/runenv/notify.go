package runenv

import (
	"context"
	"io"
	"time"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/notify"
)

// Notify sends each cluster's events through the Alerts and Providers of
// repo for that cluster (notify.Deliver), with the run's variables and
// masks, the values of the Providers' Secrets hidden as they are read,
// all within total. With dryRun set, the payloads are written there
// instead of being sent.
func (e *Env) Notify(ctx context.Context, repo *config.Repo, events map[string][]event.Event, total time.Duration, dryRun io.Writer) notify.Outcome {
	opts := notify.Options{
		Getenv:       e.getenv,
		Hide:         e.Hide,
		OpenStatuses: notify.OpenForgeStatuses(e.Masker.Mask),
		Total:        total,
		DryRun:       dryRun,
	}
	return notify.Deliver(ctx, repo, events, opts, e.Masker.Mask)
}
