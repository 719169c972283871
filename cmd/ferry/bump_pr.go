package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferry-ci/ferry/internal/bump"
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
	var warnings []string
	if scan.Result != nil {
		warnings = scan.Result.Warnings()
	}
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
	renders, err := o.renders(e, run)
	if err != nil {
		return err
	}
	if err := prs.CommitRendered(ctx, renders, e.Masker.Mask); err != nil {
		return err
	}
	opened, err := prs.Open(ctx, f, o.remote, token)
	for _, p := range opened {
		fmt.Fprintf(e.stdout, "%s: pull request #%d %s: %s\n", p.Policy, p.Number, p.Action, p.URL)
		for _, c := range p.Changes {
			fmt.Fprintf(e.stdout, "  %s:%d  %s -> %s\n", c.File, c.Line, c.Old, c.New)
		}
	}
	o.notifyPRs(ctx, e, opened)
	if err != nil {
		return err
	}
	return e.ReportPRs(opened, warnings)
}
