package main

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/notify"
)

// notifyFlags turn the notifications of a command off, or into a print
// of their payloads; apply, drift, bump and diff share them.
type notifyFlags struct {
	off    bool
	dryRun bool
	// total bounds all sends of a run (notify.Options.Total).
	total time.Duration
}

func (n *notifyFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&n.off, "no-notify", false, "send no notifications to the Providers of the repository's Flux Alerts")
	f.BoolVar(&n.dryRun, "notify-dry-run", false, "print the notifications' payloads (secrets masked) instead of sending them")
	f.DurationVar(&n.total, "notify-timeout", notify.DefaultTotal, "how long all notifications of the run may take together")
}

// notify sends each cluster's events through the Alerts and Providers
// of that cluster (notify.Deliver). A notification that cannot be
// delivered is a warning (stderr, an Actions annotation, the step
// summary), never an error: it changes neither what was applied nor the
// exit status.
func (e *env) notify(ctx context.Context, n notifyFlags, repo *config.Repo, events map[string][]event.Event) notify.Outcome {
	if n.off || repo == nil {
		return notify.Outcome{}
	}
	var dry bytes.Buffer
	var dryRun io.Writer
	if n.dryRun {
		dryRun = &dry
	}
	out := e.Notify(ctx, repo, events, n.total, dryRun)
	e.warnings(out.Warnings)
	for _, f := range out.Failures {
		e.notifyWarning(f)
	}
	if dry.Len() > 0 {
		_, _ = io.WriteString(e.stdout, e.Masker.Mask(dry.String()))
	}
	if md := out.Markdown(e.Masker.Mask); e.Step != nil && md != "" {
		// Straight to the summary: a failure to write it must not fail the
		// run either.
		_ = e.Step.AddSummary(md)
	}
	return out
}

// notifyWarning is a warning (warn) about a notification.
func (e *env) notifyWarning(msg string) { e.warn("Notification not delivered", msg) }
