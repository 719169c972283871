package forge

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ferry-ci/ferry/internal/markdown"
)

// DefaultLimit is the longest comment GitHub accepts, in characters.
const DefaultLimit = 65536

// DefaultMaxParts is how many comments one sticky report may span.
const DefaultMaxParts = 10

// minLimit is the smallest Limit Sync accepts: below it the markers and
// footers leave no room for the report.
const minLimit = 1024

// Sticky keeps one report on a pull request (or issue) as one comment, or a
// few numbered ones when the report is longer than a comment may be, edited
// in place on every run. Each part starts with a hidden marker line,
// `<!-- ferry:<Key> part <i> -->`; only comments carrying it AND written by
// the token's user are ever edited or deleted.
type Sticky struct {
	// Key tells this report from ferry's other sticky comments ("diff").
	Key string
	// Limit is the longest comment, in characters (runes); DefaultLimit when 0.
	Limit int
	// MaxParts is how many comments the report may span; DefaultMaxParts
	// when 0. A longer report is cut and says so in its last part.
	MaxParts int
}

// SyncResult says what Sync did, comment by comment.
type SyncResult struct {
	Created   []int64
	Edited    []int64
	Deleted   []int64
	Unchanged []int64
	// ID and URL are those of part 1 (zero when the report is empty).
	ID  int64
	URL string
	// Parts is how many comments the report now spans.
	Parts int
	// Truncated is true when the report needed more than MaxParts comments.
	Truncated bool
}

// Writes counts the write calls Sync made.
func (r SyncResult) Writes() int { return len(r.Created) + len(r.Edited) + len(r.Deleted) }

// Action says what the sync did to the comment: created, updated or
// unchanged.
func (r SyncResult) Action() string {
	switch {
	case len(r.Created) > 0 && len(r.Edited) == 0:
		return "created"
	case r.Writes() > 0:
		return "updated"
	}
	return "unchanged"
}

func (s Sticky) withDefaults() Sticky {
	if s.Limit <= 0 {
		s.Limit = DefaultLimit
	}
	if s.MaxParts <= 0 {
		s.MaxParts = DefaultMaxParts
	}
	return s
}

func (s Sticky) check() error {
	switch {
	case s.Key == "":
		return errors.New("sticky comment: empty key")
	case strings.ContainsAny(s.Key, " \t\r\n<>") || strings.Contains(s.Key, "--"):
		return fmt.Errorf("sticky comment: key %q may not hold spaces, angle brackets or --", s.Key)
	case s.Limit < minLimit:
		return fmt.Errorf("sticky comment %q: limit %d is below %d characters", s.Key, s.Limit, minLimit)
	}
	return nil
}

func (s Sticky) marker(i int) string { return fmt.Sprintf("<!-- ferry:%s part %d -->", s.Key, i) }

func (s Sticky) markerRE() *regexp.Regexp {
	return regexp.MustCompile(`^<!-- ferry:` + regexp.QuoteMeta(s.Key) + ` part ([0-9]+) -->[ \t]*(?:\r?\n|$)`)
}

// part reports which part of this report body is, 0 when none.
func (s Sticky) part(re *regexp.Regexp, body string) int {
	m := re.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	i, err := strconv.Atoi(m[1])
	if err != nil || i < 1 {
		return 0
	}
	return i
}

func header(i, n int) string { return fmt.Sprintf("<sub>(continued, part %d/%d)</sub>", i, n) }

func footer(next, n int) string {
	return fmt.Sprintf("<sub>continued in next comment (part %d/%d)</sub>", next, n)
}

func truncationNote(maxParts int) string {
	return fmt.Sprintf("**Report truncated**: it needs more than %d comments. The full report is in the step summary and the workflow's report artifact.", maxParts)
}

// budget is the room left for the report in one part once the marker, a
// header, and a footer or the truncation note are accounted for.
func (s Sticky) budget() int {
	over := runes(s.marker(s.MaxParts)) + 1 +
		runes(header(s.MaxParts, s.MaxParts)) + 2 +
		max(runes(footer(s.MaxParts, s.MaxParts)), runes(truncationNote(s.MaxParts))) + 2
	return max(s.Limit-over, 64)
}

// Split lays blocks (self-contained markdown: summary and warnings first)
// out as the comment bodies Sync keeps: blocks are packed in order, a blank
// line apart, into parts of at most Limit characters each, marker and
// footer included. A block too long for one part is cut at line boundaries;
// the open code fence and <details> sections are closed at the cut and
// reopened in the next part, so each part renders on its own. No blocks, no
// parts.
func (s Sticky) Split(blocks []string) []string {
	parts, _ := s.withDefaults().split(blocks)
	return parts
}

