package runenv

import (
	"context"
	"encoding/json"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/render"
)

// Bump is a ferry bump run's use of the repository beyond its image
// scan: the chart versions it scans and the renders of its updates,
// sharing one set of render options (the repository's credentials,
// decryption and caches), made once.
type Bump struct {
	env   *Env
	repo  Repo
	diff  bool
	ropts *render.Options
}

// Bump is the bump run of the repository r; diff says whether its
// updates are rendered (--diff).
func (e *Env) Bump(r Repo, diff bool) *Bump { return &Bump{env: e, repo: r, diff: diff} }

func (b *Bump) renderOptions() (render.Options, error) {
	if b.ropts == nil {
		ropts, err := b.env.RenderOptions(b.repo, false)
		if err != nil {
			return ropts, err
		}
		b.ropts = &ropts
	}
	return *b.ropts, nil
}

// Charts scans the repository's chart versions into scan.Charts
// (bump.LoadCharts) and returns its warnings, masked.
func (b *Bump) Charts(ctx context.Context, scan *bump.Scan) ([]string, error) {
	ropts, err := b.renderOptions()
	if err != nil {
		return nil, err
	}
	if scan.Charts, err = bump.LoadCharts(ctx, b.repo.Dir, ropts); err != nil {
		return nil, err
	}
	warnings := make([]string, len(scan.Charts.Warnings))
	for i, w := range scan.Charts.Warnings {
		warnings[i] = b.env.Masker.Mask(w)
	}
	return warnings, nil
}

// Renders is how the run renders its updates; its Off says why it does
// not, if it does not.
func (b *Bump) Renders() (*bump.Renders, error) {
	ropts, err := b.renderOptions()
	if err != nil {
		return nil, err
	}
	return bump.NewRenders(b.repo.Dir, ropts, b.env.Masker, !b.diff), nil
}

// ReportPRs sets the step's pull-requests output and writes its summary
// of the pull requests bump opened, updated or left alone.
func (e *Env) ReportPRs(opened []bump.Opened, warnings []string) error {
	b, err := json.Marshal(opened)
	if err != nil {
		return err
	}
	e.Output("pull-requests", string(b))
	e.Summary(bump.Markdown(opened, warnings))
	return nil
}

// Outcome is the run without --pr: the dry run (nothing written, each
// update rendered unless off says why not) or the plain run, which
// writes the work tree.
func (b *Bump) Outcome(ctx context.Context, scan *bump.Scan, dryRun bool) (out *bump.Outcome, off string, err error) {
	if !dryRun {
		out, err = scan.Write()
		return out, "", err
	}
	r, err := b.Renders()
	if err != nil {
		return nil, "", err
	}
	out, err = scan.Plan(ctx, r, b.env.Masker.Mask)
	return out, r.Off, err
}
