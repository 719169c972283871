package forge

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
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
	p := packer{budget: s.budget()}
	for _, b := range blocks {
		p.add(b)
	}
	contents := p.done()
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

// packer fills parts of at most budget runes with blocks, a blank line apart.
type packer struct {
	budget int
	parts  []string
	cur    strings.Builder
	curLen int
}

const blockSep = "\n\n"

func (p *packer) flush() {
	if p.curLen > 0 {
		p.parts = append(p.parts, p.cur.String())
		p.cur.Reset()
		p.curLen = 0
	}
}

func (p *packer) put(text string, n int) {
	if p.curLen > 0 {
		p.cur.WriteString(blockSep)
		p.curLen += runes(blockSep)
	}
	p.cur.WriteString(text)
	p.curLen += n
}

func (p *packer) room() int {
	if p.curLen == 0 {
		return p.budget
	}
	return p.budget - p.curLen - runes(blockSep)
}

func (p *packer) add(block string) {
	block = strings.TrimRight(strings.ReplaceAll(block, "\r\n", "\n"), "\n")
	if strings.TrimSpace(block) == "" {
		return
	}
	n := runes(block)
	if n <= p.room() {
		p.put(block, n)
		return
	}
	if n <= p.budget {
		// Whole blocks read better: start a new part rather than cut.
		p.flush()
		p.put(block, n)
		return
	}
	// Too long for any part: cut it, filling what is left of this part
	// first unless that is only a sliver.
	first := p.room()
	if first < p.budget/8 {
		p.flush()
		first = p.budget
	}
	for i, piece := range cutBlock(block, first, p.budget) {
		if i > 0 || piece == "" {
			p.flush()
		}
		if piece != "" {
			p.put(piece, runes(piece))
		}
	}
}

func (p *packer) done() []string {
	p.flush()
	return p.parts
}

// mdState is what is open at a point of a markdown text: <details>
// sections (with the lines that opened them) and, innermost, a code fence.
type mdState struct {
	details []string // opening line(s) of each open <details>, outermost first
	fence   string   // opening line of the open fence, "" when none
	fenceCh byte
	fenceN  int
	summary bool // the last <details> still waits for its <summary> line
}

var (
	detailsOpenRE  = regexp.MustCompile(`(?i)<details(?:\s[^>]*)?>`)
	detailsCloseRE = regexp.MustCompile(`(?i)</details\s*>`)
)

// after returns the state after line.
func (st mdState) after(line string) mdState {
	st.details = append([]string(nil), st.details...)
	trimmed := strings.TrimLeft(line, " ")
	indent := len(line) - len(trimmed)
	if st.fence != "" {
		if indent <= 3 && fenceRun(trimmed, st.fenceCh) >= st.fenceN &&
			strings.TrimSpace(trimmed[fenceRun(trimmed, st.fenceCh):]) == "" {
			st.fence, st.fenceCh, st.fenceN = "", 0, 0
		}
		return st
	}
	if indent <= 3 && len(trimmed) >= 3 && (trimmed[0] == '`' || trimmed[0] == '~') {
		ch := trimmed[0]
		if n := fenceRun(trimmed, ch); n >= 3 && (ch == '~' || !strings.ContainsRune(trimmed[n:], '`')) {
			st.fence, st.fenceCh, st.fenceN = line, ch, n
			st.summary = false
			return st
		}
	}
	if st.summary && strings.Contains(strings.ToLower(line), "<summary") && len(st.details) > 0 {
		st.details[len(st.details)-1] += "\n" + line
		st.summary = false
		return st
	}
	if strings.TrimSpace(line) != "" {
		st.summary = false
	}
	opens := detailsOpenRE.FindAllStringIndex(line, -1)
	closes := detailsCloseRE.FindAllStringIndex(line, -1)
	// Walk the tags of the line in order.
	for len(opens) > 0 || len(closes) > 0 {
		if len(closes) == 0 || (len(opens) > 0 && opens[0][0] < closes[0][0]) {
			st.details = append(st.details, line)
			st.summary = !strings.Contains(strings.ToLower(line[opens[0][0]:]), "<summary")
			opens = opens[1:]
		} else {
			if len(st.details) > 0 {
				st.details = st.details[:len(st.details)-1]
			}
			st.summary = false
			closes = closes[1:]
		}
	}
	return st
}

