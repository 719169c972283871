package bump

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/markdown"
)

// Update is one pull request's worth of change: image policies or a
// chart it moves (or, grouped, everything), and the files it rewrites,
// computed from the base revision's content.
type Update struct {
	// Key names the update: the policy (NAMESPACE:NAME), "chart " and
	// the chart's source and name, or "all".
	Key string `json:"key"`
	// Kind is "image", "chart" or, grouped, "all".
	Kind string `json:"kind"`
	// Fields are what the branch and title templates read.
	Fields Fields `json:"-"`
	// Changes are the rewritten values, by file and line.
	Changes []Change `json:"changes"`
	// Files are the rewritten files, by path; Old is the base's.
	Files []images.FileChange `json:"-"`

	images []*images.PolicyResult
	charts []ChartMove
}

// Change is one rewritten value: an image marker's or a chart version's.
type Change struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Object is what the value belongs to: the ImagePolicy
	// (ImagePolicy/namespace/name) or the first object whose chart
	// version the line writes; Objects are all of those.
	Object  string   `json:"object"`
	Objects []string `json:"objects,omitempty"`
	Field   string   `json:"field"`
	Old     string   `json:"old"`
	New     string   `json:"new"`
	// Image or Chart is what moves.
	Image string `json:"image,omitempty"`
	Chart string `json:"chart,omitempty"`
}

// HeadFiles are the update's files by path, with their new content.
func (u *Update) HeadFiles() map[string][]byte {
	files := make(map[string][]byte, len(u.Files))
	for _, f := range u.Files {
		files[f.Path] = f.New
	}
	return files
}

// Summary is what the update moves, in markdown: the first lines of its
// pull request's description and commit message.
func (u *Update) Summary() string {
	var b strings.Builder
	b.WriteString("ferry bump moves ")
	var parts []string
	for _, r := range u.images {
		parts = append(parts, fmt.Sprintf("%s to %s (%s)", markdown.Code(r.Policy.Image), markdown.Code(r.Tag), r.Policy.ID()))
	}
	seen := map[string]bool{}
	for _, m := range u.charts {
		k := m.Key() + " " + m.New
		if !seen[k] {
			seen[k] = true
			parts = append(parts, fmt.Sprintf("chart %s to %s (%s)", markdown.Code(m.Chart), markdown.Code(m.New), markdown.Code(m.Source)))
		}
	}
	b.WriteString(strings.Join(parts, ", "))
	b.WriteString(".\n\n| file | what | old → new | why |\n|---|---|---|---|\n")
	digests := map[string]string{}
	for _, r := range u.images {
		digests["ImagePolicy/"+r.Policy.Namespace+"/"+r.Policy.Name] = r.Digest
	}
	byWhere := map[string]ChartMove{}
	for _, m := range u.charts {
		byWhere[m.Where()] = m
	}
	for _, c := range u.Changes {
		what, why := markdown.Code(c.Image), "digest "+markdown.Code(digests[c.Object])
		if c.Chart != "" {
			what = markdown.Text(strings.Join(c.Objects, ", "))
			m := byWhere[fmt.Sprintf("%s:%d", c.File, c.Line)]
			why = markdown.Text(m.By) + " " + markdown.Code(m.Range)
		}
		fmt.Fprintf(&b, "| %s | %s | %s → %s | %s |\n", markdown.Code(fmt.Sprintf("%s:%d", c.File, c.Line)), what, markdown.Code(c.Old), markdown.Code(c.New), why)
	}
	return b.String()
}

