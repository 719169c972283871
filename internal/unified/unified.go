// Package unified renders the line diff of two texts as a unified diff,
// as diff -u and git diff print it.
package unified

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// contextLines is how many unchanged lines surround a change in a hunk.
const contextLines = 3

// noNewline follows a line without a line ending where git marks it.
const noNewline = "\n\\ No newline at end of file\n"

// Hunks returns the @@ hunks of the line diff from a to b, without file
// headers; "" when they are equal. Every line is ended with "\n": a
// missing line ending at the end of a text is not shown.
func Hunks(a, b string) string {
	if a == b {
		return ""
	}
	return hunks(lines(a, b), "\n")
}

// File returns the change of the file at path from old to new as git diff
// prints it (git apply takes it): "--- a/" and "+++ b/" headers, then the
// hunks, a line without a line ending followed by "\ No newline at end of
// file". "" when they are equal.
func File(path, old, new string) string {
	if old == new {
		return ""
	}
	return fmt.Sprintf("--- a/%s\n+++ b/%s\n", path, path) + hunks(lines(old, new), noNewline)
}

// line is one line of a line diff.
type line struct {
	op   byte   // ' ' (equal), '-' (only in a), '+' (only in b)
	text string // with its line ending, if any
}

// lines diffs a and b line by line.
func lines(a, b string) []line {
	dmp := diffmatchpatch.New()
	ca, cb, table := dmp.DiffLinesToChars(a, b)
	var all []line
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), table) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range splitLines(d.Text) {
			all = append(all, line{op, l})
		}
	}
	return all
}

// hunks groups lines into @@ hunks, each change with contextLines
// unchanged lines around it, and changes closer than twice that in one
// hunk. A line without a line ending is followed by unended.
func hunks(all []line, unended string) string {
	var out strings.Builder
	aLine, bLine := 1, 1 // the line numbers of all[i] in a and b
	for i := 0; i < len(all); {
		start, end, ok := nextHunk(all, i)
		if !ok {
			break
		}
		aLine += start - i
		bLine += start - i
		aCount, bCount := 0, 0
		for _, l := range all[start:end] {
			if l.op != '+' {
				aCount++
			}
			if l.op != '-' {
				bCount++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aLine, aCount), hunkRange(bLine, bCount))
		for _, l := range all[start:end] {
			out.WriteByte(l.op)
			out.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				out.WriteString(unended)
			}
		}
		aLine += aCount
		bLine += bCount
		i = end
	}
	return out.String()
}

// nextHunk finds the lines all[start:end] of the first hunk at or after
// all[from]; false when no line from there on changed.
func nextHunk(all []line, from int) (start, end int, ok bool) {
	j := from
	for j < len(all) && all[j].op == ' ' {
		j++
	}
	if j == len(all) {
		return 0, 0, false
	}
	start = max(from, j-contextLines)
	// Extend the hunk while changes are within 2*contextLines lines.
	end = j
	for end < len(all) {
		if all[end].op != ' ' {
			end++
			continue
		}
		k := end
		for k < len(all) && all[k].op == ' ' {
			k++
		}
		if k == len(all) || k-end > 2*contextLines {
			return start, min(end+contextLines, k), true
		}
		end = k
	}
	return start, end, true
}

// hunkRange formats a hunk's start,count; an empty range starts at the
// line before it, as diff does.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// splitLines splits text after each "\n", keeping the line endings.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
