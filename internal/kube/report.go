package kube

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ferry-ci/ferry/internal/markdown"
	"github.com/ferry-ci/ferry/internal/output"
)

// ChangeSets are the change sets of a run, as `ferry apply` and `ferry
// drift --heal` print them (output.Result).
type ChangeSets []*ChangeSet

// Formats are text (a line per target and per object), json and
// markdown.
func (sets ChangeSets) Formats() []output.Format { return output.All }

// Write writes the change sets in f.
func (sets ChangeSets) Write(w io.Writer, f output.Format) error {
	switch f {
	case output.JSON:
		if sets == nil {
			sets = ChangeSets{}
		}
		return output.WriteJSON(w, sets)
	case output.Markdown:
		_, err := io.WriteString(w, MarkdownChangeSets(sets))
		return err
	case output.Text:
		return sets.text(w)
	}
	return output.Check(f, sets.Formats())
}

func (sets ChangeSets) text(w io.Writer) error {
	for _, cs := range sets {
		if cs.NotAttempted != "" {
			fmt.Fprintf(w, "target %s (not attempted): %s\n", cs.Target, cs.NotAttempted)
			continue
		}
		verb := "applied"
		if cs.DryRun {
			verb = "dry run"
		}
		if cs.Error != "" {
			verb = "failed at"
		}
		fmt.Fprintf(w, "target %s (%s %s): %s\n", cs.Target, verb, ShortRevision(cs.Revision), cs.Summary())
		for _, c := range cs.Changes {
			line := fmt.Sprintf("  %-10s %s", c.Action, c.Object)
			if c.Reason != "" {
				line += " (" + c.Reason + ")"
			}
			fmt.Fprintln(w, line)
		}
		for _, h := range cs.NotReady {
			fmt.Fprintf(w, "  not ready  %s: %s %s\n", h.Object, h.Status, h.Message)
		}
	}
	return nil
}

// actions in the order reports list them.
var actions = []Action{Created, Configured, Replaced, Unchanged, Deleted, Pruned, Skipped, Orphaned}

// hookActions are the actions only Helm hooks have: the markdown table
// has their columns only when a change set has them.
var hookActions = []Action{Replaced, Deleted}

// Summary counts the changes by action ("2 created, 18 unchanged"), or
// says "nothing to do".
func (cs *ChangeSet) Summary() string {
	var parts []string
	for _, a := range actions {
		if n := cs.Count(a); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}

// ShortRevision is a revision as reports show it: its first 12
// characters, or "unknown revision".
func ShortRevision(r string) string {
	if r == "" {
		return "unknown revision"
	}
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

// MarkdownChangeSets renders change sets for a step summary: a table of
// targets, what failed or was not attempted, then each target's changes.
func MarkdownChangeSets(sets []*ChangeSet) string {
	var b strings.Builder
	var columns []Action
	for _, a := range actions {
		if !slices.Contains(hookActions, a) || slices.ContainsFunc(sets, func(cs *ChangeSet) bool { return cs.Count(a) > 0 }) {
			columns = append(columns, a)
		}
	}
	b.WriteString("### ferry apply\n\n| target | revision |")
	for _, a := range columns {
		fmt.Fprintf(&b, " %s |", a)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(columns)) + "\n")
	var problems []string
	for _, cs := range sets {
		switch {
		case cs.NotAttempted != "":
			problems = append(problems, fmt.Sprintf("- **%s** was not attempted: %s\n", markdown.Text(cs.Target), markdown.Text(cs.NotAttempted)))
			continue
		case cs.Error != "":
			problems = append(problems, fmt.Sprintf("- **%s** failed: %s\n", markdown.Text(cs.Target), markdown.Text(cs.Error)))
		}
		fmt.Fprintf(&b, "| %s | %s |", markdown.Text(cs.Target), markdown.Code(ShortRevision(cs.Revision)))
		for _, a := range columns {
			fmt.Fprintf(&b, " %d |", cs.Count(a))
		}
		b.WriteString("\n")
	}
	if len(problems) > 0 {
		b.WriteString("\n")
		b.WriteString(strings.Join(problems, ""))
	}
	for _, cs := range sets {
		var changed []Change
		for _, c := range cs.Changes {
			if c.Action != Unchanged {
				changed = append(changed, c)
			}
		}
		if len(changed) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n<details><summary>%s: %s</summary>\n\n", markdown.Text(cs.Target), markdown.Text(cs.Summary()))
		for _, c := range changed {
			fmt.Fprintf(&b, "- %s %s", c.Action, markdown.Code(c.Object.String()))
			if c.Reason != "" {
				fmt.Fprintf(&b, ": %s", markdown.Text(c.Reason))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n</details>\n")
	}
	return b.String()
}

// CountAll counts the changes of every set whose action is one of those
// given: the apply step's outputs applied (created, configured or
// replaced) and pruned.
func CountAll(sets []*ChangeSet, of ...Action) int {
	n := 0
	for _, cs := range sets {
		for _, a := range of {
			n += cs.Count(a)
		}
	}
	return n
}
