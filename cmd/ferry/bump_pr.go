package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/runenv"
)

// runBumpPR commits each update on its own branch (from the checked-out
// commit), force-pushes the branches and opens or updates one pull
// request per branch. Everything that can fail before a push (templates,
// the repository, the forge, every commit) is done first.
func runBumpPR(ctx context.Context, e *env, o *bumpOptions, run *runenv.Bump, scan *bump.Scan) error {
	prs, err := bump.NewPullRequests(scan, bump.PROptions{Branch: o.branch, Title: o.title, Group: o.group, Author: o.author, Base: o.base})
	if err != nil {
		return err
	}
	warnings := scan.ImageWarnings()
	e.warnings(warnings)
	if prs.Len() == 0 {
		fmt.Fprintln(e.stderr, "ferry: every marked image and pinned chart is at its newest allowed version; no pull request")
		e.Output("pull-requests", "[]")
		return nil
	}
	token := e.Token()
	if token == "" {
		return errors.New("--pr: no token: set FERRY_TOKEN, GITHUB_TOKEN or GITEA_TOKEN (or the step's token input)")
	}
	f, err := e.OpenForge(o.forge)
	if err != nil {
		return fmt.Errorf("--pr: %w", err)
	}
	renders, err := run.Renders()
	if err != nil {
		return err
	}
	notRendered(e, renders.Off)
	if err := prs.CommitRendered(ctx, renders, e.Masker.Mask); err != nil {
		return err
	}
	opened, err := prs.Open(ctx, f, o.remote, token)
	for _, p := range opened {
		fmt.Fprint(e.stdout, p.Text())
	}
	o.notifyPRs(ctx, e, opened)
	if err != nil {
		return err
	}
	return e.ReportPRs(opened, warnings)
}

// notifyPRs sends each pull request's events (bump.Events) through the
// Alerts of every cluster together: a pull request belongs to none.
func (o *bumpOptions) notifyPRs(ctx context.Context, e *env, opened []bump.Opened) {
	events := bump.Events(opened)
	if o.notify.off || len(events) == 0 {
		return
	}
	repo, err := e.LoadRepo(ctx, o.repo.settings(), false)
	if err != nil {
		e.notifyWarning(fmt.Sprintf("notifications: reading the repository's Flux notification objects: %v", err))
		return
	}
	defer repo.Close()
	e.notify(ctx, o.notify, repo, map[string][]event.Event{config.AllClusters: events})
}
