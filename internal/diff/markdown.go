package diff

import (
	"fmt"
	"html"
	"strings"

	"github.com/ferry-ci/ferry/internal/markdown"
	"github.com/ferry-ci/ferry/internal/risk"
)

// MaxObjectDiff caps one object's diff in markdown (the full diff stays in
// the text and JSON reports).
const MaxObjectDiff = 20000

// Markdown renders the report as markdown blocks, in order: the summary
// table and warnings first, then per target one collapsible section per
// changed object. Callers join them (the step summary) or spread them
// over several comments (forge.Sticky); every block is self-contained.
// Names and content are escaped so nothing in a manifest can break out of
// the markdown or inject HTML.
func Markdown(r *Report) []string {
	var blocks []string
	var b strings.Builder
	fmt.Fprintf(&b, "### ferry diff %s → %s\n\n", markdown.Code(shortHash(r.Base)), markdown.Code(shortHash(r.Head)))
	if s := r.Signatures; s != nil {
		mark := "✅"
		if !s.OK() {
			mark = "⚠️"
		}
		fmt.Fprintf(&b, "%s **Signatures** (the base's trusted keys): %s\n\n", mark, markdown.Text(s.Line()))
	}
	writeRisks(&b, r.Risks)
	if !r.Changed() {
		b.WriteString("No differences in the rendered manifests.\n")
		writeBroken(&b, r)
		return []string{b.String()}
	}
	b.WriteString("| Target | Added | Changed | Removed | Unchanged | |\n|---|---:|---:|---:|---:|---|\n")
	for _, t := range r.Targets {
		note := markdown.Text(t.Why)
		if t.Error != "" {
			note = "**render failed at " + t.Side + "**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", markdown.Code(t.Name), t.Counts.Added, t.Counts.Changed, t.Counts.Removed, t.Counts.Unchanged, note)
	}
	if r.Unaffected > 0 {
		fmt.Fprintf(&b, "\n%d other target(s) not affected.\n", r.Unaffected)
	}
	writeBroken(&b, r)
	var warnings []string
	for _, t := range r.Targets {
		if t.Error != "" {
			warnings = append(warnings, fmt.Sprintf("%s fails to render at %s: %s", markdown.Code(t.Name), t.Side, markdown.Text(firstLine(t.Error))))
		}
	}
	for _, w := range r.Warnings {
		warnings = append(warnings, markdown.Text(w))
	}
	if len(warnings) > 0 {
		b.WriteString("\n> [!WARNING]\n")
		for _, w := range warnings {
			b.WriteString("> - " + w + "\n")
		}
	}
	blocks = append(blocks, b.String())

	for _, t := range r.Targets {
		var h strings.Builder
		fmt.Fprintf(&h, "#### %s\n", markdown.Code(t.Name))
		if t.Error != "" {
			fmt.Fprintf(&h, "\nFails to render at %s:\n\n%s", t.Side, markdown.Fence("text", t.Error))
		}
		for _, rc := range t.Releases {
			what := ""
			if rc.Action != Changed {
				what = " " + string(rc.Action)
			}
			fmt.Fprintf(&h, "\n- %s%s: chart %s", markdown.Code(rc.ID), what, markdown.Code(rc.Charts()))
			if why := rc.NotRendered(); why != "" {
				fmt.Fprintf(&h, "\n  - %s", markdown.Text(why))
			}
		}
		for _, id := range t.NotCompared {
			fmt.Fprintf(&h, "\n- %s: encrypted, not compared (no key)", markdown.Code(id.String()))
		}
		if len(t.RenderedWithout) > 0 {
			fmt.Fprintf(&h, "\n- %s", markdown.Text(t.WithoutNote()))
		}
		for _, id := range t.Unrendered {
			fmt.Fprintf(&h, "\n- %s: its chart is not rendered at one revision, not compared", markdown.Code(id.String()))
		}
		for _, ef := range t.Encrypted {
			fmt.Fprintf(&h, "\n- encrypted file %s changed (no key; keys from SOPS metadata)%s", markdown.Code(ef.Path), keyList(ef.Added, ef.Removed, ef.Changed, "re-encrypted"))
		}
		if f := t.folded(); f != nil {
			fmt.Fprintf(&h, "\n- %s", f.line(markdown.Code, markdown.Code("--show-all-metadata")))
		}
		if !strings.HasSuffix(h.String(), "\n") {
			// A list ends with a line break, so that the next block,
			// joined on a new line, starts after a blank one.
			h.WriteString("\n")
		}
		blocks = append(blocks, h.String())
		for _, o := range t.Objects {
			if o.Action == Unchanged || len(o.MetadataOnly) > 0 {
				continue
			}
			blocks = append(blocks, objectBlock(o, ""))
		}
		if t.LiveError != "" {
			blocks = append(blocks, "Could not compare with the live cluster:\n\n"+markdown.Fence("text", t.LiveError))
		}
		if t.LiveCounts != nil {
			c := t.LiveCounts
			blocks = append(blocks, fmt.Sprintf("**%s against the live cluster:** %d to create, %d to change, %d to prune or leave, %d unchanged\n", markdown.Code(t.Name), c.Added, c.Changed, c.Removed, c.Unchanged))
			for _, o := range t.Live {
				if o.Action != Unchanged {
					blocks = append(blocks, objectBlock(o, "live: "))
				}
			}
		}
	}
	return blocks
}

