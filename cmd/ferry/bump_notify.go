package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-ci/ferry/internal/bump"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/notify"
)

// notifyPRs sends PullRequestOpened or PullRequestUpdated (info) per
// image policy of each pull request bump opened or updated, its involved
// object the ImagePolicy, through the Alerts of every cluster of the
// repository together (config.AllClusters): a pull request belongs to
// no one cluster. A pull request left unchanged sends nothing.
func (o *bumpOptions) notifyPRs(ctx context.Context, e *env, opened []bump.Opened) {
	if o.notify.off {
		return
	}
	var events []notify.Event
	for _, p := range opened {
		reason := ""
		switch p.Action {
		case "created":
			reason = "PullRequestOpened"
		case "updated":
			reason = "PullRequestUpdated"
		default:
			continue
		}
		events = append(events, prEvents(p, reason)...)
	}
	if len(events) == 0 {
		return
	}
	repo, err := e.loadRepo(ctx, repoFlags{dir: o.repo, helmReleases: &choiceValue{}}, false)
	if err != nil {
		e.notifyWarning(fmt.Sprintf("notifications: reading the repository's Flux notification objects: %v", err))
		return
	}
	defer repo.Close()
	e.notify(ctx, o.notify, repo, map[string][]notify.Event{config.AllClusters: events})
}

// prEvents are the events of one pull request: one per image policy it
// moves, "policy old -> new, <URL>".
func prEvents(p bump.Opened, reason string) []notify.Event {
	type move struct{ old, new []string }
	moves := map[string]*move{}
	var order []string
	refs := map[string]notify.ObjectReference{}
	for _, c := range p.Changes {
		if c.Policy == nil {
			continue
		}
		id := c.Policy.Namespace + "/" + c.Policy.Name
		m := moves[id]
		if m == nil {
			m = &move{}
			moves[id] = m
			order = append(order, id)
			refs[id] = notify.ObjectReference{Kind: "ImagePolicy", APIVersion: config.ImageGroup + "/v1", Namespace: c.Policy.Namespace, Name: c.Policy.Name}
		}
		if !slices.Contains(m.old, c.Old) {
			m.old = append(m.old, c.Old)
		}
		if !slices.Contains(m.new, c.New) {
			m.new = append(m.new, c.New)
		}
	}
	var out []notify.Event
	for _, id := range order {
		m := moves[id]
		out = append(out, notify.Event{
			InvolvedObject:      refs[id],
			Severity:            notify.SeverityInfo,
			Reason:              reason,
			Message:             fmt.Sprintf("%s %s -> %s, %s", id, strings.Join(m.old, ", "), strings.Join(m.new, ", "), p.URL),
			Metadata:            map[string]string{"pullRequest": p.URL},
			ReportingController: notify.Controller,
		})
	}
	return out
}
