package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/runenv"
)

// renders is how the run renders its updates, said on stderr when not.
func (o *bumpOptions) renders(e *env, run *runenv.Bump) (*bump.Renders, error) {
	r, err := run.Renders()
	if err == nil && r.Off != "" {
		fmt.Fprintf(e.stderr, "ferry: the updates are not rendered: %s\n", r.Off)
	}
	return r, err
}

// writeBump is bump without --pr: the dry run prints every update and
// its rendered change; the plain run writes the work tree.
func writeBump(ctx context.Context, e *env, o *bumpOptions, run *runenv.Bump, scan *bump.Scan) error {
	var out *bump.Outcome
	var err error
	report := e.stdout
	if o.dryRun {
		var renders *bump.Renders
		if renders, err = o.renders(e, run); err == nil {
			out, err = scan.Plan(ctx, renders, e.Masker.Mask)
		}
		report = e.stderr
	} else {
		out, err = scan.Write()
	}
	if err != nil {
		return err
	}
	e.warnings(out.Warnings)
	e.Summary(out.Summary)
	if _, err := io.WriteString(report, e.Masker.Mask(out.Report)); err != nil || out.DryRun == nil {
		return err
	}
	return out.DryRun.Write(e.stdout, output.Format(o.format.value))
}
