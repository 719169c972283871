package bump

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// Renders renders a run's updates: ferry diff of the base against the
// base with each update's files, through one set of render options (so
// that the updates share the run's chart, render and build caches).
type Renders struct {
	diff    diff.Options
	sources *helm.Sources // fetches the charts' notes (the renders' own)
	// Off says why updates are not rendered, "" when they are.
	Off string
}

// NewRenders renders the updates of the repository at dir with ropts,
// masking with mask; off (--diff=false) or a folder outside a Git work
// tree renders nothing (Off says why).
func NewRenders(dir string, ropts render.Options, mask *secrets.Masker, off bool) *Renders {
	// The notes' charts come through the renders' sources: the new
	// version is fetched once, for both.
	sources := ropts.HelmSources
	if sources == nil {
		sources = helm.NewSources(helm.SourcesOptions{})
	}
	r := &Renders{sources: sources, diff: diff.Options{Repo: dir, Base: "HEAD", Render: ropts, Mask: mask}}
	switch _, err := gitrepo.Open(dir); {
	case off:
		r.Off = "--diff=false"
	case err != nil:
		r.Off = "the repository is not in a Git work tree"
	}
	return r
}

// All is the rendered change of each update against the base revision
// (by the update's Key); nil when updates are not rendered. As many
// render at once as the machine has cores.
func (r *Renders) All(ctx context.Context, updates []Update, base string) map[string]*Rendered {
	if r == nil || r.Off != "" {
		return nil
	}
	o := r.diff
	o.Base = base
	out := make([]Rendered, len(updates))
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range updates {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i] = updates[i].Render(ctx, o, r.sources)
		})
	}
	wg.Wait()
	m := make(map[string]*Rendered, len(updates))
	for i, u := range updates {
		m[u.Key] = &out[i]
	}
	return m
}

// LoadCharts loads the repository at dir with ropts (decrypting its
// Secrets, for the credentials of chart sources), reads ferry.yaml's
// charts: rules and scans its chart versions (ScanCharts, each source
// listed afresh).
func LoadCharts(ctx context.Context, dir string, ropts render.Options) (*ChartScan, error) {
	file, err := config.ReadFile(dir)
	if err != nil {
		return nil, err
	}
	var rules []config.ChartRuleConfig
	if file != nil {
		rules = file.Charts
	}
	repo, err := config.Load(ctx, dir, ropts)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return ScanCharts(ctx, repo, root, ChartOptions{Rules: rules, NewSources: func() *helm.Sources { return helm.NewSources(helm.SourcesOptions{}) }})
}

// Err is the error of the chart versions that could not be moved (the
// others were), nil when there are none.
func (s *ChartScan) Err() error {
	if s == nil || len(s.Problems) == 0 {
		return nil
	}
	lines := make([]string, len(s.Problems))
	for i, p := range s.Problems {
		lines[i] = "  " + p.Error()
	}
	return fmt.Errorf("%d chart version(s) could not be moved:\n%s", len(lines), strings.Join(lines, "\n"))
}

// WorkTree reads a file of the work tree at Root, by slash path.
func (s *Scan) WorkTree(file string) ([]byte, error) { return readFile(s.Root, file) }

// WorkTreeUpdates are the scan's updates made from the work tree's
// files: one per policy and per chart, or grouped.
func (s *Scan) WorkTreeUpdates(grouped bool) ([]Update, error) {
	var imgs []images.Update
	if s.Result != nil {
		var err error
		if imgs, err = images.Updates(s.Markers, s.Result, s.WorkTree, grouped); err != nil {
			return nil, err
		}
	}
	var moves []ChartMove
	if s.Charts != nil {
		moves = s.Charts.Moves
	}
	return NewUpdates(imgs, moves, s.WorkTree, grouped)
}

// Outcome is what a run without --pr tells: its report (what changed,
// or would), the step summary, and the scan's warnings.
type Outcome struct {
	Report, Summary string
	Warnings        []string
	// DryRun is the dry run's output; nil for a plain run.
	DryRun *DryRun
}

// Write writes the work tree (the marked image lines, then the chart
// versions) and says what changed.
func (s *Scan) Write() (*Outcome, error) {
	out, cs, err := s.imageOutcome(false)
	if err != nil {
		return nil, err
	}
	if cs != nil {
		if err := cs.Write(); err != nil {
			return nil, err
		}
	}
	if s.Charts != nil && len(s.Charts.Moves) > 0 {
		// On top of the images just written.
		updates, err := NewUpdates(nil, s.Charts.Moves, s.WorkTree, true)
		if err != nil {
			return nil, err
		}
		for _, u := range updates {
			if err := (&images.ChangeSet{Root: s.Root, Files: u.Files}).Write(); err != nil {
				return nil, err
			}
		}
	}
	s.chartOutcome(out, "changed")
	return out, nil
}

// Plan is the dry run: nothing written; every file's edit, and each
// update with its rendered change (renders may be nil).
func (s *Scan) Plan(ctx context.Context, renders *Renders, mask func(string) string) (*Outcome, error) {
	out, _, err := s.imageOutcome(true)
	if err != nil {
		return nil, err
	}
	updates, err := s.WorkTreeUpdates(false)
	if err != nil {
		return nil, err
	}
	all, err := s.WorkTreeUpdates(true)
	if err != nil {
		return nil, err
	}
	d := &DryRun{Charts: s.Charts, Mask: mask}
	for _, u := range all {
		d.Patch = append(d.Patch, u.Files...)
	}
	rendered := renders.All(ctx, updates, "HEAD")
	for _, u := range updates {
		d.Updates = append(d.Updates, Planned{Update: u, Rendered: rendered[u.Key]})
	}
	out.DryRun = d
	s.chartOutcome(out, "would change")
	return out, nil
}

// imageOutcome is the image part of a run's outcome, with the image
// edit it makes (nil without image policies scanned).
func (s *Scan) imageOutcome(dryRun bool) (*Outcome, *images.ChangeSet, error) {
	out := &Outcome{}
	if s.Result == nil {
		return out, nil, nil
	}
	cs, err := s.Rewrite()
	if err != nil {
		return nil, nil, err
	}
	verb := "changed"
	if dryRun {
		verb = "would change"
	}
	var b strings.Builder
	s.Report(&b, cs, verb)
	out.Report, out.Summary, out.Warnings = b.String(), s.Markdown(cs, dryRun), s.Result.Warnings()
	return out, cs, nil
}

// chartOutcome adds the chart scan's lines and summary to out.
func (s *Scan) chartOutcome(out *Outcome, verb string) {
	if s.Charts == nil {
		return
	}
	for _, l := range s.Charts.Lines(verb) {
		out.Report += l + "\n"
	}
	out.Summary += s.Charts.Markdown(verb == "would change")
}