func fenceRun(s string, ch byte) int {
	n := 0
	for n < len(s) && s[n] == ch {
		n++
	}
	return n
}

// closing is what closes everything open in st, innermost first.
func (st mdState) closing() []string {
	var out []string
	if st.fence != "" {
		out = append(out, strings.Repeat(string(st.fenceCh), st.fenceN))
	}
	for range st.details {
		out = append(out, "</details>")
	}
	return out
}

// reopening is what opens again, outermost first, what st had open.
func (st mdState) reopening() []string {
	var out []string
	for _, d := range st.details {
		out = append(out, d)
	}
	if len(st.details) > 0 {
		out = append(out, "")
	}
	if st.fence != "" {
		out = append(out, st.fence)
	}
	return out
}

func linesLen(lines []string) int {
	if len(lines) == 0 {
		return 0
	}
	n := len(lines) - 1
	for _, l := range lines {
		n += runes(l)
	}
	return n
}

// cutBlock cuts block into pieces, the first of at most first runes and the
// others of at most size, at line boundaries (inside a line only when the
// line alone is too long), each piece closing what it leaves open and the
// next reopening it. A piece is longer than its limit only when what it
// must reopen and close does not fit in it.
func cutBlock(block string, first, size int) []string {
	var (
		pieces  []string
		limit   = first
		st      mdState
		cur     []string
		curLen  int // runes of cur joined by newlines
		content int // lines of block in cur
	)
	push := func(line string) {
		if len(cur) > 0 {
			curLen++
		}
		cur = append(cur, line)
		curLen += runes(line)
	}
	emit := func(final bool) {
		if !final {
			for _, l := range st.closing() {
				push(l)
			}
		}
		pieces = append(pieces, strings.Join(cur, "\n"))
		limit = size
		cur, curLen, content = nil, 0, 0
		for _, l := range st.reopening() {
			push(l)
		}
	}
	// cost is what cur grows by when a line of n runes is added and the
	// piece then closed in state next.
	cost := func(n int, next mdState) int {
		if len(cur) > 0 {
			n++
		}
		if c := linesLen(next.closing()); c > 0 {
			n += c + 1
		}
		return n
	}
	for _, line := range strings.Split(block, "\n") {
		next := st.after(line)
		n := runes(line)
		if curLen+cost(n, next) > limit && content > 0 {
			emit(false)
		}
		if curLen+cost(n, next) > limit && len(pieces) == 0 && limit < size {
			// Nothing of the block goes in what is left of the current part.
			pieces = append(pieces, "")
			limit = size
		}
		// A line too long for a piece of its own is cut inside, between
		// characters and never inside an HTML entity.
		for curLen+cost(n, next) > limit {
			room := limit - curLen - cost(0, st)
			if room <= 0 || room >= n {
				break // cutting the line cannot help: the piece overflows
			}
			head, tail := cutLine(line, room)
			push(head)
			content++
			emit(false)
			line = tail
			n -= runes(head)
		}
		push(line)
		content++
		st = next
	}
	if content > 0 || len(pieces) == 0 {
		emit(true)
	}
	return pieces
}

// cutLine splits line after at most n runes, moving the cut before an
// HTML entity (&lt;, &#34;) it would split.
func cutLine(line string, n int) (string, string) {
	i, count := 0, 0
	for i < len(line) && count < n {
		_, w := utf8.DecodeRuneInString(line[i:])
		i += w
		count++
	}
	if amp := strings.LastIndexByte(line[:i], '&'); amp >= 0 && amp > i-12 && !strings.ContainsRune(line[amp:i], ';') {
		if semi := strings.IndexByte(line[amp:], ';'); semi > 0 && semi < 12 && amp > 0 {
			i = amp
		}
	}
	return line[:i], line[i:]
}
