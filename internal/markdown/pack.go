package markdown

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Pack lays blocks (self-contained markdown) out in order, a blank line
// apart, as parts of at most budget characters each, for a text that must
// be split over several comments. A block that does not fit in what is left
// of a part starts the next one; a block longer than a whole part is cut at
// line boundaries (a line longer than a part between characters, never
// inside an HTML entity), and the code fence and <details> sections open at
// the cut are closed there and reopened in the next part, so that each part
// renders on its own. Blank blocks are dropped; no blocks, no parts.
func Pack(blocks []string, budget int) []string {
	p := packer{budget: budget}
	for _, b := range blocks {
		p.add(b)
	}
	return p.done()
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
