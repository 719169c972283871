package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ferry-ci/ferry/internal/diff"
)

// revisionFlags name the two revisions diff and plan compare.
type revisionFlags struct {
	base, head string
	noDecrypt  bool
	allTargets bool
}

// options are the diff options of the revisions: base and head from the
// flags, else from the Actions event (and the pull request's number into
// pr, when pr is not nil); encrypted files are decrypted when an age key
// is given and --no-decrypt is not.
func (r *revisionFlags) options(e *env, repo repoFlags, targets []string, pr *int) (diff.Options, error) {
	if err := fillFromEvent(e, &r.base, &r.head, pr); err != nil {
		return diff.Options{}, err
	}
	if r.base == "" {
		return diff.Options{}, fmt.Errorf("--base is required outside a pull_request or push event")
	}
	ropts, err := e.renderOptions(repo, r.noDecrypt || !e.hasAgeKey())
	if err != nil {
		return diff.Options{}, err
	}
	return diff.Options{Repo: repo.dir, Base: r.base, Head: r.head, Render: ropts, Targets: targets, FetchToken: e.token(), AllTargets: r.allTargets}, nil
}

// fillFromEvent takes base, head and the pull request number from the
// Actions event when they were not given: a pull_request event's base and
// head, or a push event's before and after.
func fillFromEvent(e *env, base, head *string, pr *int) error {
	ev, err := e.event()
	if err != nil || ev == nil {
		return err
	}
	b, h, n := ev.Revisions()
	if *base == "" {
		*base = b
	}
	if *head == "" {
		*head = h
	}
	if pr != nil && *pr == 0 {
		*pr = n
	}
	return nil
}

// reportDiffToActions writes the report to the step summary and the step
// outputs (changed, targets, report-path) when running inside Actions.
func reportDiffToActions(e *env, r *diff.Report, markdown, reportFile string) {
	e.summary(markdown)
	e.output("changed", strconv.FormatBool(r.Changed()))
	b, _ := json.Marshal(r.TargetNames())
	e.output("targets", string(b))
	if reportFile != "" {
		e.output("report-path", reportFile)
	}
}
