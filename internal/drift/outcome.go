package drift

import (
	"fmt"
	"io"
)

// Write writes the reports in format: text, json or markdown.
func Write(w io.Writer, reports []*Report, format string) error {
	switch format {
	case "json":
		return JSON(w, reports)
	case "markdown":
		return Markdown(w, reports)
	case "text":
		return Text(w, reports)
	}
	return fmt.Errorf("unknown format %q", format)
}

// Outcome names the targets that could not be checked or healed, and
// those that drift.
func Outcome(reports []*Report) (failed, drifted []string) {
	for _, r := range reports {
		if r.Failed() {
			failed = append(failed, r.Target)
		}
		if r.Drifted() {
			drifted = append(drifted, r.Target)
		}
	}
	return failed, drifted
}
