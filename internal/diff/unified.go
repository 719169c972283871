package diff

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// context is how many unchanged lines surround a change in a hunk.
const contextLines = 3

type line struct {
	op   byte // ' ', '-', '+'
	text string
}

// Unified returns the unified diff of two texts (hunks only, no file
// headers), line by line; "" when they are equal.
func Unified(a, b string) string {
	if a == b {
		return ""
	}
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var all []line
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			all = append(all, line{op, l})
		}
	}
	return hunks(all)
}

// hunks groups lines into @@ hunks with context lines around changes.
func hunks(all []line) string {
	var out strings.Builder
	n := len(all)
	i := 0
	// aLine, bLine: 1-based line numbers of all[i] in each text.
	aLine, bLine := 1, 1
	for i < n {
		// find the next change
		j := i
		for j < n && all[j].op == ' ' {
			j++
		}
		if j == n {
			break
		}
		start := max(i, j-contextLines)
		// advance line counters to start
		for k := i; k < start; k++ {
			aLine++
			bLine++
		}
		// extend the hunk while changes are within 2*contextLines of each other
		end := j
		for end < n {
			if all[end].op != ' ' {
				end++
				continue
			}
			k := end
			for k < n && all[k].op == ' ' {
				k++
			}
			if k == n || k-end > 2*contextLines {
				end = min(end+contextLines, n)
				break
			}
			end = k
		}
		aCount, bCount := 0, 0
		var body strings.Builder
		for k := start; k < end; k++ {
			body.WriteByte(all[k].op)
			body.WriteString(all[k].text)
			body.WriteByte('\n')
			if all[k].op != '+' {
				aCount++
			}
			if all[k].op != '-' {
				bCount++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", rangeOf(aLine, aCount), rangeOf(bLine, bCount))
		out.WriteString(body.String())
		aLine += aCount
		bLine += bCount
		i = end
	}
	return out.String()
}

func rangeOf(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if count == 1 {
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
