package actionstest

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

// Outputs reads a step's GITHUB_OUTPUT file as the runner does:
// name=value lines and name<<DELIMITER heredocs. A heredoc that never
// closes, or a line of neither form, fails the test.
func Outputs(tb testing.TB, path string) map[string]string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if name, delim, ok := strings.Cut(line, "<<"); ok {
			var vals []string
			closed := false
			for sc.Scan() {
				if sc.Text() == delim {
					closed = true
					break
				}
				vals = append(vals, sc.Text())
			}
			if !closed {
				tb.Fatalf("output %q: delimiter %q never closes", name, delim)
			}
			out[name] = strings.Join(vals, "\n")
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok {
			tb.Fatalf("invalid output line %q", line)
		}
		out[name] = val
	}
	return out
}
