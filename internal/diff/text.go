package diff

import (
	"fmt"
	"io"
	"strings"

	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/risk"
)

const (
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	cyan   = "\x1b[36m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

// Text writes the report for a terminal or a log; color adds ANSI colors.
func Text(w io.Writer, r *Report, color bool) error {
	paint := func(c, s string) string {
		if !color {
			return s
		}
		return c + s + reset
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ferry diff %s..%s\n", shortHash(r.Base), shortHash(r.Head))
	if s := r.Signatures; s != nil {
		line := "signatures (the base's trusted keys): " + s.Line()
		if !s.OK() {
			line = paint(yellow, line)
		}
		b.WriteString(line + "\n")
	}
	if len(r.Risks) > 0 {
		b.WriteString(paint(red, "risks: "+RiskSummary(r.Risks)) + "\n")
		for _, rk := range r.Risks {
			line := "  " + rk.Line()
			if rk.Accepted != "" {
				line += " [accepted: " + rk.Accepted + "]"
			} else if rk.Level == risk.Refused {
				line = paint(red, line)
			} else {
				line = paint(yellow, line)
			}
			b.WriteString(line + "\n    fix: " + rk.Fix + "\n    id: " + rk.ID + "\n")
		}
	}
	if !r.Changed() {
		b.WriteString("no differences in the rendered manifests\n")
		writeBrokenText(&b, r)
		_, err := io.WriteString(w, b.String())
		return err
	}
	for _, warn := range r.Warnings {
		b.WriteString(paint(yellow, "warning: "+warn) + "\n")
	}
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "\n%s (%s): %d added, %d changed, %d removed, %d unchanged\n",
			paint(bold, "target "+t.Name), t.Why, t.Counts.Added, t.Counts.Changed, t.Counts.Removed, t.Counts.Unchanged)
		for _, rc := range t.Releases {
			fmt.Fprintf(&b, "  %s: %s\n", rc.label(), rc.Charts())
			if why := rc.NotRendered(); why != "" {
				fmt.Fprintf(&b, "    %s\n", why)
			}
		}
		if t.Error != "" {
			b.WriteString(paint(red, "  fails to render at "+t.Side+": "+t.Error) + "\n")
		}
		for _, id := range t.NotCompared {
			fmt.Fprintf(&b, "  %s: encrypted, not compared (no key)\n", id)
		}
		if len(t.RenderedWithout) > 0 {
			fmt.Fprintf(&b, "  %s\n", t.WithoutNote())
		}
		for _, id := range t.Unrendered {
			fmt.Fprintf(&b, "  %s: its chart is not rendered at one revision, not compared\n", id)
		}
		for _, ef := range t.Encrypted {
			fmt.Fprintf(&b, "  encrypted file %s changed (no key; keys from SOPS metadata):%s\n", ef.Path, plainKeys(ef.Added, ef.Removed, ef.Changed, "re-encrypted"))
		}
		if f := t.folded(); f != nil {
			fmt.Fprintf(&b, "  %s\n", f.line(func(k string) string { return k }, "--show-all-metadata"))
		}
		printObjects(&b, t.Objects, "", paint)
		if t.LiveError != "" {
			b.WriteString(paint(red, "  could not compare with the live cluster: "+t.LiveError) + "\n")
		}
		if c := t.LiveCounts; c != nil {
			fmt.Fprintf(&b, "  against the live cluster: %d to create, %d to change, %d to prune or leave, %d unchanged\n", c.Added, c.Changed, c.Removed, c.Unchanged)
			printObjects(&b, t.Live, "live: ", paint)
		}
	}
	if r.Unaffected > 0 {
		fmt.Fprintf(&b, "\n%d other target(s) not affected\n", r.Unaffected)
	}
	writeBrokenText(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func plainKeys(added, removed, changed []string, changedWord string) string {
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	if len(changed) > 0 {
		parts = append(parts, changedWord+" "+strings.Join(changed, ", "))
	}
	if len(parts) == 0 {
		return " none"
	}
	return " " + strings.Join(parts, "; ")
}

// JSON writes the report as indented JSON.
func JSON(w io.Writer, r *Report) error {
	return output.WriteJSON(w, r)
}

// Formats are text, json and markdown (output.Result).
func (r *Report) Formats() []output.Format { return output.All }

// Write writes the report in f: text without color, JSON, or the
// markdown of Markdown, its parts one after the other.
func (r *Report) Write(w io.Writer, f output.Format) error {
	return write(w, r, f, false)
}

// Colored is a report whose text is colored for a terminal (ANSI).
type Colored struct{ *Report }

// Write writes the report in f, its text colored.
func (c Colored) Write(w io.Writer, f output.Format) error {
	return write(w, c.Report, f, true)
}

func write(w io.Writer, r *Report, f output.Format, color bool) error {
	switch f {
	case output.Text:
		return Text(w, r, color)
	case output.JSON:
		return JSON(w, r)
	case output.Markdown:
		_, err := io.WriteString(w, strings.Join(Markdown(r), "\n")+"\n")
		return err
	}
	return output.Check(f, r.Formats())
}

func printObjects(b *strings.Builder, objects []Object, prefix string, paint func(c, s string) string) {
	for _, o := range objects {
		if o.Action == Unchanged || len(o.MetadataOnly) > 0 {
			continue
		}
		label := prefix + string(o.Action)
		if o.Pruned {
			label = prefix + "removed, will be pruned"
		}
		fmt.Fprintf(b, "%s %s (%s)\n", paint(cyan, "---"), o.ID, label)
		for _, warn := range o.Warnings {
			b.WriteString(paint(yellow, "  warning: "+warn) + "\n")
		}
		if o.Secret != nil {
			changed := "changed"
			if o.Secret.Encrypted {
				changed = "re-encrypted"
			}
			of := ""
			if o.Secret.Of != "" {
				of = " (compared with " + o.Secret.Of + ")"
			}
			fmt.Fprintf(b, "  Secret keys%s:%s\n", of, plainKeys(o.Secret.Added, o.Secret.Removed, o.Secret.Changed, changed))
		}
		for _, l := range strings.SplitAfter(o.Diff, "\n") {
			switch {
			case l == "":
			case strings.HasPrefix(l, "+"):
				b.WriteString(paint(green, strings.TrimSuffix(l, "\n")) + "\n")
			case strings.HasPrefix(l, "-"):
				b.WriteString(paint(red, strings.TrimSuffix(l, "\n")) + "\n")
			case strings.HasPrefix(l, "@@"):
				b.WriteString(paint(cyan, strings.TrimSuffix(l, "\n")) + "\n")
			default:
				b.WriteString(l)
			}
		}
	}
}

// writeBrokenText lists the targets broken before and after, which the
// change does not affect.
func writeBrokenText(b *strings.Builder, r *Report) {
	for _, t := range r.Broken {
		fmt.Fprintf(b, "%s is broken before and after, not affected: %s\n", t.Name, firstLine(t.Error))
	}
}
