package drift

import (
	"fmt"
	"io"
	"strings"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/markdown"
	"github.com/ferry-ci/ferry/internal/output"
)

// JSON writes the reports as one JSON array.
func JSON(w io.Writer, reports []*Report) error {
	if reports == nil {
		reports = []*Report{}
	}
	return output.WriteJSON(w, reports)
}

// Text writes the reports for a terminal or a log.
func Text(w io.Writer, reports []*Report) error {
	var b strings.Builder
	for _, r := range reports {
		if r.Error != "" {
			fmt.Fprintf(&b, "target %s: error: %s\n", r.Target, r.Error)
			continue
		}
		fmt.Fprintf(&b, "target %s: %s (%s)\n", r.Target, r.Status, counts(r))
		fmt.Fprintf(&b, "  %s\n", revisions(r, func(s string) string { return s }))
		for _, o := range r.Objects {
			line := fmt.Sprintf("  %-9s %s", o.Class, o.Object)
			if o.Reason != "" {
				line += ": " + o.Reason
			}
			b.WriteString(line + "\n")
			for _, f := range o.Fields {
				fmt.Fprintf(&b, "      %s: %s\n", f.Path, describeField(f, func(s string) string { return s }))
			}
			if o.MoreFields > 0 {
				fmt.Fprintf(&b, "      ... and %d more fields\n", o.MoreFields)
			}
		}
		writeHealText(&b, r)
		if r.Issue != nil && r.Issue.Number > 0 {
			fmt.Fprintf(&b, "  drift issue #%d %s %s\n", r.Issue.Number, r.Issue.Action, r.Issue.URL)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeHealText(b *strings.Builder, r *Report) {
	switch {
	case r.HealError != "":
		fmt.Fprintf(b, "  heal failed: %s\n", r.HealError)
	case r.Heal != nil:
		fmt.Fprintf(b, "  healed: %s\n", r.Heal.Summary())
	}
	if r.Heal == nil {
		return
	}
	for _, c := range r.Heal.Changes {
		if c.Action == kube.Unchanged {
			continue
		}
		line := fmt.Sprintf("    %-10s %s", c.Action, c.Object)
		if c.Reason != "" {
			line += " (" + c.Reason + ")"
		}
		b.WriteString(line + "\n")
	}
}

// counts summarizes a report's objects: "2 modified, 1 missing; 6 in sync".
func counts(r *Report) string {
	var parts []string
	for _, c := range Classes {
		if n := r.Count(c); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	in := fmt.Sprintf("%d in sync", r.InSync)
	if len(parts) == 0 {
		return in
	}
	return strings.Join(parts, ", ") + "; " + in
}

// driftCounts summarizes the drift classes only: "2 modified, 1 missing".
func driftCounts(r *Report) string {
	var parts []string
	for _, c := range Classes {
		if n := r.Count(c); n > 0 && c.Drift() {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func revisions(r *Report, code func(string) string) string {
	var parts []string
	if r.Cluster != "" {
		parts = append(parts, "cluster "+code(r.Cluster))
	}
	switch {
	case r.NeverApplied:
		parts = append(parts, "never applied by ferry")
	case r.AppliedRevision != "":
		s := "applied " + code(kube.ShortRevision(r.AppliedRevision))
		if r.AppliedAt != nil {
			s += " at " + r.AppliedAt.Format("2006-01-02 15:04:05 UTC")
		}
		parts = append(parts, s)
	default:
		parts = append(parts, "applied revision unknown")
	}
	if r.Revision != "" {
		parts = append(parts, "checked out "+code(kube.ShortRevision(r.Revision)))
	}
	s := strings.Join(parts, ", ")
	if r.Behind {
		s += " (behind Git: changes since are not applied yet, not drift)"
	}
	return s
}

// describeField renders a field's values and owners; code quotes a value.
func describeField(f Field, code func(string) string) string {
	var s string
	switch {
	case f.Hidden:
		s = "value differs (hidden)"
	default:
		git, live := "not set", "not set"
		if f.Git != nil {
			git = code(string(f.Git))
		}
		if f.Live != nil {
			live = code(string(f.Live))
		}
		s = "Git " + git + ", live " + live
	}
	if len(f.Managers) > 0 {
		var ms []string
		for _, m := range f.Managers {
			ms = append(ms, code(m))
		}
		s += "; owned by " + strings.Join(ms, ", ")
	} else if !f.Pending {
		s += "; owned by no manager"
	}
	if f.Pending {
		s += " (changed in Git, not applied yet)"
	}
	return s
}

// Markdown writes the reports for a step summary: a table of targets,
// then each target's objects.
func Markdown(w io.Writer, reports []*Report) error {
	var b strings.Builder
	b.WriteString("### ferry drift\n\n")
	b.WriteString("| target | status | drift | not applied yet | in sync |\n|---|---|---|---|---|\n")
	for _, r := range reports {
		if r.Error != "" {
			fmt.Fprintf(&b, "| %s | %s | | | |\n", markdown.Text(r.Target), r.Status)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d |\n", markdown.Text(r.Target), r.Status, driftCounts(r), r.Count(Pending), r.InSync)
	}
	for _, r := range reports {
		if r.Status == InSync && r.Heal == nil {
			continue
		}
		b.WriteString("\n")
		b.WriteString(MarkdownTarget(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MarkdownTarget renders one target's report (a heading and its objects),
// e.g. as the body of a drift issue.
func MarkdownTarget(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s: %s\n\n", markdown.Text(r.Target), r.Status)
	if r.Error != "" {
		fmt.Fprintf(&b, "Error: %s\n", markdown.Text(r.Error))
		return b.String()
	}
	fmt.Fprintf(&b, "%s.\n\n", revisions(r, markdown.Code))
	for _, o := range r.Objects {
		fmt.Fprintf(&b, "- **%s** %s", o.Class, markdown.Code(o.Object.String()))
		if o.Reason != "" {
			b.WriteString(": " + markdown.Text(o.Reason))
		}
		b.WriteString("\n")
		for _, f := range o.Fields {
			fmt.Fprintf(&b, "  - %s: %s\n", markdown.Code(f.Path), describeField(f, markdown.Code))
		}
		if o.MoreFields > 0 {
			fmt.Fprintf(&b, "  - ... and %d more fields\n", o.MoreFields)
		}
	}
	switch {
	case r.HealError != "":
		fmt.Fprintf(&b, "\nHeal failed: %s\n", markdown.Text(r.HealError))
	case r.Heal != nil:
		fmt.Fprintf(&b, "\nHealed: %s.\n", r.Heal.Summary())
	}
	if r.Heal != nil {
		for _, c := range r.Heal.Changes {
			if c.Action != kube.Unchanged {
				fmt.Fprintf(&b, "- %s %s\n", c.Action, markdown.Code(c.Object.String()))
			}
		}
	}
	if r.Issue != nil && r.Issue.Number > 0 {
		fmt.Fprintf(&b, "\nDrift issue #%d: %s.\n", r.Issue.Number, r.Issue.Action)
	}
	return b.String()
}
