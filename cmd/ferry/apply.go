package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/runenv"
)

type applyOptions struct {
	repo     repoFlags
	cluster  clusterFlags
	revision string
	format   *choiceValue
	parallel int
	apply    kube.ApplyOptions
	notify   notifyFlags
	verify   verifyFlags
}

func newApplyCmd(e *env) *cobra.Command {
	o := &applyOptions{apply: kube.DefaultApplyOptions(), format: newChoice(output.Names(kube.ChangeSets{}.Formats())...)}
	o.apply.LeaveOut = config.ActsOn
	cmd := &cobra.Command{
		Use:     "apply [TARGET...]",
		Short:   "Render, decrypt and server-side apply targets, with an ApplySet inventory and pruning",
		Long:    help("apply"),
		Example: helpExamples("apply"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApply(cmd, e, o, args)
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root")
	o.cluster.register(f)
	f.StringVar(&o.revision, "revision", "", "Git revision being applied (default $GITHUB_SHA, else the repository's HEAD)")
	f.Var(o.format, "format", "output: text, json or markdown")
	a := &o.apply
	f.BoolVar(&a.Prune, "prune", false, "delete inventory members no longer rendered (also on for targets with prune: true)")
	f.BoolVar(&a.Wait, "wait", false, "wait until every object is healthy (kstatus)")
	f.DurationVar(&a.Timeout, "timeout", a.Timeout, "how long --wait and CRD establishment may take")
	f.BoolVar(&a.DryRun, "dry-run", false, "do everything but write: the server dry-runs each apply")
	f.BoolVar(&a.ForceConflicts, "force-conflicts", false, "take fields other field managers own")
	f.BoolVar(&a.AllowMassPrune, "allow-mass-prune", false, "allow a prune that deletes more than --mass-prune-ratio of the inventory")
	f.Float64Var(&a.MassPruneRatio, "mass-prune-ratio", a.MassPruneRatio, "share of a target's inventory a prune may delete without --allow-mass-prune")
	f.BoolVar(&a.AllowRollback, "allow-rollback", false, "apply a revision older than the one recorded on the inventory")
	f.StringVar(&a.InventoryNamespace, "inventory-namespace", a.InventoryNamespace, "namespace of the inventory Secrets and Leases")
	f.DurationVar(&a.Lock.Wait, "lock-timeout", a.Lock.Wait, "how long to wait for another run of the same target")
	f.IntVar(&a.Concurrency, "concurrency", a.Concurrency, "requests in flight within a wave")
	f.IntVar(&o.parallel, "parallel", 8, "targets applied at once, where none waits for another")
	o.notify.register(f)
	o.verify.register(f, "")
	return cmd
}

func runApply(cmd *cobra.Command, e *env, o *applyOptions, args []string) error {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel() // stops the reads Warm started, on every return
	repo, targets, err := o.selectTargets(ctx, e, args)
	if err != nil {
		return err
	}
	defer repo.Close()
	fleet, preflight, err := o.fleet(ctx, e, repo, targets)
	if err != nil {
		err = fmt.Errorf("nothing was applied: %w", err)
		o.notifyNothingApplied(ctx, e, repo, targets, err)
		return err
	}
	// Invariant 1 across targets: with several targets, every one is
	// preflighted (mapped, dry-run, guards evaluated) before the first
	// write to any cluster. One target's Apply does that by itself.
	var plan *kube.FleetPlan
	if preflight {
		if plan, err = kube.PreflightFleet(ctx, fleet, o.parallel); err != nil {
			err = fmt.Errorf("nothing was applied: %w", err)
			o.notifyNothingApplied(ctx, e, repo, targets, err)
			return err
		}
	}
	// Targets apply by the dependency graph, independent ones concurrently;
	// a target that fails stops the targets waiting for it (reported as not
	// attempted, and why), the others still apply.
	sets, applyErr := kube.ApplyFleet(ctx, fleet, plan, o.parallel)
	// The API server's messages may quote what it was sent.
	e.Masker.Redact(sets)
	if err := e.print(kube.ChangeSets(sets), o.format.value); err != nil {
		return err
	}
	e.Output("applied", strconv.Itoa(kube.CountAll(sets, kube.Created, kube.Configured, kube.Replaced)))
	e.Output("pruned", strconv.Itoa(kube.CountAll(sets, kube.Pruned)))
	e.Summary(kube.MarkdownChangeSets(sets))
	if !o.apply.DryRun {
		e.notify(ctx, o.notify, repo, o.verify.mark(runenv.ApplyEvents(targets, sets)))
	}
	return applyErr
}

// notifyNothingApplied sends ReconciliationFailed for every target when
// the run stopped before its first write (a render or preflight error).
func (o *applyOptions) notifyNothingApplied(ctx context.Context, e *env, repo *config.Repo, targets []*config.Target, err error) {
	if o.apply.DryRun {
		return
	}
	revision, _ := e.CheckedOut(repo.Root, o.revision)
	sets := make([]*kube.ChangeSet, len(targets))
	for i, t := range targets {
		sets[i] = &kube.ChangeSet{Target: t.Name, Revision: revision, Error: err.Error()}
	}
	e.notify(ctx, o.notify, repo, runenv.ApplyEvents(targets, sets))
}

// selectTargets loads the repository and the targets to apply. Invariant
// 1: everything resolves before anything is sent; a selected target that
// depends on one that cannot be resolved cannot be applied in order.
func (o *applyOptions) selectTargets(ctx context.Context, e *env, args []string) (*config.Repo, []*config.Target, error) {
	repo, err := e.LoadRepo(ctx, o.repo.settings(), false)
	if err != nil {
		return nil, nil, err
	}
	o.cluster.readFromClusters(e, repo)
	targets, err := repo.Select(args)
	if err != nil {
		repo.Close()
		return nil, nil, err
	}
	if err := repo.Blocked(targets...); err != nil {
		repo.Close()
		return nil, nil, fmt.Errorf("nothing was applied: %w", err)
	}
	return repo, targets, nil
}

// fleet renders the targets and pairs each with its cluster's client (one
// per cluster) and its options; preflight says whether the run preflights
// them together first (several targets, not a dry run). The preflight's
// first reads (kinds, inventories, Leases) start before the render and go
// on while it runs.
func (o *applyOptions) fleet(ctx context.Context, e *env, repo *config.Repo, targets []*config.Target) ([]kube.FleetTarget, bool, error) {
	clients := make([]*kube.Client, len(targets))
	var clientErrs []error
	for i, t := range targets {
		var err error
		if clients[i], err = o.cluster.client(ctx, e, t); err != nil {
			clientErrs = append(clientErrs, fmt.Errorf("target %q: %w", t.Name, err))
		}
	}
	preflight := len(targets) > 1 && !o.apply.DryRun
	if preflight && len(clientErrs) == 0 {
		for _, c := range clients {
			c.Warm(ctx, o.apply.InventoryNamespace)
		}
	}
	results, err := repo.RenderAll(ctx, targets)
	if err != nil {
		return nil, false, err
	}
	if len(clientErrs) > 0 {
		return nil, false, errors.Join(clientErrs...)
	}
	for _, w := range kube.VersionWarnings(clients, kubeVersions(targets, results)) {
		e.warn("Kubernetes version", w)
	}
	revision, isAncestor := e.CheckedOut(repo.Root, o.revision)
	// Signatures are checked once everything rendered (nothing reaches a
	// cluster for a revision that does not render) and before any write.
	if o.apply.Verify, err = o.verify.before(ctx, e, &o.cluster, repo, targets, revision, o.apply.InventoryNamespace); err != nil {
		return nil, false, err
	}
	fleet := make([]kube.FleetTarget, len(targets))
	for i, t := range targets {
		opts := o.apply
		opts.Revision, opts.IsAncestor = revision, isAncestor
		opts.Prune = opts.Prune || t.Prune
		fleet[i] = kube.FleetTarget{Name: t.Name, Cluster: t.Cluster, DependsOn: t.DependsOn, Client: clients[i], Objects: results[i].Set.Objects, Options: opts}
	}
	return fleet, preflight, nil
}

// kubeVersions are the Kubernetes versions each target's HelmReleases were
// rendered for ("" for none), for kube.VersionWarnings.
func kubeVersions(targets []*config.Target, results []*render.Result) []kube.RenderedFor {
	out := make([]kube.RenderedFor, len(targets))
	for i, t := range targets {
		out[i].Target = t.Name
		out[i].Version, _ = t.ChartKubeVersion(results[i])
	}
	return out
}