func objectBlock(o Object, prefix string) string {
	var b strings.Builder
	label := prefix + string(o.Action)
	if o.Pruned {
		label = prefix + "removed, will be pruned"
	}
	fmt.Fprintf(&b, "<details><summary><code>%s</code> (%s)</summary>\n\n", html.EscapeString(o.ID.String()), label)
	for _, w := range o.Warnings {
		b.WriteString("> ⚠️ " + markdown.Text(w) + "\n")
	}
	if len(o.Warnings) > 0 {
		b.WriteString("\n")
	}
	if o.Secret != nil {
		what := "Secret keys"
		if o.Secret.Of != "" {
			what += " compared with " + markdown.Code(o.Secret.Of)
		}
		changed := "changed"
		if o.Secret.Encrypted {
			changed = "re-encrypted"
		}
		b.WriteString(what + ":" + keyList(o.Secret.Added, o.Secret.Removed, o.Secret.Changed, changed) + "\n")
	}
	d := o.Diff
	if len(d) > MaxObjectDiff {
		cut := strings.LastIndex(d[:MaxObjectDiff], "\n")
		d = d[:cut+1] + fmt.Sprintf("... %d more bytes (see the full report)\n", len(o.Diff)-cut-1)
	}
	if d != "" {
		if o.Secret != nil {
			b.WriteString("\n")
		}
		b.WriteString(markdown.Fence("diff", d))
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

func keyList(added, removed, changed []string, changedWord string) string {
	var parts []string
	add := func(word string, keys []string) {
		if len(keys) == 0 {
			return
		}
		q := make([]string, len(keys))
		for i, k := range keys {
			q[i] = markdown.Code(k)
		}
		parts = append(parts, word+" "+strings.Join(q, ", "))
	}
	add("added", added)
	add("removed", removed)
	add(changedWord, changed)
	if len(parts) == 0 {
		return " none"
	}
	return " " + strings.Join(parts, "; ")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// writeBroken lists the targets broken before and after, which the
// change does not affect.
func writeBroken(b *strings.Builder, r *Report) {
	for _, t := range r.Broken {
		fmt.Fprintf(b, "\n%s is broken before and after, not affected: %s\n", markdown.Code(t.Name), markdown.Text(firstLine(t.Error)))
	}
}

// writeRisks writes the risks section, above everything else the report
// shows of the change.
func writeRisks(b *strings.Builder, rs []risk.Risk) {
	if len(rs) == 0 {
		return
	}
	open := 0
	for _, r := range rs {
		if r.Accepted == "" {
			open++
		}
	}
	kind := "CAUTION"
	if open == 0 {
		kind = "NOTE"
	}
	fmt.Fprintf(b, "> [!%s]\n> **What this change risks**: %s\n>\n", kind, markdown.Text(RiskSummary(rs)))
	for _, r := range rs {
		fmt.Fprintf(b, "> - **%s** %s: %s", r.Level, markdown.Code(r.Target), markdown.Code(r.Object))
		if r.Field != "" {
			b.WriteString(" " + markdown.Code(r.Field))
		}
		if r.Base != "" || r.Head != "" {
			fmt.Fprintf(b, " (%s → %s)", markdown.Code(orNone(risk.Short(r.Base))), markdown.Code(orNone(risk.Short(r.Head))))
		}
		fmt.Fprintf(b, ": %s", markdown.Text(r.Why))
		if r.From != "" {
			fmt.Fprintf(b, " (%s)", markdown.Text(r.From))
		}
		fmt.Fprintf(b, ". *Fix:* %s.", markdown.Text(r.Fix))
		if r.Accepted != "" {
			fmt.Fprintf(b, " *Accepted* (%s).", markdown.Text(r.Accepted))
		} else {
			fmt.Fprintf(b, " <sub>To accept: %s</sub>", markdown.Code("# ferry: accept-risk "+r.ID))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
