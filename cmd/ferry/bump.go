package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/runenv"
)

type bumpOptions struct {
	repo           repoFlags
	policies       []string
	dryRun         bool
	pr             bool
	webhookPayload string
	maxTags        int
	timeout        time.Duration
	concurrency    int

	// --pr
	base, remote, forge string
	branch, title       string
	group               bool
	author              string

	notify notifyFlags

	images, charts, diff bool
	format               *choiceValue
}

func newBumpCmd(e *env) *cobra.Command {
	o := &bumpOptions{format: newChoice(output.Names(output.All)...)}
	def := bump.DefaultOptions(".").Scan
	cmd := &cobra.Command{
		Use:     "bump [--policy NAME...] [--dry-run | --pr]",
		Short:   "Scan registries for new image tags and chart versions and rewrite their lines",
		Long:    help("bump"),
		Example: helpExamples("bump"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBump(cmd, e, o)
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root")
	f.StringSliceVar(&o.policies, "policy", nil, "scan only these policies (`NAME`, NAMESPACE/NAME or NAMESPACE:NAME; repeatable)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the change instead of writing it: the edit as a unified diff, then each update's rendered change (see --format)")
	f.BoolVar(&o.pr, "pr", false, "open or update one pull request per policy and per chart instead of writing the work tree")
	f.StringVar(&o.webhookPayload, "webhook-payload", "", "registry push event (`FILE`): scan only the policies of the image it names")
	f.IntVar(&o.maxTags, "max-tags", def.MaxTags, "most tags read per image repository")
	f.DurationVar(&o.timeout, "timeout", def.Timeout, "longest time to read one image repository")
	f.IntVar(&o.concurrency, "concurrency", def.Concurrency, "image repositories read at a time per registry")
	f.StringVar(&o.base, "base", "", "with --pr: the pull requests' base `BRANCH` (default: the checked-out branch)")
	f.StringVar(&o.remote, "remote", "origin", "with --pr: the Git remote (`NAME` or URL) the branches are pushed to")
	f.StringVar(&o.forge, "forge", "", "with --pr: github or gitea (default: detected from the Actions environment)")
	f.StringVar(&o.branch, "branch", "", "with --pr: branch name `TEMPLATE` (Go template: .Policy .Namespace .Name .Image .Tag .Count .Kind .Chart .Source; default "+bump.DefaultBranch+", grouped "+bump.DefaultGroupedBranch+")")
	f.StringVar(&o.title, "title", "", "with --pr: pull request title `TEMPLATE` (default \""+bump.DefaultTitle+"\", grouped \""+bump.DefaultGroupedTitle+"\")")
	f.BoolVar(&o.group, "group", false, "with --pr: one pull request for every policy and chart instead of one per policy and per chart")
	f.StringVar(&o.author, "author", bump.DefaultAuthor, "with --pr: the commits' `AUTHOR`, as \"Name <email>\"")
	f.BoolVar(&o.images, "images", true, "move the marked image lines (--images=false: charts only)")
	f.BoolVar(&o.charts, "charts", true, "move pinned chart versions: HelmRelease chart.spec.version, HelmChart version, OCIRepository ref.tag (--charts=false: images only; off with --policy or a push event)")
	f.BoolVar(&o.diff, "diff", true, "render each update's change (ferry diff) into its pull request, or the dry run's output")
	f.Var(o.format, "format", "--dry-run output: text (the edit, then each rendered change), json or markdown (the pull requests' descriptions)")
	o.notify.register(f)
	return cmd
}

func runBump(cmd *cobra.Command, e *env, o *bumpOptions) error {
	if o.dryRun && o.pr {
		return errors.New("--dry-run and --pr exclude each other")
	}
	opts := bump.DefaultOptions(o.repo.Dir)
	opts.Policies, opts.Getenv, opts.NoImages = o.policies, e.Getenv, !o.images
	opts.Scan.InsecureRegistries = o.repo.Insecure
	opts.Scan.MaxTags, opts.Scan.Timeout, opts.Scan.Concurrency = o.maxTags, o.timeout, o.concurrency
	var err error
	if opts.Pushed, opts.PushedBy, err = bump.PushedImages(o.webhookPayload, e.Event); err != nil {
		return err
	}
	scan, err := bump.Run(cmd.Context(), opts)
	if scan != nil {
		e.Hide(scan.Passwords...)
		for _, n := range scan.Notes {
			fmt.Fprintln(e.stderr, "ferry: "+n)
		}
		e.warnings(scan.Warnings)
	}
	if err != nil {
		return err
	}
	run := e.Bump(o.repo.settings(), o.diff)
	if o.charts && len(o.policies) == 0 && len(opts.Pushed) == 0 {
		warnings, err := run.Charts(cmd.Context(), scan)
		if err != nil {
			return err
		}
		e.warnings(warnings)
	}
	if scan.Result == nil && scan.Charts == nil {
		return nil
	}
	if o.pr {
		err = runBumpPR(cmd.Context(), e, o, run, scan)
	} else {
		err = writeBump(cmd.Context(), e, o, run, scan)
	}
	return cmp.Or(err, scan.Charts.Err())
}

// writeBump is bump without --pr: the dry run prints every update and
// its rendered change; the plain run writes the work tree.
func writeBump(ctx context.Context, e *env, o *bumpOptions, run *runenv.Bump, scan *bump.Scan) error {
	out, off, err := run.Outcome(ctx, scan, o.dryRun)
	notRendered(e, off)
	if err != nil {
		return err
	}
	e.warnings(out.Warnings)
	e.Summary(out.Summary)
	report := e.stdout
	if o.dryRun {
		report = e.stderr
	}
	if _, err := io.WriteString(report, e.Masker.Mask(out.Report)); err != nil || out.DryRun == nil {
		return err
	}
	return out.DryRun.Write(e.stdout, output.Format(o.format.value))
}

// notRendered says why the updates are not rendered, if they are not.
func notRendered(e *env, why string) {
	if why != "" {
		fmt.Fprintln(e.stderr, "ferry: the updates are not rendered: "+why)
	}
}
