package drift

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/markdown"
)

// IssueTitle is the title of a target's drift issue.
func IssueTitle(target string) string { return "Drift detected in " + target }

// unsafeMarker is what a target name may not bring into an HTML comment.
var unsafeMarker = regexp.MustCompile(`[^A-Za-z0-9._/-]|--`)

// IssueMarker is the hidden line that tells a target's drift issue from
// every other issue.
func IssueMarker(target string) string {
	return "<!-- ferry:drift target=" + unsafeMarker.ReplaceAllString(target, "_") + " -->"
}

// IssueText is what a checked target's drift issue says.
type IssueText struct {
	Marker, Title, Body string
	// Open: the target drifts (and was not healed), so its issue is open.
	Open bool
	// Closing is the comment that closes the issue once it is not open.
	Closing string
}

// IssueTextOf is the drift issue of r, a target that could be checked,
// at revision; runURL, when it is an http(s) link, is cited as the run
// that checked it.
func IssueTextOf(r *Report, revision, runURL string) IssueText {
	healed := r.Heal != nil && r.HealError == ""
	it := IssueText{Marker: IssueMarker(r.Target), Title: IssueTitle(r.Target), Body: MarkdownTarget(r), Open: r.Drifted() && !healed}
	if u, err := url.Parse(runURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && !strings.ContainsAny(runURL, " <>") {
		it.Body += "\nLast checked by <" + runURL + ">.\n"
	}
	rev := markdown.Code(kube.ShortRevision(revision))
	it.Closing = fmt.Sprintf("No drift in %s any more at revision %s.", markdown.Code(r.Target), rev)
	if healed {
		it.Closing = fmt.Sprintf("Healed by ferry drift --heal at revision %s.", rev)
	}
	return it
}

// SyncIssues keeps one issue per target on the forge, labelled label:
// opened or edited while the target drifts, closed with a comment once it
// does not (or was healed). A target that could not be checked keeps its
// issue as it is. Each body goes through mask before it is sent; each
// report records what was done to its issue.
func SyncIssues(ctx context.Context, f forge.Forge, label string, reports []*Report, revision, runURL string, mask func(string) string) error {
	var errs []error
	for _, r := range reports {
		if r.Error != "" {
			continue
		}
		it := IssueTextOf(r, revision, runURL)
		sync := forge.IssueSync{Marker: it.Marker, Label: label}
		res, err := sync.Sync(ctx, f, it.Title, mask(it.Body), it.Open, it.Closing)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %q: drift issue: %w", r.Target, err))
			continue
		}
		r.Issue = &Issue{Action: string(res.Action), Number: res.Number, URL: res.URL}
	}
	return errors.Join(errs...)
}
