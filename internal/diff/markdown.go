package diff

import (
	"fmt"
	"html"
	"strings"
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
	fmt.Fprintf(&b, "### ferry diff `%s` → `%s`\n\n", shortHash(r.Base), shortHash(r.Head))
	if !r.Changed() {
		b.WriteString("No differences in the rendered manifests.\n")
		return []string{b.String()}
	}
	b.WriteString("| Target | Added | Changed | Removed | Unchanged | |\n|---|---:|---:|---:|---:|---|\n")
	for _, t := range r.Targets {
		note := cell(t.Why)
		if t.Error != "" {
			note = "**render failed at " + t.Side + "**"
		}
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %d | %s |\n", code(t.Name), t.Counts.Added, t.Counts.Changed, t.Counts.Removed, t.Counts.Unchanged, note)
	}
	if r.Unaffected > 0 {
		fmt.Fprintf(&b, "\n%d other target(s) not affected.\n", r.Unaffected)
	}
	var warnings []string
	for _, t := range r.Targets {
		if t.Error != "" {
			warnings = append(warnings, fmt.Sprintf("`%s` fails to render at %s: %s", code(t.Name), t.Side, cell(firstLine(t.Error))))
		}
	}
	for _, w := range r.Warnings {
		warnings = append(warnings, cell(w))
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
		fmt.Fprintf(&h, "#### `%s`\n", code(t.Name))
		if t.Error != "" {
			fmt.Fprintf(&h, "\nFails to render at %s:\n\n%s", t.Side, fence("text", t.Error))
		}
		for _, id := range t.NotCompared {
			fmt.Fprintf(&h, "\n- `%s`: encrypted, not compared (no key)", code(id.String()))
		}
		for _, ef := range t.Encrypted {
			fmt.Fprintf(&h, "\n- encrypted file `%s` changed (no key; keys from SOPS metadata)%s", code(ef.Path), keyList(ef.Added, ef.Removed, ef.Changed, "re-encrypted"))
		}
		blocks = append(blocks, h.String())
		for _, o := range t.Objects {
			if o.Action == Unchanged {
				continue
			}
			blocks = append(blocks, objectBlock(o, ""))
		}
		if t.LiveError != "" {
			blocks = append(blocks, "Could not compare with the live cluster:\n\n"+fence("text", t.LiveError))
		}
		if t.LiveCounts != nil {
			c := t.LiveCounts
			blocks = append(blocks, fmt.Sprintf("**`%s` against the live cluster:** %d to create, %d to change, %d to prune or leave, %d unchanged\n", code(t.Name), c.Added, c.Changed, c.Removed, c.Unchanged))
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
		b.WriteString("> ⚠️ " + cell(w) + "\n")
	}
	if len(o.Warnings) > 0 {
		b.WriteString("\n")
	}
	if o.Secret != nil {
		what := "Secret keys"
		if o.Secret.Of != "" {
			what += " compared with `" + code(o.Secret.Of) + "`"
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
		b.WriteString(fence("diff", d))
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
			q[i] = "`" + code(k) + "`"
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

// fence wraps text in a code fence longer than any backtick run inside it,
// so the content cannot close it.
func fence(lang, text string) string {
	longest, run := 0, 0
	for _, c := range text {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return f + lang + "\n" + text + f + "\n"
}

// code makes text safe inside an inline code span in a table cell or
// heading: no backticks, pipes or line breaks.
func code(s string) string {
	return strings.NewReplacer("`", "'", "|", "¦", "\n", " ", "\r", " ").Replace(s)
}

// cell makes free text safe in markdown: HTML escaped, no table breaks,
// no markdown emphasis or links.
func cell(s string) string {
	s = html.EscapeString(s)
	return strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]").Replace(s)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
