package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/forge"
)

// issueForge is the forge of --report issue: named by --forge or found
// from the Actions environment (openForge: token in FERRY_TOKEN, else
// GITHUB_TOKEN or GITEA_TOKEN).
func (o *driftOptions) issueForge(e *env) (forge.Forge, error) {
	f, err := openForge(e, o.forge)
	if err != nil {
		return nil, fmt.Errorf("--report issue: %w", err)
	}
	return f, nil
}

// syncDriftIssues keeps one issue per target: opened or edited while the
// target drifts, closed with a comment once it does not (or --heal repaired
// it). A target that could not be checked keeps its issue as it is.
func syncDriftIssues(ctx context.Context, e *env, f forge.Forge, label string, reports []*drift.Report, revision string) error {
	run := actions.New(e.getenv, e.stdout).RunURL()
	var errs []error
	for _, r := range reports {
		if r.Error != "" {
			continue
		}
		it := drift.IssueTextOf(r, revision, run)
		sync := forge.IssueSync{Marker: it.Marker, Label: label}
		res, err := sync.Sync(ctx, f, it.Title, e.masker.Mask(it.Body), it.Open, it.Closing)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %q: drift issue: %w", r.Target, err))
			continue
		}
		r.Issue = &drift.Issue{Action: string(res.Action), Number: res.Number, URL: res.URL}
	}
	return errors.Join(errs...)
}
