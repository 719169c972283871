package bump

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-ci/ferry/internal/event"
)

// Events are the events of every pull request of opened (Opened.Events).
func Events(opened []Opened) []event.Event {
	var out []event.Event
	for _, p := range opened {
		out = append(out, p.Events()...)
	}
	return out
}

// Events are the events of a pull request bump opened or updated: one per
// image policy and per object whose chart version it moves, "object old
// -> new, <URL>", PullRequestOpened or PullRequestUpdated (info), the
// ImagePolicy (or HelmRelease, HelmChart, OCIRepository) its involved
// object. A pull request left unchanged has none.
func (p Opened) Events() []event.Event {
	var reason string
	switch p.Action {
	case "created":
		reason = "PullRequestOpened"
	case "updated":
		reason = "PullRequestUpdated"
	default:
		return nil
	}
	type move struct{ old, new []string }
	moves := map[string]*move{}
	var order []string
	for _, c := range p.Changes {
		objs := c.Objects
		if len(objs) == 0 {
			objs = []string{c.Object}
		}
		for _, id := range objs {
			m := moves[id]
			if m == nil {
				m = &move{}
				moves[id] = m
				order = append(order, id)
			}
			if !slices.Contains(m.old, c.Old) {
				m.old = append(m.old, c.Old)
			}
			if !slices.Contains(m.new, c.New) {
				m.new = append(m.new, c.New)
			}
		}
	}
	var out []event.Event
	for _, id := range order {
		kind, rest, _ := strings.Cut(id, "/")
		ns, name, _ := strings.Cut(rest, "/")
		m := moves[id]
		out = append(out, event.Event{
			InvolvedObject:      event.ObjectReference{Kind: kind, APIVersion: apiVersions[kind], Namespace: ns, Name: name},
			Severity:            event.SeverityInfo,
			Reason:              reason,
			Message:             fmt.Sprintf("%s %s -> %s, %s", rest, strings.Join(m.old, ", "), strings.Join(m.new, ", "), p.URL),
			Metadata:            map[string]string{"pullRequest": p.URL},
			ReportingController: event.Controller,
		})
	}
	return out
}
