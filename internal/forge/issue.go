package forge

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// IssueSync keeps one issue open while a condition lasts (drift in a
// target) and closes it when it ends. The issue is found by its label and
// by Marker (a hidden `<!-- ... -->` line) in its body; only issues the
// token's user opened count, so an issue anyone else wrote is never
// edited or closed.
type IssueSync struct {
	Marker string
	Label  string
}

// IssueAction is what IssueSync.Sync did.
type IssueAction string

const (
	IssueNone      IssueAction = "none" // clean, and no issue was open
	IssueCreated   IssueAction = "created"
	IssueEdited    IssueAction = "edited"
	IssueUnchanged IssueAction = "unchanged"
	IssueClosed    IssueAction = "closed"
)

// IssueResult says what Sync did and to which issue.
type IssueResult struct {
	Action IssueAction
	Number int    // 0 with IssueNone
	URL    string // web page, when the forge gave one
}

// Sync brings the issue in line with the condition. open: create the issue
// (with Label; Marker is put first in body when body lacks it) or edit it
// when its title or body changed. Not open: if the issue exists, comment
// closingComment (unless empty) and close it; otherwise do nothing.
func (s IssueSync) Sync(ctx context.Context, f Forge, title, body string, open bool, closingComment string) (IssueResult, error) {
	if strings.TrimSpace(s.Marker) == "" {
		return IssueResult{}, errors.New("issue sync: empty marker")
	}
	fail := func(err error) error { return fmt.Errorf("keeping issue %q: %w", title, err) }
	if !strings.Contains(body, s.Marker) {
		body = s.Marker + "\n" + body
	}
	me, err := f.Me(ctx)
	if err != nil {
		return IssueResult{}, fail(err)
	}
	issues, err := f.Issues(ctx, s.Label, "open")
	if err != nil {
		return IssueResult{}, fail(err)
	}
	var mine []Issue
	for _, is := range issues {
		if strings.EqualFold(is.Author, me) && strings.Contains(is.Body, s.Marker) &&
			(s.Label == "" || hasLabel(is.Labels, s.Label)) {
			mine = append(mine, is)
		}
	}
	// The oldest one is the issue; any later one (two runs raced) is left
	// alone while open and closed with it.
	var cur *Issue
	for i := range mine {
		if cur == nil || mine[i].Number < cur.Number {
			cur = &mine[i]
		}
	}

	if open {
		if cur == nil {
			var labels []string
			if s.Label != "" {
				labels = []string{s.Label}
			}
			is, err := f.CreateIssue(ctx, NewIssue{Title: title, Body: body, Labels: labels})
			if err != nil {
				return IssueResult{}, fail(err)
			}
			return IssueResult{Action: IssueCreated, Number: is.Number, URL: is.URL}, nil
		}
		res := IssueResult{Action: IssueUnchanged, Number: cur.Number, URL: cur.URL}
		if cur.Title != title || !sameBody(cur.Body, body) {
			if err := f.EditIssue(ctx, cur.Number, title, body); err != nil {
				return res, fail(err)
			}
			res.Action = IssueEdited
		}
		return res, nil
	}

	if cur == nil {
		return IssueResult{Action: IssueNone}, nil
	}
	res := IssueResult{Action: IssueClosed, Number: cur.Number, URL: cur.URL}
	for _, is := range mine {
		if closingComment != "" {
			if _, err := f.CreateComment(ctx, is.Number, closingComment); err != nil {
				return res, fail(err)
			}
		}
		if err := f.CloseIssue(ctx, is.Number); err != nil {
			return res, fail(err)
		}
	}
	return res, nil
}

func hasLabel(labels []string, want string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, want) {
			return true
		}
	}
	return false
}
