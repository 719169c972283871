package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/diff"
)

type planOptions struct {
	repo repoFlags
	rev  revisionFlags
	all  bool
}

func newPlanCmd(e *env) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:     "plan --base REF [--head REF] [TARGET...] | plan --all [TARGET...]",
		Short:   "List the targets a change affects, as JSON for a workflow matrix",
		Long:    help("plan"),
		Example: helpExamples("plan"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := o.plan(cmd.Context(), e, args)
			if err != nil {
				return err
			}
			for _, n := range p.Notes {
				e.warn("Pull request reach", n)
			}
			m := p.Matrix()
			fmt.Fprintln(e.stdout, m.JSON())
			e.Output("matrix", m.JSON())
			e.Output("targets", m.TargetsJSON())
			e.Output("clusters", m.ClustersJSON())
			return nil
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root (may be a folder inside the Git work tree)")
	f.StringVar(&o.rev.base, "base", "", "base revision (default: from the Actions event)")
	f.StringVar(&o.rev.head, "head", "", "head revision (default: from the Actions event, else HEAD)")
	f.BoolVar(&o.rev.noDecrypt, "no-decrypt", false, "do not decrypt SOPS files (automatic without an age key)")
	f.BoolVar(&o.rev.allTargets, "all-targets", false, "confirm every target, not only those a change can reach, rendering in full each one found unaffected (slow: a check of the changed-only analysis)")
	f.BoolVar(&o.all, "all", false, "every target of the checked-out work tree, without comparing revisions (a first deploy); automatic in Actions when the event has no base revision (a push that created the branch, workflow_dispatch, schedule)")
	return cmd
}

// plan compares the two revisions, or lists every target when there is
// nothing to compare with: --all, or an Actions event without a base.
func (o *planOptions) plan(ctx context.Context, e *env, targets []string) (*diff.Plan, error) {
	if o.all {
		if o.rev.base != "" || o.rev.head != "" {
			return nil, errors.New("--all lists the work tree's targets: it takes no --base or --head")
		}
		return o.everything(ctx, e, targets, "every target (--all)")
	}
	if o.rev.base == "" {
		ev, err := e.Event()
		if err != nil {
			return nil, err
		}
		if ev == nil {
			return nil, errors.New("--base is required outside Actions (or --all: every target of the work tree)")
		}
		if base, _, _ := ev.Revisions(); base == "" {
			return o.everything(ctx, e, targets, ev.NoBase())
		}
	}
	dopts, err := o.rev.options(e, o.repo, targets, nil)
	if err != nil {
		return nil, err
	}
	return diff.Targets(ctx, dopts)
}

// everything lists every target of the work tree (or of targets), each
// with why.
func (o *planOptions) everything(ctx context.Context, e *env, targets []string, why string) (*diff.Plan, error) {
	ropts, err := e.RenderOptions(o.repo.settings(), o.rev.noDecrypt || !e.HasAgeKey())
	if err != nil {
		return nil, err
	}
	return diff.Everything(ctx, diff.Options{Repo: o.repo.Dir, Render: ropts, Targets: targets}, why)
}
