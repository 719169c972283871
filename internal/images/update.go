package images

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Update is one pull request's worth of change: the policies it moves and
// the files it rewrites, computed from the base revision's content.
type Update struct {
	// Key names the update: the policy reference (NAMESPACE:NAME), or
	// "all" for a grouped update.
	Key string
	// Results are the policies with a change, ordered by ID.
	Results []*PolicyResult
	// Files are the rewritten files, ordered by path; Old is the base's.
	Files []FileChange
}

// Changes lists the update's rewritten values, by file and line.
func (u *Update) Changes() []Change { return changesOf(u.Files) }

// Updates computes the pull requests of a scan: one per policy whose
// markers change, or, grouped, one for all. Each is computed from the
// base revision's content of the files (read returns it by path relative
// to the repository, fs.ErrNotExist for a file the base does not have),
// so a file holding the markers of two policies changes only by its own
// policy's lines in each. markers say which files to read.
func Updates(markers []Marker, res *ScanResult, read func(file string) ([]byte, error), grouped bool) ([]Update, error) {
	byRef := res.ByRef()
	files := map[string]bool{}
	var paths []string
	for _, m := range markers {
		if r := byRef[m.Policy]; r != nil && r.Tag != "" && !files[m.File] {
			files[m.File] = true
			paths = append(paths, m.File)
		}
	}
	sort.Strings(paths)
	base := map[string][]byte{}
	parsed := map[string][]Marker{}
	for _, p := range paths {
		data, err := read(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // new in the work tree: not the base's business
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		ms, err := ParseMarkers(p, data)
		if err != nil {
			return nil, err
		}
		base[p], parsed[p] = data, ms
	}
	var groups [][]*PolicyResult
	if grouped {
		var all []*PolicyResult
		for _, r := range res.Policies {
			if r.Tag != "" {
				all = append(all, r)
			}
		}
		groups = append(groups, all)
	} else {
		for _, r := range res.Policies {
			if r.Tag != "" {
				groups = append(groups, []*PolicyResult{r})
			}
		}
	}
	var out []Update
	for _, g := range groups {
		latest := map[string]*PolicyResult{}
		for _, r := range g {
			latest[r.Policy.Ref()] = r
		}
		var u Update
		moved := map[string]bool{}
		for _, p := range paths {
			if _, ok := base[p]; !ok {
				continue
			}
			content, changes, err := rewrite(base[p], parsed[p], latest)
			if err != nil {
				return nil, err
			}
			if len(changes) == 0 {
				continue
			}
			u.Files = append(u.Files, FileChange{Path: p, Old: base[p], New: content, Changes: changes})
			for _, c := range changes {
				moved[c.Policy.Ref()] = true
			}
		}
		if len(u.Files) == 0 {
			continue
		}
		for _, r := range g {
			if moved[r.Policy.Ref()] {
				u.Results = append(u.Results, r)
			}
		}
		sort.Slice(u.Results, func(i, j int) bool { return u.Results[i].Policy.ID() < u.Results[j].Policy.ID() })
		u.Key = "all"
		if !grouped {
			u.Key = u.Results[0].Policy.Ref()
		}
		out = append(out, u)
	}
	return out, nil
}

// Body is the pull request's description: what moves to which tag, and
// a table of the rewritten lines (file, image, old -> new, digest).
func (u *Update) Body() string {
	var b strings.Builder
	b.WriteString("ferry bump moves ")
	for i, r := range u.Results {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` to `%s` (%s)", r.Policy.Image, r.Tag, r.Policy.ID())
	}
	b.WriteString(".\n\n| file | image | old → new | digest |\n|---|---|---|---|\n")
	digests := map[string]string{}
	for _, r := range u.Results {
		digests[r.Policy.Ref()] = r.Digest
	}
	for _, c := range u.Changes() {
		fmt.Fprintf(&b, "| `%s:%d` | `%s` | `%s` → `%s` | `%s` |\n", c.File, c.Line, c.Policy.Image, c.Old, c.New, digests[c.Policy.Ref()])
	}
	return b.String()
}
