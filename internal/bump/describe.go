package bump

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/markdown"
)

// RenderFailsLabel is the label of a bump pull request whose change does
// not render: nobody should merge it blind.
const RenderFailsLabel = "ferry: render fails"

// BodyLimit is the longest pull request description written, in
// characters (GitHub takes 65,536); what does not fit goes to comments.
const BodyLimit = 60000

// Rendered is an update's rendered change: ferry diff's report of the
// base against the base with the update's files, or why it could not be
// made; and the notes of the charts it moves.
type Rendered struct {
	Report *diff.Report
	Err    error
	Notes  []ChartNotes
}

// Fails is why the change does not render, "" when it does.
func (r Rendered) Fails() string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case r.Report == nil:
		return ""
	}
	if err := r.Report.Err(); err != nil {
		return err.Error()
	}
	return ""
}

// ChartNotes are what a chart version says of itself: its Chart.yaml's
// home and sources links, and the changes its artifacthub.io/changes
// annotation lists.
type ChartNotes struct {
	Chart   string   `json:"chart"`
	Version string   `json:"version"`
	Home    string   `json:"home,omitempty"`
	Sources []string `json:"sources,omitempty"`
	Changes []string `json:"changes,omitempty"`
	// Err is why the notes could not be read.
	Err string `json:"error,omitempty"`
}

// Notes fetches the new version of every chart u moves (once each) and
// reads its notes.
func (u *Update) Notes(ctx context.Context, sources *helm.Sources) []ChartNotes {
	var out []ChartNotes
	seen := map[string]bool{}
	for _, m := range u.charts {
		k := m.Key() + "\x00" + m.New
		if seen[k] {
			continue
		}
		seen[k] = true
		n := ChartNotes{Chart: m.Chart, Version: m.New}
		src := m.src
		src.Version = m.New
		f, err := sources.Fetch(ctx, src)
		if err == nil {
			var md *chartMetadata
			if md, err = readMetadata(f); err == nil {
				n.Home, n.Sources, n.Changes = md.home, md.sources, md.changes
			}
		}
		if err != nil {
			n.Err = err.Error()
		}
		out = append(out, n)
	}
	return out
}

type chartMetadata struct {
	home    string
	sources []string
	changes []string
}

func readMetadata(f *helm.Fetched) (*chartMetadata, error) {
	md, err := f.Metadata()
	if err != nil {
		return nil, err
	}
	out := &chartMetadata{home: md.Home, sources: md.Sources}
	raw := md.Annotations["artifacthub.io/changes"]
	if raw == "" {
		return out, nil
	}
	// A list of strings, or of {kind, description, links}.
	var items []any
	if err := yaml.Unmarshal([]byte(raw), &items); err != nil {
		out.changes = []string{strings.TrimSpace(raw)}
		return out, nil
	}
	for _, it := range items {
		switch v := it.(type) {
		case string:
			out.changes = append(out.changes, v)
		case map[string]any:
			d, _ := v["description"].(string)
			if k, _ := v["kind"].(string); k != "" {
				d = k + ": " + d
			}
			out.changes = append(out.changes, d)
		}
	}
	return out, nil
}

// Describe is the description of u's pull request: a warning first when
// the change fails to render (and the RenderFailsLabel on), what moves,
// the charts' notes, then the rendered diff, block by block while the
// body holds them; the blocks past BodyLimit become its comments. mask
// hides decrypted values in every text.
func Describe(u *Update, r Rendered, mask func(string) string) Description {
	var head strings.Builder
	fails := r.Fails()
	if fails != "" {
		fmt.Fprintf(&head, "> [!CAUTION]\n> **This change does not render**, so what it does to the clusters is not known: %s\n\n", markdown.Text(oneLine(fails)))
	}
	head.WriteString(u.Summary())
	for _, n := range r.Notes {
		head.WriteString("\n" + n.Markdown())
	}
	body := mask(head.String())
	var rest []string
	if r.Report != nil {
		blocks := diff.Markdown(r.Report)
		for i, b := range blocks {
			b = mask(b)
			if len(rest) == 0 && utf8.RuneCountInString(body)+utf8.RuneCountInString(b)+2 <= BodyLimit {
				body += "\n" + b
				continue
			}
			if len(rest) == 0 {
				body += fmt.Sprintf("\n_The rendered diff goes on in the comments below (%d more block(s))._\n", len(blocks)-i)
			}
			rest = append(rest, b)
		}
	}
	return Description{Body: body, Comments: rest, Labels: map[string]bool{RenderFailsLabel: fails != ""}}
}

// Markdown is the notes as a few lines of the description.
func (n ChartNotes) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Chart %s %s**", markdown.Code(n.Chart), markdown.Code(n.Version))
	var links []string
	link := func(name, u string) {
		if (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " ()<>[]\"\n") {
			links = append(links, "["+name+"]("+u+")")
		} else if u != "" {
			links = append(links, name+" "+markdown.Code(u))
		}
	}
	link("home", n.Home)
	for _, s := range n.Sources {
		link("source", s)
	}
	if len(links) > 0 {
		b.WriteString(": " + strings.Join(links, ", "))
	}
	b.WriteString("\n")
	if n.Err != "" {
		fmt.Fprintf(&b, "\n_Its notes could not be read: %s_\n", markdown.Text(oneLine(n.Err)))
	}
	if len(n.Changes) > 0 {
		b.WriteString("\nChanges (artifacthub.io/changes):\n")
		for _, c := range n.Changes {
			fmt.Fprintf(&b, "- %s\n", markdown.Text(oneLine(c)))
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
