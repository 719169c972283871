package bump

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm"
)

// ChartMove is one chart version ferry bump moves: a line of a file of
// the repository, and the objects whose version it writes.
type ChartMove struct {
	// Chart names the chart (its name, or an OCIRepository's last URL
	// element) and Source its repository (a URL without credentials).
	Chart, Source string
	// Objects are the objects of the builds the line writes,
	// Kind/namespace/name, and Kind the kind of the first.
	Objects []string
	Kind    string
	Field   string
	// File (relative to the repository, slash-separated) and Line
	// (1-based) locate the version.
	File string
	Line int
	// Old and New are the versions; Range is the range New was picked
	// in, and By what set it (ferry.yaml's charts[N], the marker, or
	// the current major version).
	Old, New  string
	Range, By string

	src helm.ChartSource
}

// Where is the move's file:line.
func (m ChartMove) Where() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

// Key is the chart the move belongs to: the pull request it goes in.
func (m ChartMove) Key() string { return m.Source + " " + m.Chart }

// ChartProblem is one chart version ferry bump cannot move: the object
// and line, and why. The other charts still move.
type ChartProblem struct {
	Object string
	Where  string // file:line, "" when the line is not known
	Err    error
}

func (p ChartProblem) Error() string {
	if p.Where == "" {
		return p.Object + ": " + p.Err.Error()
	}
	return p.Where + ": " + p.Object + ": " + p.Err.Error()
}

// ChartScan is what a run found of the repository's chart versions.
type ChartScan struct {
	// Moves are the versions to move, by file and line.
	Moves []ChartMove
	// Current counts the pinned versions already the newest allowed.
	Current int
	// Floating say which version ranges now match a newer version than
	// the one they were written at ("HelmRelease/ns/name (file:line):
	// range ^1.0.0 matches 1.2.0"); they are left alone.
	Floating []string
	// Problems are the versions that cannot be moved.
	Problems []ChartProblem
	// Warnings are what the scan skipped of a listing (versions that are
	// no semantic version).
	Warnings []string
}

// ChartOptions say how charts are scanned.
type ChartOptions struct {
	// Rules are ferry.yaml's charts: entries.
	Rules []config.ChartRuleConfig
	// NewSources makes the helm.Sources each source's versions are
	// listed through.
	NewSources func() *helm.Sources
}

// located is a pin with the line that writes it.
type located struct {
	pin  config.ChartPin
	line pinLine
}

