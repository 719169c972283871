package bump

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
)

// Events are the events of a pull request bump opened or updated: one per
// image policy it moves, "policy old -> new, <URL>", PullRequestOpened or
// PullRequestUpdated (info), the ImagePolicy its involved object. A pull
// request left unchanged has none.
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
	refs := map[string]event.ObjectReference{}
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
			refs[id] = event.ObjectReference{Kind: "ImagePolicy", APIVersion: config.ImageGroup + "/v1", Namespace: c.Policy.Namespace, Name: c.Policy.Name}
		}
		if !slices.Contains(m.old, c.Old) {
			m.old = append(m.old, c.Old)
		}
		if !slices.Contains(m.new, c.New) {
			m.new = append(m.new, c.New)
		}
	}
	var out []event.Event
	for _, id := range order {
		m := moves[id]
		out = append(out, event.Event{
			InvolvedObject:      refs[id],
			Severity:            event.SeverityInfo,
			Reason:              reason,
			Message:             fmt.Sprintf("%s %s -> %s, %s", id, strings.Join(m.old, ", "), strings.Join(m.new, ", "), p.URL),
			Metadata:            map[string]string{"pullRequest": p.URL},
			ReportingController: event.Controller,
		})
	}
	return out
}
