package drift

import (
	"io"

	"github.com/ferry-ci/ferry/internal/output"
)

// Reports are the reports of a drift run (output.Result).
type Reports []*Report

// Formats are text, json and markdown.
func (rs Reports) Formats() []output.Format { return output.All }

// Write writes the reports in f.
func (rs Reports) Write(w io.Writer, f output.Format) error {
	switch f {
	case output.JSON:
		return JSON(w, rs)
	case output.Markdown:
		return Markdown(w, rs)
	case output.Text:
		return Text(w, rs)
	}
	return output.Check(f, rs.Formats())
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
