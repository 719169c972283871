package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// postDiffComment keeps the report in one comment (or numbered parts) on
// the pull request.
func postDiffComment(cmd *cobra.Command, e *env, o *diffOptions, blocks []string) error {
	if o.pr <= 0 {
		return fmt.Errorf("--comment: no pull request number (pass --pr, or run on a pull_request event)")
	}
	f, err := e.OpenForge(o.forge)
	if err != nil {
		return fmt.Errorf("--comment: %w", err)
	}
	res, err := e.Sticky(cmd.Context(), f, "diff", o.pr, o.maxComments, blocks)
	if err != nil {
		return fmt.Errorf("--comment on pull request #%d: %w (the full report is in the step summary and --report-file)", o.pr, err)
	}
	msg := fmt.Sprintf("ferry: pull request #%d: diff comment %s (%d part(s))", o.pr, res.Action(), res.Parts)
	if res.URL != "" {
		msg += ": " + res.URL
	}
	if res.Truncated {
		msg += "; truncated after --max-comments parts, the full report is in the step summary"
	}
	fmt.Fprintln(e.stderr, msg)
	return nil
}
