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

// planHelp is `ferry plan --help`'s long help.
const planHelp = `Plan prints the targets a change between two revisions affects: those whose
definition changed or whose render reads a changed file (a change to a
shared base affects every overlay built on it). Unaffected targets are not
rendered. The output is one line of JSON whose "include" list feeds a
workflow matrix:

  {"include":[{"target":"stage","why":"changed: apps/stage/patch.yaml"}]}

Its "clusters" list groups the affected targets per cluster, in dependency
order, for one job per cluster that applies them in one run:

  {"include":[...],"clusters":[{"cluster":"staging","targets":"staging/infra,staging/apps"}]}

Inside Actions the same JSON is the step output "matrix", "clusters" is
{"include": <the clusters list>} for a per-cluster matrix, and "targets" is
the JSON list of the affected targets' names (empty when nothing is
affected: guard the matrix job with if: steps.plan.outputs.targets != '[]').

Exit status: 0 listed (possibly none), 2 any error.`

// planExamples is `ferry plan --help`'s examples.
const planExamples = `  # in a workflow step, for strategy.matrix: ${{ fromJSON(steps.plan.outputs.matrix) }}
  ferry plan --base "$BEFORE" --head "$GITHUB_SHA"`

func newPlanCmd(e *env) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:     "plan --base REF [--head REF] [TARGET...]",
		Short:   "List the targets a change affects, as JSON for a workflow matrix",
		Long:    planHelp,
		Example: planExamples,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fillFromEvent(e, &o.base, &o.head, nil); err != nil {
				return err
			}
			if o.base == "" {
				return fmt.Errorf("--base is required outside a pull_request or push event")
			}
			ropts, err := e.renderOptions(o.noDecrypt, o.repo.allowRemoteBases)
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
