package bump

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/markdown"
	"github.com/ferry-ci/ferry/internal/output"
)

// Render is u's rendered change: o (the repository, the base revision,
// the render options, the mask) with the update's files as the head,
// and the notes of the charts it moves, fetched through sources.
func (u *Update) Render(ctx context.Context, o diff.Options, sources *helm.Sources) Rendered {
	o.HeadFiles = u.HeadFiles()
	rep, err := diff.Revisions(ctx, o)
	r := Rendered{Report: rep, Err: err}
	if sources != nil {
		r.Notes = u.Notes(ctx, sources)
	}
	return r
}

// Planned is one update of a dry run with its rendered change.
type Planned struct {
	Update   Update
	Rendered *Rendered // nil when not rendered (--diff=false)
}

// DryRun is what bump --dry-run prints: every update, the chart
// versions that cannot move, the ranges that float.
type DryRun struct {
	// Patch is every file the run would rewrite, by path (all updates
	// together); Updates are the pull requests it would open.
	Patch    []images.FileChange
	Updates  []Planned
	Charts   *ChartScan
	Warnings []string
	// Mask hides decrypted values in what is printed.
	Mask func(string) string
}

// Formats are text (the file edits as a unified diff, then each
// update's rendered change), markdown (each update's pull request
// description) and json.
func (d *DryRun) Formats() []output.Format { return output.All }

type jsonUpdate struct {
	Update
	Diff        *diff.Report `json:"diff,omitempty"`
	RenderError string       `json:"renderError,omitempty"`
	Notes       []ChartNotes `json:"notes,omitempty"`
}

// Write prints the dry run in format f.
func (d *DryRun) Write(w io.Writer, f output.Format) error {
	mask := d.Mask
	if mask == nil {
		mask = func(s string) string { return s }
	}
	switch f {
	case output.JSON:
		v := struct {
			Updates  []jsonUpdate `json:"updates"`
			Errors   []string     `json:"errors"`
			Floating []string     `json:"floating"`
			Warnings []string     `json:"warnings"`
		}{Updates: []jsonUpdate{}, Errors: []string{}, Floating: []string{}, Warnings: append([]string{}, d.Warnings...)}
		for _, p := range d.Updates {
			j := jsonUpdate{Update: p.Update}
			if r := p.Rendered; r != nil {
				j.Diff, j.RenderError, j.Notes = r.Report, r.Fails(), r.Notes
			}
			v.Updates = append(v.Updates, j)
		}
		if c := d.Charts; c != nil {
			for _, p := range c.Problems {
				v.Errors = append(v.Errors, p.Error())
			}
			v.Floating = append(v.Floating, c.Floating...)
			v.Warnings = append(v.Warnings, c.Warnings...)
		}
		var b strings.Builder
		if err := output.WriteJSON(&b, v); err != nil {
			return err
		}
		_, err := io.WriteString(w, mask(b.String()))
		return err
	case output.Markdown:
		var b strings.Builder
		for i, p := range d.Updates {
			if i > 0 {
				b.WriteString("\n---\n\n")
			}
			r := Rendered{}
			if p.Rendered != nil {
				r = *p.Rendered
			}
			desc := Describe(&p.Update, r, mask)
			fmt.Fprintf(&b, "## %s\n\n%s", p.Update.Key, desc.Body)
			for _, c := range desc.Comments {
				b.WriteString("\n" + c)
			}
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	var b strings.Builder
	for _, f := range d.Patch {
		b.WriteString(f.UnifiedDiff())
	}
	for _, p := range d.Updates {
		r := p.Rendered
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "\n# %s: ", p.Update.Key)
		if fails := r.Fails(); fails != "" {
			fmt.Fprintf(&b, "THE CHANGE DOES NOT RENDER: %s\n", oneLine(fails))
		} else {
			b.WriteString("rendered change\n")
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "# chart %s %s", n.Chart, n.Version)
			if n.Home != "" {
				b.WriteString(" home " + n.Home)
			}
			b.WriteString("\n")
			for _, c := range n.Changes {
				b.WriteString("#   - " + oneLine(c) + "\n")
			}
		}
		if r.Report != nil {
			if err := r.Report.Write(&b, output.Text); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, mask(b.String()))
	return err
}

// Lines are the chart scan's report, a line per moved version (verb:
// "changed", "would change"), the floating ranges and the versions that
// cannot move.
func (s *ChartScan) Lines(verb string) []string {
	var out []string
	for _, m := range s.Moves {
		out = append(out, fmt.Sprintf("chart %s (%s): %s -> %s (%s %s): %s %s:%d (%s)", m.Chart, m.Source, m.Old, m.New, m.By, m.Range, verb, m.File, m.Line, strings.Join(m.Objects, ", ")))
	}
	for _, f := range s.Floating {
		out = append(out, "floating: "+f)
	}
	if s.Current > 0 {
		out = append(out, fmt.Sprintf("%d pinned chart version(s) already the newest allowed", s.Current))
	}
	return out
}

// Markdown is the chart scan as the step summary shows it: the moved
// versions, the floating ranges, the versions that cannot move.
func (s *ChartScan) Markdown(dryRun bool) string {
	var b strings.Builder
	title := "ferry bump: charts"
	if dryRun {
		title += " (dry run)"
	}
	fmt.Fprintf(&b, "### %s\n\n", title)
	if len(s.Moves) == 0 {
		b.WriteString("Every pinned chart version is the newest its range allows.\n")
	} else {
		b.WriteString("| file | objects | chart | old → new | why |\n|---|---|---|---|---|\n")
		for _, m := range s.Moves {
			fmt.Fprintf(&b, "| %s | %s | %s | %s → %s | %s %s |\n", markdown.Code(m.Where()), markdown.Text(strings.Join(m.Objects, ", ")),
				markdown.Code(m.Chart+" "+m.Source), markdown.Code(m.Old), markdown.Code(m.New), markdown.Text(m.By), markdown.Code(m.Range))
		}
	}
	for _, f := range s.Floating {
		fmt.Fprintf(&b, "\n> [!NOTE]\n> %s\n", markdown.Text(f))
	}
	for _, p := range s.Problems {
		fmt.Fprintf(&b, "\n> [!CAUTION]\n> %s\n", markdown.Text(p.Error()))
	}
	return b.String()
}
