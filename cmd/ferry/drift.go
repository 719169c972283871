package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/output"
)

type driftOptions struct {
	repo        repoFlags
	cluster     clusterFlags
	revision    string
	format      *choiceValue
	reports     []string
	failOnDrift bool
	heal        bool
	concurrency int
	forge       string
	issueLabel  string
	compare     kube.CompareOptions
	// apply holds the heal's apply options.
	apply  kube.ApplyOptions
	notify notifyFlags
	verify verifyFlags
}

func newDriftCmd(e *env) *cobra.Command {
	o := &driftOptions{compare: kube.DefaultCompareOptions(), apply: kube.DefaultApplyOptions(), format: newChoice(output.Names(drift.Reports{}.Formats())...)}
	o.compare.LeaveOut, o.apply.LeaveOut = config.ActsOn, config.ActsOn
	cmd := &cobra.Command{
		Use:     "drift [TARGET...]",
		Short:   "Compare live clusters with Git and report drift",
		Long:    help("drift"),
		Example: helpExamples("drift"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDrift(cmd.Context(), e, o, args)
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root")
	o.cluster.register(f)
	f.StringVar(&o.revision, "revision", "", "Git revision checked out (default $GITHUB_SHA, else the repository's HEAD)")
	f.Var(o.format, "format", "output: text, json or markdown")
	f.StringSliceVar(&o.reports, "report", []string{"summary"}, "where else to report: summary (the step summary), issue (an issue per drifted target), none")
	f.StringVar(&o.forge, "forge", "", "forge API for --report issue: github or gitea (default: from the Actions environment)")
	f.StringVar(&o.issueLabel, "issue-label", "ferry-drift", "label of the drift issues")
	f.BoolVar(&o.failOnDrift, "fail-on-drift", false, "exit 1 when any target drifted")
	f.BoolVar(&o.heal, "heal", false, "after reporting, apply each target that is not in sync")
	f.IntVar(&o.concurrency, "concurrency", 4, "targets compared at once")
	f.StringVar(&o.compare.InventoryNamespace, "inventory-namespace", o.compare.InventoryNamespace, "namespace of the inventory Secrets and Leases")
	a := &o.apply
	f.BoolVar(&a.Prune, "prune", false, "with --heal: delete orphaned objects (also on for targets with prune: true)")
	f.BoolVar(&a.AllowMassPrune, "allow-mass-prune", false, "with --heal: allow a prune that deletes more than half of the inventory")
	f.DurationVar(&a.Lock.Wait, "lock-timeout", a.Lock.Wait, "with --heal: how long to wait for another run of the same target")
	f.DurationVar(&a.Timeout, "timeout", a.Timeout, "with --heal: how long CRD establishment may take")
	o.notify.register(f)
	o.verify.register(f, "with --heal: ")
	return cmd
}

func runDrift(ctx context.Context, e *env, o *driftOptions, args []string) error {
	if err := o.check(); err != nil {
		return err
	}
	syncIssues, err := o.issueSync(e)
	if err != nil {
		return err
	}
	repo, err := e.LoadRepo(ctx, o.repo.settings(), false)
	if err != nil {
		return err
	}
	o.cluster.readFromClusters(e, repo)
	defer repo.Close()
	targets, err := repo.Select(args)
	if err != nil {
		return err
	}
	if o.heal {
		revision, _ := e.CheckedOut(repo.Root, o.revision)
		if o.apply.Verify, err = o.verify.before(ctx, e, &o.cluster, repo, targets, revision, o.compare.InventoryNamespace); err != nil {
			return fmt.Errorf("nothing was checked or healed: %w", err)
		}
	}
	checks, byName := drift.Targets(ctx, repo, targets)
	connect := func(name string) (*kube.Client, error) { return o.cluster.client(ctx, e, byName[name]) }
	reports, revision := o.detect(ctx, e, repo, checks, connect)
	var issueErr error
	if syncIssues != nil {
		issueErr = syncIssues(ctx, reports, revision)
	}
	if err := e.print(drift.Reports(reports), o.format.value); err != nil {
		return err
	}
	if err := e.ReportDrift(reports, slices.Contains(o.reports, "summary")); err != nil {
		return err
	}
	o.notifyDrift(ctx, e, repo, checks, reports, connect)

	return o.driftStatus(reports, issueErr)
}

// detect compares the targets with their clusters (and heals them with
// --heal) at the checked-out revision; the reports come back masked.
func (o *driftOptions) detect(ctx context.Context, e *env, repo *config.Repo, checks []drift.Target, connect func(string) (*kube.Client, error)) ([]*drift.Report, string) {
	revision, isAncestor := e.CheckedOut(repo.Root, o.revision)
	reports := drift.Check(ctx, checks, drift.CheckOptions{
		Connect:     connect,
		Compare:     o.compare,
		Concurrency: o.concurrency,
		Heal:        o.heal,
		Apply:       o.apply,
		Revision:    revision,
		IsAncestor:  isAncestor,
		Mask:        e.Masker,
	})
	// Detect masked what it compared; render, cluster and heal errors are
	// masked here.
	for _, r := range reports {
		e.Masker.Redact(r)
	}
	return reports, revision
}

// check checks the flags: --report is summary (the step summary), issue
// (drift issues) or none.
func (o *driftOptions) check() error {
	for _, r := range o.reports {
		if !slices.Contains([]string{"summary", "issue", "none", ""}, r) {
			return fmt.Errorf("--report %q: want summary, issue or none", r)
		}
	}
	if o.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: want 1 or more", o.concurrency)
	}
	return nil
}

// issueSync keeps an issue per drifted target (drift.SyncIssues) on the
// forge of --report issue: named by --forge or found from the Actions
// environment (runenv.Env.OpenForge). Without --report issue it is nil.
func (o *driftOptions) issueSync(e *env) (func(context.Context, []*drift.Report, string) error, error) {
	if !slices.Contains(o.reports, "issue") {
		return nil, nil
	}
	f, err := e.OpenForge(o.forge)
	if err != nil {
		return nil, fmt.Errorf("--report issue: %w", err)
	}
	return func(ctx context.Context, reports []*drift.Report, revision string) error {
		return drift.SyncIssues(ctx, f, o.issueLabel, reports, revision, e.RunURL(), e.Masker.Mask)
	}, nil
}

// driftStatus is the run's outcome: an error naming the targets that could
// not be checked or healed (and the issue errors), else exit 1 with
// --fail-on-drift when a target drifts.
func (o *driftOptions) driftStatus(reports []*drift.Report, issueErr error) error {
	failed, drifted := drift.Outcome(reports)
	if len(failed) > 0 {
		err := fmt.Errorf("drift: %d of %d targets could not be checked or healed: %s", len(failed), len(reports), strings.Join(failed, ", "))
		return errors.Join(err, issueErr)
	}
	if issueErr != nil {
		return issueErr
	}
	if o.failOnDrift && len(drifted) > 0 {
		return &exitCodeError{code: exitDifferences, msg: "ferry: drift in " + strings.Join(drifted, ", ")}
	}
	return nil
}

// notifyDrift sends DriftDetected and DriftResolved once per change of a
// target's drift state (drift.Notices), and remembers each state once
// its events are delivered, so an undelivered change is sent again by the
// next run.
func (o *driftOptions) notifyDrift(ctx context.Context, e *env, repo *config.Repo, checks []drift.Target, reports []*drift.Report, connect func(string) (*kube.Client, error)) {
	if o.notify.off {
		return
	}
	ns := o.compare.InventoryNamespace
	notices, warnings := drift.Notices(ctx, checks, reports, connect, ns)
	for _, w := range warnings {
		e.notifyWarning(w)
	}
	if len(notices) == 0 {
		return
	}
	out := e.notify(ctx, o.notify, repo, drift.NoticeEvents(notices))
	if o.notify.dryRun {
		return
	}
	for _, w := range drift.Remember(ctx, notices, out.Delivered, ns) {
		e.notifyWarning(w)
	}
}
