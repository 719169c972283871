package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// fillFromEvent takes base, head and the pull request number from the
// Actions event payload when they were not given: a pull_request event's
// base and head SHAs, or a push event's before and after.
func fillFromEvent(e *env, base, head *string, pr *int) error {
	p := e.getenv("GITHUB_EVENT_PATH")
	if p == "" || e.getenv("GITHUB_ACTIONS") != "true" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("GITHUB_EVENT_PATH: %w", err)
	}
	var ev struct {
		Number      int    `json:"number"`
		Before      string `json:"before"`
		After       string `json:"after"`
		PullRequest *struct {
			Number int `json:"number"`
			Base   struct {
				SHA string `json:"sha"`
			} `json:"base"`
			Head struct {
				SHA string `json:"sha"`
			} `json:"head"`
		} `json:"pull_request"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return fmt.Errorf("GITHUB_EVENT_PATH %s: %w", p, err)
	}
	fill := func(dst *string, v string) {
		if *dst == "" && v != "" && v != "0000000000000000000000000000000000000000" {
			*dst = v
		}
	}
	if ev.PullRequest != nil {
		fill(base, ev.PullRequest.Base.SHA)
		fill(head, ev.PullRequest.Head.SHA)
		if pr != nil && *pr == 0 {
			*pr = ev.PullRequest.Number
		}
		return nil
	}
	fill(base, ev.Before)
	fill(head, ev.After)
	return nil
}

// reportDiffToActions writes the report to the step summary and the
// step outputs when running inside Actions.
func reportDiffToActions(e *env, r interface{ Changed() bool }, markdown, reportFile string) error {
	if err := appendFile(e.getenv("GITHUB_STEP_SUMMARY"), truncateSummary(markdown)+"\n"); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	out := e.getenv("GITHUB_OUTPUT")
	if err := appendFile(out, "changed="+strconv.FormatBool(r.Changed())+"\n"); err != nil {
		return fmt.Errorf("step outputs: %w", err)
	}
	if reportFile != "" {
		return appendFile(out, "report-path="+reportFile+"\n")
	}
	return nil
}

func reportPlanToActions(e *env, matrix []byte) error {
	return appendFile(e.getenv("GITHUB_OUTPUT"), "matrix="+string(matrix)+"\n")
}

// maxSummary is the step summary's size limit.
const maxSummary = 1 << 20

func truncateSummary(s string) string {
	if len(s) <= maxSummary {
		return s
	}
	note := "\n\n… truncated at the step summary's 1 MiB limit; the full report is in the report file.\n"
	return s[:maxSummary-len(note)] + note
}

func appendFile(path, s string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