// ScanCharts finds the chart versions the targets of repo pin (their
// builds, as config.Repo.ChartPins reads them), the lines of root that
// write them, lists each source's versions once, and picks for each
// pinned version the newest its range allows.
func ScanCharts(ctx context.Context, repo *config.Repo, root string, o ChartOptions) (*ChartScan, error) {
	s := &ChartScan{}
	var pins []config.ChartPin
	for _, t := range repo.Targets {
		ps, err := repo.ChartPins(ctx, t)
		if err != nil {
			// A target that does not build (its variables only in the
			// cluster, say) has no pins to read: say so, and go on.
			s.Warnings = append(s.Warnings, fmt.Sprintf("target %s does not build, so its chart versions are not scanned: %v", t.Name, err))
			continue
		}
		pins = append(pins, ps...)
	}
	lines := &lineIndex{root: root, files: map[string][]docLines{}}
	byLine := map[string]*located{}
	objects := map[string][]string{} // by line, the objects it writes
	var order []string
	seen := map[string]bool{}
	for _, p := range pins {
		ls, err := lines.find(p)
		if err != nil {
			pr := ChartProblem{Object: p.ID(), Err: err}
			var le *lineError
			if errors.As(err, &le) {
				pr.Where, pr.Err = le.where, le.err
			}
			if !seen[pr.Error()] {
				seen[pr.Error()] = true
				s.Problems = append(s.Problems, pr)
			}
			continue
		}
		if len(ls) == 0 {
			id := p.ID() + " " + p.Field
			if !seen[id] {
				seen[id] = true
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %s %s is not written as it is in a file of the repository (a patch or a variable sets it); not moved", p.ID(), p.Field, p.Version))
			}
			continue
		}
		for _, l := range ls {
			k := l.where()
			if !slices.Contains(objects[k], p.ID()) {
				objects[k] = append(objects[k], p.ID())
			}
			if byLine[k] != nil {
				continue // the same line, built by another target
			}
			byLine[k] = &located{pin: p, line: l}
			order = append(order, k)
		}
	}
	listed := listVersions(ctx, o.NewSources, byLine)
	for _, k := range order {
		lp := byLine[k]
		move, floating, warns, err := pickVersion(lp, listed[sourceKey(lp.pin.Source)], o.Rules)
		s.Warnings = append(s.Warnings, warns...)
		switch {
		case err != nil:
			s.Problems = append(s.Problems, ChartProblem{Object: lp.pin.ID(), Where: k, Err: err})
		case floating != "":
			s.Floating = append(s.Floating, fmt.Sprintf("%s (%s): %s", lp.pin.ID(), k, floating))
		case move == nil:
			s.Current++
		default:
			move.Objects = objects[k]
			if err := lines.rewritable(*move); err != nil {
				s.Problems = append(s.Problems, ChartProblem{Object: lp.pin.ID(), Where: k, Err: err})
				continue
			}
			s.Moves = append(s.Moves, *move)
		}
	}
	sort.SliceStable(s.Moves, func(i, j int) bool {
		a, b := s.Moves[i], s.Moves[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return s, nil
}

// keySalt keys the digests of passwords in sourceKey: they are never
// comparable across runs.
var keySalt = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}()

// sourceKey tells the listings of sources apart: the same repository
// read with other credentials (another user, or another password) is
// listed again.
func sourceKey(src helm.ChartSource) string {
	creds := ""
	if c := src.Credentials; c != nil {
		mac := hmac.New(sha256.New, keySalt)
		mac.Write([]byte(c.Password))
		creds = c.Origin + " " + c.Username + " " + hex.EncodeToString(mac.Sum(nil))
	}
	return strings.Join([]string{string(src.Kind), src.URL, src.Chart, fmt.Sprint(src.Insecure), creds}, "\x00")
}

// listing is the versions of one source, or why they cannot be read.
type listing struct {
	versions []string
	err      error
}

// listVersions lists the versions of every source the lines need, at
// most eight at a time, each through a helm.Sources of its own (made by
// newSources): the listings of one repository with two sets of
// credentials share nothing.
func listVersions(ctx context.Context, newSources func() *helm.Sources, byLine map[string]*located) map[string]listing {
	want := map[string]helm.ChartSource{}
	for _, lp := range byLine {
		if lp.pin.Err == nil {
			want[sourceKey(lp.pin.Source)] = lp.pin.Source
		}
	}
	out := make(map[string]listing, len(want))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for k, src := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			vs, err := newSources().Versions(ctx, src)
			mu.Lock()
			out[k] = listing{vs, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// pickVersion is the move of one line: nil when its version is already
// the newest allowed, a note when the version is a range (it floats).
// warns are what it noticed of the listing, whatever the outcome.
func pickVersion(lp *located, l listing, rules []config.ChartRuleConfig) (move *ChartMove, floating string, warns []string, err error) {
	p := lp.pin
	if p.Err != nil {
		return nil, "", nil, p.Err
	}
	if l.err != nil {
		return nil, "", nil, l.err
	}
	chart := helm.ChartName(p.Source)
	var versions []*semver.Version
	var valid, bad []string
	for _, s := range l.versions {
		v, err := semver.NewVersion(s)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q", s))
			continue
		}
		versions, valid = append(versions, v), append(valid, s)
	}
	have := "it has no version"
	if len(valid) > 0 {
		have = "it has " + helm.SummarizeVersions(valid)
	}
	if len(bad) > 0 {
		warns = append(warns, fmt.Sprintf("%s (%s): the versions of chart %s at %s include %s, not semantic versions; skipped",
			p.ID(), lp.line.where(), chart, helm.RedactURL(p.Source.URL), strings.Join(bad, ", ")))
	}
	if p.Field == config.FieldRefSemver || helm.IsVersionRange(p.Version) {
		c, err := semver.NewConstraint(p.Version)
		if err != nil {
			return nil, "", warns, fmt.Errorf("%s %q is not a version range: %v", p.Field, p.Version, err)
		}
		best := newestAllowed(versions, c, nil, false)
		if best == nil {
			return nil, "", warns, fmt.Errorf("%s range %q matches none of the versions of chart %s (%s)", p.Field, p.Version, chart, have)
		}
		return nil, fmt.Sprintf("range %q floats; it matches %s now", p.Version, best.Original()), warns, nil
	}
	cur, err := semver.NewVersion(p.Version)
	if err != nil {
		return nil, "", warns, fmt.Errorf("%s %q is not a semantic version: ferry bump moves versions only", p.Field, p.Version)
	}
	rng, by, ignore, pre, err := rangeFor(lp, chart, cur, rules)
	if err != nil {
		return nil, "", warns, err
	}
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, "", warns, fmt.Errorf("%s: range %q: %v", by, rng, err)
	}
	best := newestAllowed(versions, c, ignore, pre || cur.Prerelease() != "")
	if best == nil {
		return nil, "", warns, fmt.Errorf("%s: range %q matches none of the versions of chart %s (%s)", by, rng, chart, have)
	}
	if !best.GreaterThan(cur) {
		return nil, "", warns, nil
	}
	return &ChartMove{
		Chart: chart, Source: helm.RedactURL(p.Source.URL), Kind: p.Kind, Field: p.Field,
		File: lp.line.file, Line: lp.line.line, Old: p.Version, New: best.Original(), Range: rng, By: by, src: p.Source,
	}, "", warns, nil
}

// rangeFor is the range a pinned version moves in: the first of
// ferry.yaml's rules matching the chart, else the line's marker, else
// the current major version; and what said so, the versions ignored and
// whether pre-releases are taken.
func rangeFor(lp *located, chart string, cur *semver.Version, rules []config.ChartRuleConfig) (rng, by string, ignore []*semver.Constraints, pre bool, err error) {
	for i, r := range rules {
		if !r.Matches(lp.pin.Source.URL, chart) {
			continue
		}
		by = fmt.Sprintf("ferry.yaml charts[%d]", i)
		for _, s := range r.Ignore {
			c, err := semver.NewConstraint(s)
			if err != nil {
				return "", "", nil, false, fmt.Errorf("%s: ignore %q: %v", by, s, err)
			}
			ignore = append(ignore, c)
		}
		rng, pre = r.Range, r.Prerelease
		break
	}
	if rng == "" && lp.line.marker != "" {
		rng, by = lp.line.marker, "the "+MarkerKey+" marker"
	}
	if rng == "" {
		next := cur.Major() + 1
		rng = fmt.Sprintf(">=%s <%d.0.0", cur.Original(), next)
		if by == "" {
			by = "the current major version"
		}
	}
	return rng, by, ignore, pre, nil
}

// newestAllowed is the newest of versions c allows that no ignore
// constraint matches; pre-releases are taken when pre is set (checked
// by their release version) or when c names one.
func newestAllowed(versions []*semver.Version, c *semver.Constraints, ignore []*semver.Constraints, pre bool) *semver.Version {
	var best *semver.Version
	for _, v := range versions {
		ok := c.Check(v)
		if !ok && pre && v.Prerelease() != "" {
			rel, err := v.SetPrerelease("")
			ok = err == nil && c.Check(&rel)
		}
		if !ok || slices.ContainsFunc(ignore, func(i *semver.Constraints) bool { return i.Check(v) }) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best = v
		}
	}
	return best
}
