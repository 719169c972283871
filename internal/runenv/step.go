package runenv

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/drift"
)

// InStep reports whether ferry runs as an Actions step.
func (e *Env) InStep() bool { return e.Step != nil }

// StartStep hides every secret input of the step before anything is
// printed, then registers with the runner every other secret known by
// now (those of the environment) and its base64 form. Outside a step it
// does nothing.
func (e *Env) StartStep() error {
	if e.Step == nil {
		return nil
	}
	inputs := e.Step.SecretInputs()
	e.Masker.Add(inputs...)
	e.Credentials.Add(inputs...)
	if err := e.Step.Mask(inputs...); err != nil {
		return err
	}
	return e.Step.Mask(actions.Maskable(e.Masker.Values())...)
}

// Output sets the step output name, with secrets masked. Outside a step
// it does nothing. A failure to write it is kept for StepErr, so callers
// need not check.
func (e *Env) Output(name, value string) {
	if e.Step == nil {
		return
	}
	if err := e.Step.SetOutput(name, e.Masker.Mask(value)); err != nil && e.stepErr == nil {
		e.stepErr = fmt.Errorf("step output %s: %w", name, err)
	}
}

// Summary appends markdown to the step summary, with secrets masked.
// Outside a step it does nothing; a failure is kept for StepErr.
func (e *Env) Summary(markdown string) {
	if e.Step == nil {
		return
	}
	if err := e.Step.AddSummary(e.Masker.Mask(markdown)); err != nil && e.stepErr == nil {
		e.stepErr = fmt.Errorf("step summary: %w", err)
	}
}

// SummaryFile appends markdown, masked, to the step summary: through the
// step inside one, else to the file GITHUB_STEP_SUMMARY names, when it
// names one (a run outside Actions that asked for a summary).
func (e *Env) SummaryFile(markdown string) error {
	if e.Step != nil {
		e.Summary(markdown)
		return nil
	}
	if e.getenv("GITHUB_STEP_SUMMARY") == "" {
		return nil
	}
	rt := actions.New(e.getenv, io.Discard, actions.WithMask(e.Masker.Mask))
	if err := rt.AddSummary(markdown); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}

// StepErr is the first failure to write a step output or summary: it
// fails the run (exit 2) once the command is done.
func (e *Env) StepErr() error { return e.stepErr }

// Group folds what is printed until the returned func is called into one
// collapsed section of the step log. Outside a step it does nothing.
func (e *Env) Group(title string) (end func()) {
	if e.Step == nil || e.Step.Group(title) != nil {
		return func() {}
	}
	return func() { _ = e.Step.EndGroup() }
}

// Event returns the event that started the run (nil outside a step),
// reading its payload once.
func (e *Env) Event() (*actions.Event, error) {
	if e.Step == nil {
		return nil, nil
	}
	if !e.eventRead {
		e.ev, e.evErr = e.Step.Event()
		e.eventRead = true
	}
	return e.ev, e.evErr
}

// Warn is a warning annotation titled title, masked; outside a step it
// does nothing (the caller prints the warning itself).
func (e *Env) Warn(title, msg string) {
	if e.Step != nil {
		_ = e.Step.Warning(e.Masker.Mask(msg), actions.Annotation{Title: title})
	}
}

// Annotate reports a failed run to the runner: an error annotation, on
// the file the error names under repo when it names one. Outside a step
// it does nothing.
func (e *Env) Annotate(err error, title, repo string) {
	if e.Step == nil {
		return
	}
	_ = e.Step.Error(e.Masker.Mask(strings.TrimSpace(err.Error())), e.Step.ErrorAnnotation(err, title, repo))
}

// RunURL is the address of the workflow run, "" when the environment
// does not say.
func (e *Env) RunURL() string { return actions.New(e.getenv, io.Discard).RunURL() }

// ReportDiff writes the report to the step summary and the step
// outputs (changed, targets, risks: those not accepted, report-path)
// when running inside Actions.
func (e *Env) ReportDiff(r *diff.Report, markdown, reportFile string) {
	e.Summary(markdown)
	e.Output("changed", strconv.FormatBool(r.Changed()))
	e.Output("risks", strconv.Itoa(r.OpenRisks()))
	b, _ := json.Marshal(r.TargetNames())
	e.Output("targets", string(b))
	if reportFile != "" {
		e.Output("report-path", reportFile)
	}
}

// ReportDrift sets the step output drifted and, with --report
// summary, appends the markdown report to the step summary: through the
// Actions runtime inside a step, else to the file GITHUB_STEP_SUMMARY
// names, when it names one.
func (e *Env) ReportDrift(reports []*drift.Report, summary bool) error {
	_, drifted := drift.Outcome(reports)
	e.Output("drifted", strconv.FormatBool(len(drifted) > 0))
	if !summary {
		return nil
	}
	var b strings.Builder
	if err := drift.Markdown(&b, reports); err != nil {
		return err
	}
	return e.SummaryFile(b.String())
}
