package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/markdown"
)

// unsafeMarker is what a target name may not bring into an HTML comment.
var unsafeMarker = regexp.MustCompile(`[^A-Za-z0-9._/-]|--`)

// driftIssueMarker is the hidden line that tells a target's drift issue
// from every other issue.
func driftIssueMarker(target string) string {
	return "<!-- ferry:drift target=" + unsafeMarker.ReplaceAllString(target, "_") + " -->"
}

// issueForge is the forge of --report issue: named by --forge or found
// from the Actions environment (openForge: token in FERRY_TOKEN, else
// GITHUB_TOKEN or GITEA_TOKEN).
func (o *driftOptions) issueForge(e *env) (forge.Forge, error) {
	f, err := openForge(e, o.forge)
	if err != nil {
		return nil, fmt.Errorf("--report issue: %w", err)
	}
	return f, nil
}

// syncDriftIssues keeps one issue per target: opened or edited while the
// target drifts, closed with a comment once it does not (or --heal repaired
// it). A target that could not be checked keeps its issue as it is.
func syncDriftIssues(ctx context.Context, e *env, f forge.Forge, label string, reports []*drift.Report, revision string) error {
	run := actions.New(e.getenv, e.stdout).RunURL()
	var errs []error
	for _, r := range reports {
		if r.Error != "" {
			continue
		}
		healed := r.Heal != nil && r.HealError == ""
		open := r.Drifted() && !healed
		body := e.masker.Mask(drift.MarkdownTarget(r))
		if u, err := url.Parse(run); err == nil && (u.Scheme == "https" || u.Scheme == "http") && !strings.ContainsAny(run, " <>") {
			body += "\nLast checked by <" + run + ">.\n"
		}
		closing := fmt.Sprintf("No drift in %s any more at revision %s.", markdown.Code(r.Target), markdown.Code(kube.ShortRevision(revision)))
		if healed {
			closing = fmt.Sprintf("Healed by ferry drift --heal at revision %s.", markdown.Code(kube.ShortRevision(revision)))
		}
		sync := forge.IssueSync{Marker: driftIssueMarker(r.Target), Label: label}
		res, err := sync.Sync(ctx, f, drift.IssueTitle(r.Target), body, open, closing)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %q: drift issue: %w", r.Target, err))
			continue
		}
		r.Issue = &drift.Issue{Action: string(res.Action), Number: res.Number, URL: res.URL}
	}
	return errors.Join(errs...)
}
