package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/confine"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/notify"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/risk"
	"github.com/ferry-ci/ferry/internal/verify"
)

type diffOptions struct {
	repo        repoFlags
	rev         revisionFlags
	format      *choiceValue
	exitCode    bool
	reportFile  string
	color       *choiceValue
	comment     bool
	forge       string
	pr          int
	maxComments int
	// showAllMetadata shows in full the objects whose only changes are
	// chart labels and annotations, folded by default.
	showAllMetadata bool
	live            bool
	cluster         clusterFlags
	inventoryNS     string
	// Notifications are opt-in for diff: --notify (notifyOn) sends an
	// event per target that changes (see diff_notify.go).
	notifyOn bool
	notify   notifyFlags
	// requireSigned fails the diff when a commit of the head does not
	// verify with the base's trusted keys.
	requireSigned bool
	// failOn makes risks at least this bad, unaccepted, exit 1.
	failOn string
	risks  bool
}

func newDiffCmd(e *env) *cobra.Command {
	o := &diffOptions{format: newChoice(output.Names((&diff.Report{}).Formats())...), color: newChoice("auto", "always", "never")}
	cmd := &cobra.Command{
		Use:     "diff --base REF [--head REF] [TARGET...]",
		Short:   "Diff the rendered manifests of two revisions, object by object",
		Long:    help("diff"),
		Example: helpExamples("diff"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd, e, o, args)
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root (may be a folder inside the Git work tree)")
	f.StringVar(&o.rev.base, "base", "", "base revision: a commit, branch or tag (default: the pull request's base in Actions)")
	f.StringVar(&o.rev.head, "head", "", "head revision (default: the pull request's head in Actions, else HEAD)")
	f.BoolVar(&o.rev.allTargets, "all-targets", false, "confirm every target, not only those a change can reach, rendering in full each one found unaffected (slow: a check of the changed-only analysis)")
	f.Var(o.format, "format", "report format: text, json or markdown")
	f.BoolVar(&o.exitCode, "exit-code", false, "exit 1 when there are differences")
	f.BoolVar(&o.rev.noDecrypt, "no-decrypt", false, "compare encrypted Secrets by their SOPS metadata only (automatic without an age key)")
	f.StringVar(&o.reportFile, "report-file", "", "also write the full markdown report to `FILE` (for an artifact)")
	f.Var(o.color, "color", "color the text report: auto, always or never")
	f.BoolVar(&o.comment, "comment", false, "keep the markdown report in one comment on the pull request")
	f.BoolVar(&o.notifyOn, "notify", false, "send an event per target that changes to the repository's Flux Alerts (a github or gitea Provider sets a commit status on the head)")
	f.BoolVar(&o.notify.dryRun, "notify-dry-run", false, "with --notify: print the notifications' payloads (secrets masked) instead of sending them")
	f.DurationVar(&o.notify.total, "notify-timeout", notify.DefaultTotal, "how long all notifications of the run may take together")
	f.StringVar(&o.forge, "forge", "", "forge API: github or gitea (default: from the Actions environment)")
	f.IntVar(&o.pr, "pr", 0, "pull request number for --comment (default: from the Actions event)")
	f.IntVar(&o.maxComments, "max-comments", 10, "most comments one report may span before it is truncated")
	f.BoolVar(&o.showAllMetadata, "show-all-metadata", false, "show in full the objects whose only changes are chart labels and annotations (helm.sh/chart, app.kubernetes.io/version, chart, checksum/*), folded by default into one line per target")
	f.BoolVar(&o.live, "live", false, "also compare each affected target's head render with its cluster (server-side dry-run; nothing is written)")
	f.StringVar(&o.inventoryNS, "inventory-namespace", kube.DefaultInventoryNS, "namespace of the inventory Secrets (for --live)")
	f.BoolVar(&o.requireSigned, "require-signed", false, "fail (exit 2) when a commit of the head is not signed by a key the base trusts (the trusted-keys input, the base's verify.keys and verify.secretRef variables); the report says how the commits verify whenever such keys are known")
	f.BoolVar(&o.risks, "risks", true, "find the change's risks (the report's first section); --risks=false leaves them out")
	f.StringVar(&o.failOn, "fail-on", "", "exit 1 when the change has a risk nobody accepted at least this bad: risk (any), warning, destructive or refused (accept one with a `# ferry: accept-risk ID` line in the pull request's description, or the ferry.dev/accept-risk annotation)")
	o.cluster.register(f)
	return cmd
}

func runDiff(cmd *cobra.Command, e *env, o *diffOptions, args []string) error {
	ctx := cmd.Context()
	dopts, err := o.rev.options(e, o.repo, args, &o.pr)
	if err != nil {
		return err
	}
	dopts.Mask = e.Masker
	dopts.ShowAllMetadata = o.showAllMetadata
	dopts.NoRisks = !o.risks
	var failOn risk.Level
	if o.failOn != "" {
		if failOn, err = risk.ParseLevel(o.failOn); err != nil {
			return fmt.Errorf("--fail-on: %w", err)
		}
	}
	if o.live {
		dopts.Live = diff.LiveCompare(func(t *config.Target) (*kube.Client, error) { return o.cluster.client(ctx, e, t) }, o.inventoryNS, e.Masker)
		dopts.ReadCluster = o.cluster.clusterReader(e)
		dopts.Cluster = func(ctx context.Context, t *config.Target) (*kube.Client, error) { return o.cluster.client(ctx, e, t) }
	}
	if o.notifyOn {
		// The events are about the head's targets; where they go is the
		// base's to say: a pull request cannot add or redirect a Provider.
		dopts.OnRevisions = func(ctx context.Context, base, head *config.Repo, r *diff.Report) {
			e.notify(ctx, o.notify, base, r.Events(head))
		}
	}
	report, err := diff.Revisions(ctx, dopts)
	if err != nil {
		return err
	}
	if report.Signatures, err = verify.PullRequest(ctx, o.repo.Dir, report.Base, report.Head, e.KeySources(), o.requireSigned); err != nil {
		return err
	}
	blocks := diff.Markdown(report)
	markdown := e.Masker.Mask(strings.Join(blocks, "\n"))
	if o.reportFile != "" {
		if err := confine.WriteNamed(o.reportFile, []byte(markdown), 0o644); err != nil {
			return fmt.Errorf("--report-file: %w", err)
		}
	}
	if err := printDiff(e, o, report); err != nil {
		return err
	}
	var commentErr error
	if o.comment {
		commentErr = postDiffComment(cmd, e, o, blocks)
	}
	e.ReportDiff(report, markdown, o.reportFile)
	if commentErr != nil {
		return commentErr
	}
	if err := report.Err(); err != nil {
		return err
	}
	if s := report.Signatures; o.requireSigned && !s.OK() {
		return fmt.Errorf("--require-signed: %s", s.Line())
	}
	if err := report.FailOn(failOn); failOn != "" && err != nil {
		fmt.Fprintln(e.stderr, "ferry: "+e.Masker.Mask(err.Error()))
		return &exitCodeError{code: exitDifferences}
	}
	if o.exitCode && report.Changed() {
		return &exitCodeError{code: exitDifferences}
	}
	return nil
}

// printDiff writes the report in --format, its text colored for a
// terminal (--color).
func printDiff(e *env, o *diffOptions, r *diff.Report) error {
	var res output.Result = r
	if o.color.value == "always" || o.color.value == "auto" && output.IsTerminal(e.stdout) && e.Getenv("NO_COLOR") == "" {
		res = diff.Colored{Report: r}
	}
	return e.print(res, o.format.value)
}
