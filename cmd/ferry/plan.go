package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/diff"
)

type planOptions struct {
	repo       repoFlags
	base, head string
	noDecrypt  bool
}

func newPlanCmd(e *env) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:     "plan --base REF [--head REF] [TARGET...]",
		Short:   "List the targets a change affects, as JSON for a workflow matrix",
		Long:    help("plan"),
		Example: helpExamples("plan"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fillFromEvent(e, &o.base, &o.head, nil); err != nil {
				return err
			}
			if o.base == "" {
				return fmt.Errorf("--base is required outside a pull_request or push event")
			}
			ropts, err := e.renderOptions(o.repo, o.noDecrypt || !e.hasAgeKey())
			if err != nil {
				return err
			}
			p, err := diff.Targets(cmd.Context(), diff.Options{Repo: o.repo.dir, Base: o.base, Head: o.head, Render: ropts, Targets: args, FetchToken: e.token()})
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
	f.StringVar(&o.base, "base", "", "base revision (default: from the Actions event)")
	f.StringVar(&o.head, "head", "", "head revision (default: from the Actions event, else HEAD)")
	f.BoolVar(&o.noDecrypt, "no-decrypt", false, "do not decrypt SOPS files (automatic without an age key)")
	return cmd
}
