package images

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is how many unchanged lines surround a change in a hunk.
const diffContext = 3

// UnifiedDiff renders the change of one file as a unified diff with a/
// and b/ prefixes, as git diff prints it (git apply takes it).
func (f FileChange) UnifiedDiff() string {
	return unifiedDiff(f.Path, string(f.Old), string(f.New))
}

// UnifiedDiff renders every file's change, in path order.
func (cs *ChangeSet) UnifiedDiff() string {
	var b strings.Builder
	for _, f := range cs.Files {
		b.WriteString(f.UnifiedDiff())
	}
	return b.String()
}

type diffLine struct {
	op   diffmatchpatch.Operation
	text string // with its line ending, if any
}

func unifiedDiff(path, old, new string) string {
	if old == new {
		return ""
	}
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToChars(old, new)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	var all []diffLine
	for _, d := range diffs {
		for _, l := range splitLines(d.Text) {
			all = append(all, diffLine{d.Type, l})
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", path, path)
	oldLine, newLine := 1, 1
	for i := 0; i < len(all); {
		// Find the next change.
		j := i
		for j < len(all) && all[j].op == diffmatchpatch.DiffEqual {
			j++
		}
		if j == len(all) {
			break
		}
		start := max(j-diffContext, i)
		// Skip the unchanged lines before the hunk.
		oldLine += start - i
		newLine += start - i
		// Extend the hunk while changes are within 2*context lines.
		end := j
		for end < len(all) {
			if all[end].op != diffmatchpatch.DiffEqual {
				end++
				continue
			}
			k := end
			for k < len(all) && all[k].op == diffmatchpatch.DiffEqual {
				k++
			}
			if k == len(all) || k-end > 2*diffContext {
				end = min(end+diffContext, k)
				break
			}
			end = k
		}
		var oldN, newN int
		for _, l := range all[start:end] {
			if l.op != diffmatchpatch.DiffInsert {
				oldN++
			}
			if l.op != diffmatchpatch.DiffDelete {
				newN++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(oldLine, oldN), hunkRange(newLine, newN))
		for _, l := range all[start:end] {
			switch l.op {
			case diffmatchpatch.DiffEqual:
				out.WriteByte(' ')
			case diffmatchpatch.DiffDelete:
				out.WriteByte('-')
			case diffmatchpatch.DiffInsert:
				out.WriteByte('+')
			}
			out.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		oldLine += oldN
		newLine += newN
		i = end
	}
	return out.String()
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

// splitLines splits text after each "\n", keeping the terminators.
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