// NewUpdates makes the pull requests' updates: one per image policy
// (from images.Updates) and one per chart (its moves, the chart of each
// by ChartMove.Key), or, grouped, one of everything. read returns a
// file's content at the base revision (fs.ErrNotExist for one the base
// lacks: its moves are left out).
func NewUpdates(imgs []images.Update, moves []ChartMove, read func(string) ([]byte, error), grouped bool) ([]Update, error) {
	var out []Update
	for _, iu := range imgs {
		u := Update{Key: iu.Key, Kind: "image", Files: iu.Files, images: iu.Results}
		r := iu.Results[0]
		u.Fields = Fields{Policy: r.Policy.ID(), Namespace: r.Policy.Namespace, Name: r.Policy.Name, Image: r.Policy.Image, Tag: r.Tag, Count: len(iu.Results)}
		for _, c := range iu.Changes() {
			u.Changes = append(u.Changes, Change{File: c.File, Line: c.Line, Object: "ImagePolicy/" + c.Policy.Namespace + "/" + c.Policy.Name,
				Field: string(c.Field), Old: c.Old, New: c.New, Image: c.Policy.Image})
		}
		out = append(out, u)
	}
	var groups [][]ChartMove
	byKey := map[string]int{}
	for _, m := range moves {
		k := m.Key()
		if grouped {
			k = "all"
		}
		i, ok := byKey[k]
		if !ok {
			i = len(groups)
			byKey[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], m)
	}
	for _, g := range groups {
		u := Update{Key: "chart " + g[0].Key(), Kind: "chart"}
		if err := u.addCharts(g, read); err != nil {
			return nil, err
		}
		if len(u.charts) == 0 {
			continue
		}
		out = append(out, u)
	}
	if !grouped || len(out) < 2 {
		return out, nil
	}
	// Grouped: the image update ("all") and the chart update become one.
	all := out[0]
	all.Key, all.Kind = "all", "all"
	for _, u := range out[1:] {
		all.Changes = append(all.Changes, u.Changes...)
		all.charts = append(all.charts, u.charts...)
		for _, f := range u.Files {
			i := slices.IndexFunc(all.Files, func(g images.FileChange) bool { return g.Path == f.Path })
			if i < 0 {
				all.Files = append(all.Files, f)
				continue
			}
			// Both rewrote this file: the chart lines again, on top.
			content := all.Files[i].New
			for _, m := range u.charts {
				if m.File != f.Path {
					continue
				}
				var err error
				if content, err = rewriteLine(content, m.Line, m.Field, m.Old, m.New); err != nil {
					return nil, fmt.Errorf("%s: %w", m.Where(), err)
				}
			}
			all.Files[i].New = content
		}
	}
	all.Fields.Count = len(all.images) + len(all.charts)
	slices.SortFunc(all.Files, func(a, b images.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return []Update{all}, nil
}

// addCharts rewrites the lines of moves in their files' base content.
// A file the base lacks, or whose line is not the one the scan read,
// leaves its moves out.
func (u *Update) addCharts(moves []ChartMove, read func(string) ([]byte, error)) error {
	var files []string
	for _, m := range moves {
		if !slices.Contains(files, m.File) {
			files = append(files, m.File)
		}
	}
	slices.Sort(files)
	for _, f := range files {
		old, err := read(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		content := old
		for _, m := range moves {
			if m.File != f {
				continue
			}
			next, err := rewriteLine(content, m.Line, m.Field, m.Old, m.New)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", m.Where(), m.Objects[0], err)
			}
			content = next
			u.charts = append(u.charts, m)
			u.Changes = append(u.Changes, Change{File: m.File, Line: m.Line, Object: m.Objects[0], Objects: m.Objects,
				Field: m.Field, Old: m.Old, New: m.New, Chart: m.Chart})
		}
		u.Files = append(u.Files, images.FileChange{Path: f, Old: old, New: content})
	}
	if len(u.charts) == 0 {
		return nil
	}
	m := u.charts[0]
	u.Fields = Fields{Policy: "chart " + m.Chart, Namespace: "chart/" + branchPart(m.Source), Name: m.Chart,
		Image: m.Chart + " chart from " + m.Source, Tag: m.New, Count: len(u.charts), Kind: "chart", Chart: m.Chart, Source: m.Source}
	return nil
}

// branchPart is a source URL as one part of a branch name: its host and
// path, every character but letters, digits, '.', '_' and '-' a '-' (so
// that no chart's branch is a folder of another's).
func branchPart(source string) string {
	if _, rest, ok := strings.Cut(source, "://"); ok {
		source = rest
	}
	b := []byte(strings.Trim(source, "/"))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.ReplaceAll(string(b), "..", "-")
}

// apiVersions are the API versions the events of a change name their
// objects with.
var apiVersions = map[string]string{
	"ImagePolicy":   config.ImageGroup + "/v1",
	"HelmRelease":   "helm.toolkit.fluxcd.io/v2",
	"HelmChart":     config.SourceGroup + "/v1",
	"OCIRepository": config.SourceGroup + "/v1",
}
