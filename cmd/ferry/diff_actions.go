package main

import (
	"encoding/json"
	"strconv"

	"github.com/ferry-ci/ferry/internal/diff"
)

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
