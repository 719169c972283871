package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/runenv"
)

// bumpRun is what a bump run keeps beside its image scan: the
// repository loaded for its chart versions, and how updates render.
type bumpRun struct {
	repo    *config.Repo
	diff    diff.Options
	sources *helm.Sources // lists versions and fetches the notes, fresh
	charts  *bump.ChartScan
	// noDiff says why updates are not rendered, "" when they are.
	noDiff string
}

// scanCharts loads the repository (decrypting its Secrets, for the
// credentials of chart sources) and scans its chart versions.
func scanCharts(ctx context.Context, e *env, o *bumpOptions, scan *bump.Scan) (*bumpRun, error) {
	b, err := newBumpRun(e, o)
	if err != nil {
		return nil, err
	}
	if b.repo, err = config.Load(ctx, o.repo, b.diff.Render); err != nil {
		return nil, err
	}
	file, err := config.ReadFile(o.repo)
	if err != nil {
		b.close()
		return nil, err
	}
	var rules []config.ChartRuleConfig
	if file != nil {
		rules = file.Charts
	}
	root, _ := filepath.Abs(o.repo)
	if b.charts, err = bump.ScanCharts(ctx, b.repo, root, bump.ChartOptions{Rules: rules, NewSources: func() *helm.Sources { return helm.NewSources(helm.SourcesOptions{}) }}); err != nil {
		b.close()
		return nil, err
	}
	scan.Charts = b.charts
	for _, w := range b.charts.Warnings {
		fmt.Fprintln(e.stderr, "ferry: warning: "+e.Masker.Mask(w))
	}
	return b, nil
}

func newBumpRun(e *env, o *bumpOptions) (*bumpRun, error) {
	ropts, err := e.RenderOptions(runenv.Repo{Dir: o.repo, Insecure: o.insecure, CacheDir: o.cacheDir}, false)
	if err != nil {
		return nil, err
	}
	b := &bumpRun{
		sources: helm.NewSources(helm.SourcesOptions{}),
		diff:    diff.Options{Repo: o.repo, Base: "HEAD", Render: ropts, Mask: e.Masker},
	}
	switch _, gerr := gitrepo.Open(o.repo); {
	case !o.diff:
		b.noDiff = "--diff=false"
	case gerr != nil:
		b.noDiff = "the repository is not in a Git work tree"
	}
	return b, nil
}

func (b *bumpRun) close() {
	if b != nil && b.repo != nil {
		b.repo.Close()
	}
}

// problems is the error of the chart versions that could not be moved
// (the others were), nil when there are none.
func (b *bumpRun) problems() error {
	if b == nil || len(b.charts.Problems) == 0 {
		return nil
	}
	var lines []string
	for _, p := range b.charts.Problems {
		lines = append(lines, "  "+p.Error())
	}
	return fmt.Errorf("%d chart version(s) could not be moved:\n%s", len(lines), strings.Join(lines, "\n"))
}

// renderAll is the rendered change of each update (by Key), nil when
// updates are not rendered; as many at once as the machine has cores
// (their renders share the run's caches).
func (b *bumpRun) renderAll(ctx context.Context, updates []bump.Update, base string) map[string]*bump.Rendered {
	if b.noDiff != "" {
		return nil
	}
	o := b.diff
	o.Base = base
	out := make([]bump.Rendered, len(updates))
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range updates {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i] = updates[i].Render(ctx, o, b.sources)
		})
	}
	wg.Wait()
	m := make(map[string]*bump.Rendered, len(updates))
	for i, u := range updates {
		m[u.Key] = &out[i]
	}
	return m
}

// writeBump is bump without --pr: the dry run prints every update and
// its rendered change; the plain run writes the work tree.
func writeBump(ctx context.Context, e *env, o *bumpOptions, scan *bump.Scan, b *bumpRun) error {
	if b == nil && o.dryRun {
		var err error
		if b, err = newBumpRun(e, o); err != nil {
			return err
		}
	}
	root, _ := filepath.Abs(o.repo)
	read := func(f string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(f))) }
	var cs *images.ChangeSet
	var err error
	if scan.Result != nil {
		if cs, err = scan.Rewrite(); err != nil {
			return err
		}
		for _, w := range scan.Result.Warnings() {
			fmt.Fprintln(e.stderr, "ferry: warning: "+w)
		}
		e.Summary(scan.Markdown(cs, o.dryRun))
	}
	var moves []bump.ChartMove
	if scan.Charts != nil {
		moves = scan.Charts.Moves
	}
	if o.dryRun {
		if cs != nil {
			scan.Report(e.stderr, cs, "would change")
		}
		updates, err := dryRunUpdates(scan, moves, read, false)
		if err != nil {
			return err
		}
		all, err := dryRunUpdates(scan, moves, read, true)
		if err != nil {
			return err
		}
		dry := &bump.DryRun{Charts: scan.Charts, Mask: e.Masker.Mask}
		for _, u := range all {
			dry.Patch = append(dry.Patch, u.Files...)
		}
		if b.noDiff != "" && len(updates) > 0 {
			fmt.Fprintf(e.stderr, "ferry: the updates are not rendered: %s\n", b.noDiff)
		}
		rendered := b.renderAll(ctx, updates, "HEAD")
		for _, u := range updates {
			dry.Updates = append(dry.Updates, bump.Planned{Update: u, Rendered: rendered[u.Key]})
		}
		printChartLines(e, scan.Charts, "would change")
		return dry.Write(e.stdout, output.Format(o.format.value))
	}
	if cs != nil {
		if err := cs.Write(); err != nil {
			return err
		}
		scan.Report(e.stdout, cs, "changed")
	}
	if len(moves) == 0 {
		printChartLines(e, scan.Charts, "changed")
		return nil
	}
	// The chart lines, on top of the images just written.
	updates, err := bump.NewUpdates(nil, moves, read, true)
	if err != nil {
		return err
	}
	for _, u := range updates {
		if err := (&images.ChangeSet{Root: root, Files: u.Files}).Write(); err != nil {
			return err
		}
	}
	printChartLines(e, scan.Charts, "changed")
	return nil
}

// dryRunUpdates are the updates of the scan, from the work tree's
// files: one per policy and chart, or grouped.
func dryRunUpdates(scan *bump.Scan, moves []bump.ChartMove, read func(string) ([]byte, error), grouped bool) ([]bump.Update, error) {
	var imgs []images.Update
	if scan.Result != nil {
		var err error
		if imgs, err = images.Updates(scan.Markers, scan.Result, read, grouped); err != nil {
			return nil, err
		}
	}
	return bump.NewUpdates(imgs, moves, read, grouped)
}

// printChartLines prints the chart scan's report (stderr in a dry run)
// and adds it to the step summary.
func printChartLines(e *env, s *bump.ChartScan, verb string) {
	if s == nil {
		return
	}
	e.Summary(s.Markdown(verb == "would change"))
	w := e.stdout
	if verb == "would change" {
		w = e.stderr
	}
	for _, l := range s.Lines(verb) {
		fmt.Fprintln(w, e.Masker.Mask(l))
	}
}