func (s Sticky) split(blocks []string) (parts []string, truncated bool) {
	contents := markdown.Pack(blocks, s.budget())
	n := len(contents)
	if n > s.MaxParts {
		contents, n, truncated = contents[:s.MaxParts], s.MaxParts, true
	}
	for i, c := range contents {
		var b strings.Builder
		b.WriteString(s.marker(i + 1))
		b.WriteString("\n")
		if i > 0 {
			b.WriteString(header(i+1, n))
			b.WriteString("\n\n")
		}
		b.WriteString(c)
		switch {
		case i < n-1:
			b.WriteString("\n\n")
			b.WriteString(footer(i+2, n))
		case truncated:
			b.WriteString("\n\n")
			b.WriteString(truncationNote(s.MaxParts))
		}
		parts = append(parts, b.String())
	}
	return parts, truncated
}

// Sync makes the comments on issue or pull request number carrying this
// report's markers and written by f.Me() equal to Split(blocks): parts in
// place are edited only when their text changed, missing ones are created,
// surplus ones (the report shrank) deleted. Comments by anyone else are
// never touched, whatever they carry. A run that changes nothing writes
// nothing. No blocks deletes the report.
func (s Sticky) Sync(ctx context.Context, f Forge, number int, blocks []string) (SyncResult, error) {
	s = s.withDefaults()
	if err := s.check(); err != nil {
		return SyncResult{}, err
	}
	fail := func(err error) error { return fmt.Errorf("updating the %s comment on #%d: %w", s.Key, number, err) }
	parts, truncated := s.split(blocks)
	res := SyncResult{Parts: len(parts), Truncated: truncated}

	me, err := f.Me(ctx)
	if err != nil {
		return res, fail(err)
	}
	comments, err := f.Comments(ctx, number)
	if err != nil {
		return res, fail(err)
	}

	// Ferry's own parts, in the order the forge lists them (oldest first).
	type found struct {
		c   Comment
		pos int
	}
	re := s.markerRE()
	have := map[int]found{}
	var surplus []Comment
	for pos, c := range comments {
		if !strings.EqualFold(c.Author, me) {
			continue
		}
		i := s.part(re, c.Body)
		if i == 0 {
			continue
		}
		if _, dup := have[i]; dup {
			surplus = append(surplus, c)
			continue
		}
		have[i] = found{c, pos}
	}
	// Reuse the parts that are in place and in order; anything else of ours
	// is rebuilt, so the parts always read top to bottom.
	keep, last := 0, -1
	for keep < len(parts) {
		h, ok := have[keep+1]
		if !ok || h.pos < last {
			break
		}
		last = h.pos
		keep++
	}
	for i, h := range have {
		if i > keep {
			surplus = append(surplus, h.c)
		}
	}

	for i, body := range parts {
		var c Comment
		if i < keep {
			c = have[i+1].c
			if sameBody(c.Body, body) {
				res.Unchanged = append(res.Unchanged, c.ID)
			} else {
				if err := f.EditComment(ctx, c.ID, body); err != nil {
					return res, fail(err)
				}
				res.Edited = append(res.Edited, c.ID)
			}
		} else {
			c, err = f.CreateComment(ctx, number, body)
			if err != nil {
				return res, fail(err)
			}
			res.Created = append(res.Created, c.ID)
		}
		if i == 0 {
			res.ID, res.URL = c.ID, c.URL
		}
	}
	// Delete after writing, oldest first: a failure leaves the report whole.
	sortComments(surplus, comments)
	for _, c := range surplus {
		if err := f.DeleteComment(ctx, c.ID); err != nil {
			return res, fail(err)
		}
		res.Deleted = append(res.Deleted, c.ID)
	}
	return res, nil
}

// sortComments orders cs as they appear in all.
func sortComments(cs, all []Comment) {
	pos := map[int64]int{}
	for i, c := range all {
		pos[c.ID] = i
	}
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && pos[cs[j].ID] < pos[cs[j-1].ID]; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// sameBody compares bodies as a forge may store them: line endings
// normalized, surrounding white space dropped.
func sameBody(a, b string) bool { return normalizeBody(a) == normalizeBody(b) }

func normalizeBody(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}

func runes(s string) int { return utf8.RuneCountInString(s) }
