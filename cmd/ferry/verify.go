package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/verify"
)

// verifyFlags hold apply's (and drift --heal's) signature verification
// and, once checked, what every notification of the run says of it.
type verifyFlags struct {
	run  verify.Run
	note string
}

// register adds the flags; prefix starts each usage ("with --heal: ").
func (v *verifyFlags) register(f *pflag.FlagSet, prefix string) {
	f.StringVar(&v.run.Mode, "verify", "", prefix+"apply only revisions signed by a trusted key: HEAD, Tag or TagAndHEAD (at least: ferry.yaml's verify, a GitRepository's spec.verify and the mode the last apply was held to hold too); keys from $"+verify.TrustedKeysVar)
	f.BoolVar(&v.run.Range, "verify-range", false, prefix+"also verify every commit since the last applied revision, so an unsigned commit cannot hide behind a signed merge")
	f.BoolVar(&v.run.Skip, "skip-verify", false, prefix+"apply without verifying signatures; said in the log, the step summary and the notifications")
}

// before checks the signatures of the revision about to be applied to
// targets (verify.Run) before anything is written, and returns what to
// record on the inventories (verify.Outcome.Record). It reads the targets' inventories (get)
// for the revision and mode their last apply recorded.
func (v *verifyFlags) before(ctx context.Context, e *env, cluster *clusterFlags, repo *config.Repo, targets []*config.Target, revision, inventoryNS string) (string, error) {
	run, err := e.VerifyRun(ctx, v.run, repo, targets, revision, inventoryNS,
		func(t *config.Target) (*kube.Client, error) { return cluster.client(ctx, e, t) }, cluster.clusterReader(e))
	if err != nil {
		return "", err
	}
	out, err := run.Check(ctx)
	if err != nil || out.Mode == "" {
		return "", err
	}
	for _, n := range out.Notes {
		e.warn("Signature verification", n)
	}
	if out.Skipped {
		e.warn("Signature verification skipped", out.Log())
	} else {
		fmt.Fprintln(e.stderr, "ferry: "+out.Log())
	}
	e.Summary(out.Markdown())
	v.note = out.EventNote()
	return out.Record(), nil
}

// mark says in each event that verification was skipped, if it was.
func (v *verifyFlags) mark(events map[string][]event.Event) map[string][]event.Event {
	if v.note != "" {
		event.Note(events, v.note, "verification", "skipped")
	}
	return events
}
