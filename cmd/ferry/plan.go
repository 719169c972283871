package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/diff"
)

type planOptions struct {
	repo repoFlags
	rev  revisionFlags
}

func newPlanCmd(e *env) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:     "plan --base REF [--head REF] [TARGET...]",
		Short:   "List the targets a change affects, as JSON for a workflow matrix",
		Long:    help("plan"),
		Example: helpExamples("plan"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dopts, err := o.rev.options(e, o.repo, args, nil)
			if err != nil {
				return err
			}
			p, err := diff.Targets(cmd.Context(), dopts)
			if err != nil {
				return err
			}
			m := p.Matrix()
			fmt.Fprintln(e.stdout, m.JSON())
			e.output("matrix", m.JSON())
			e.output("targets", m.TargetsJSON())
			e.output("clusters", m.ClustersJSON())
			return nil
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root (may be a folder inside the Git work tree)")
	f.StringVar(&o.rev.base, "base", "", "base revision (default: from the Actions event)")
	f.StringVar(&o.rev.head, "head", "", "head revision (default: from the Actions event, else HEAD)")
	f.BoolVar(&o.rev.noDecrypt, "no-decrypt", false, "do not decrypt SOPS files (automatic without an age key)")
	return cmd
}
