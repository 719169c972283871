package config

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/render"
)

// Listing is every target of a repository with its state, and what
// discovery skipped: what `ferry render --list` shows.
type Listing struct {
	Targets  []ListedTarget `json:"targets"`
	Skipped  []Skipped      `json:"skipped,omitempty"`
	Clusters []Cluster      `json:"clusters,omitempty"`
}

// ListedTarget is a target and its state: "ok", or "error" and the reason
// (a dependsOn that names no target, a cycle, a render that fails), and
// the Helm charts its render installs.
type ListedTarget struct {
	Name            string   `json:"name"`
	Cluster         string   `json:"cluster,omitempty"`
	Path            string   `json:"path"`
	Prune           bool     `json:"prune"`
	TargetNamespace string   `json:"targetNamespace,omitempty"`
	DependsOn       []string `json:"dependsOn,omitempty"`
	Origin          string   `json:"origin"`
	State           string   `json:"state"`
	Error           string   `json:"error,omitempty"`
	// Releases are the HelmReleases the target's render expanded, each
	// with the chart and the version it resolved to: the charts the
	// target installs. A target whose cluster leaves HelmReleases to a
	// helm-controller has none (its HelmReleases are objects of its
	// render), nor has a target that fails to render (its error names
	// the HelmRelease that failed).
	Releases []render.Release `json:"releases,omitempty"`
	// RenderedWithout and Unresolved say what the render went without:
	// substituteFrom objects only the cluster holds, and the variables
	// left as written (render.Result's Without and Unresolved).
	RenderedWithout []string `json:"renderedWithout,omitempty"`
	Unresolved      []string `json:"unresolved,omitempty"`
	// NotExpanded lists the objects of the render that generate others
	// and were left as they are (a ResourceSet whose inputs ferry cannot
	// resolve), with why.
	NotExpanded []render.SkippedObject `json:"notExpanded,omitempty"`
	// Revision is set when the target renders another ref of this
	// repository than the checked-out one: which GitRepository, ref and
	// commit.
	Revision *SourceRevision `json:"revision,omitempty"`
}

// List renders every target (with encrypted Secrets as the Repo's options
// say) to learn its state and the charts, at their resolved versions, its
// HelmReleases install: what a render fetches anyway. A failed target is
// listed with its reason, so only a stopped context fails the listing.
func (r *Repo) List(ctx context.Context) (*Listing, error) {
	l := &Listing{Targets: []ListedTarget{}, Skipped: r.Skipped, Clusters: r.Clusters}
	for _, t := range r.Targets {
		lt := ListedTarget{Name: t.Name, Cluster: t.Cluster, Path: t.Path, Prune: t.Prune, TargetNamespace: t.TargetNamespace, DependsOn: t.DependsOn, Origin: t.Origin, State: "ok", Revision: t.Revision}
		res, err := r.Render(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lt.State, lt.Error = "error", strings.TrimSpace(err.Error())
		} else {
			lt.Releases = res.Releases
			lt.RenderedWithout, lt.Unresolved = res.Without, res.Unresolved
			lt.NotExpanded = res.Skipped
		}
		l.Targets = append(l.Targets, lt)
	}
	return l, nil
}

// JSON writes the listing as indented JSON.
func (l *Listing) JSON(w io.Writer) error {
	return output.WriteJSON(w, l)
}

// Formats are text and json (output.Result).
func (l *Listing) Formats() []output.Format { return []output.Format{output.Text, output.JSON} }

// Write writes the listing in f.
func (l *Listing) Write(w io.Writer, f output.Format) error {
	switch f {
	case output.Text:
		return l.Text(w)
	case output.JSON:
		return l.JSON(w)
	}
	return output.Check(f, l.Formats())
}

// Text writes the listing as a table, then a line per cluster (`cluster
// NAME: root PATH, from HOW (WHERE)`), per target rendered from another
// ref of the repository (`ref TARGET: GitRepository/NS/NAME at branch B:
// commit C (refs/remotes/origin/B)`), per HelmRelease a
// target installs (`chart TARGET: HelmRelease/NS/NAME installs CHART
// VERSION (Helm release NAME in NS)`), per failed target and per skipped
// Kustomization.
func (l *Listing) Text(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tCLUSTER\tPATH\tPRUNE\tDEPENDS ON\tSTATE\tFROM")
	for _, t := range l.Targets {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\t%s\n", cell(t.Name), cell(dash(t.Cluster)), cell(t.Path), t.Prune, cell(dash(strings.Join(t.DependsOn, ","))), t.State, cell(t.Origin))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range l.Clusters {
		fmt.Fprintf(w, "cluster %s: root %s, from %s (%s)\n", cell(c.Name), cell(c.Path), c.From, cell(c.Origin))
	}
	for _, t := range l.Targets {
		if rev := t.Revision; rev != nil {
			fmt.Fprintf(w, "ref %s: %s at %s: commit %s", cell(t.Name), cell(rev.Source), cell(rev.Ref), cell(rev.Commit))
			if rev.Name != "" {
				fmt.Fprintf(w, " (%s)", cell(rev.Name))
			}
			fmt.Fprintln(w)
		}
	}
	for _, t := range l.Targets {
		for _, rel := range t.Releases {
			if rel.Skipped != "" {
				fmt.Fprintf(w, "chart %s: %s not rendered: %s\n", cell(t.Name), cell(rel.ID), cell(rel.Skipped))
				continue
			}
			fmt.Fprintf(w, "chart %s: %s installs %s %s (Helm release %s in %s)\n", cell(t.Name), cell(rel.ID), cell(rel.Chart), cell(rel.Version), cell(rel.Name), cell(rel.Namespace))
		}
	}
	for _, t := range l.Targets {
		if note := render.WithoutNote(t.RenderedWithout, t.Unresolved); note != "" {
			fmt.Fprintf(w, "warning %s: %s\n", cell(t.Name), cell(note))
		}
		for _, sk := range t.NotExpanded {
			fmt.Fprintf(w, "warning %s: %s not rendered: %s\n", cell(t.Name), cell(sk.ID), cell(sk.Reason))
		}
	}
	for _, t := range l.Targets {
		if t.Error != "" {
			fmt.Fprintf(w, "error %s: %s\n", cell(t.Name), cell(t.Error))
		}
	}
	for _, s := range l.Skipped {
		name := s.Name
		if s.Cluster != "" {
			name = s.Cluster + "/" + s.Name
		}
		fmt.Fprintf(w, "skipped %s (%s): %s\n", cell(name), cell(s.Origin), cell(s.Reason))
	}
	return nil
}

// cell is s as one cell of the table: quoted, escapes and all, when it
// holds a tab, a line break or another character that is not printed as
// itself (a path from the repository may), so it cannot forge a row.
func cell(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
