package diff

import (
	"fmt"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/risk"
)

// Reasons of a diff's events: a target whose head render differs from its
// base's, and one whose head does not render.
const (
	ReasonDiffChanged = "DiffChanged"
	ReasonBuildFailed = "BuildFailed"
)

// Events are the events of a diff, by cluster: one per target that
// changes (DiffChanged, info: a github or gitea Provider sets a success
// status named for the target on the head commit) or that fails to render
// at head (BuildFailed, error: a failure status). A target the pull
// request removes has no Kustomization at head and gets none.
func (r *Report) Events(head *config.Repo) map[string][]event.Event {
	events := map[string][]event.Event{}
	for _, rt := range r.Targets {
		name := rt.Name
		if rt.Cluster != "" {
			name = rt.Cluster + "/" + rt.Name
		}
		t, err := head.Target(name)
		if err != nil {
			continue // removed at head
		}
		var ev event.Event
		switch src := t.EventSource(); {
		case rt.Error != "" && rt.Side != "base":
			ev = src.Event(event.SeverityError, ReasonBuildFailed, r.Head, "Head does not render: "+rt.Error)
		case rt.Counts.Added+rt.Counts.Changed+rt.Counts.Removed > 0:
			ev = src.Event(event.SeverityInfo, ReasonDiffChanged, r.Head, r.changeMessage(rt, t.Name))
		default:
			continue
		}
		events[t.Cluster] = append(events[t.Cluster], ev)
	}
	return events
}

// changeMessage is a DiffChanged event's message: the counts, and the
// target's risks when it has any.
func (r *Report) changeMessage(rt Target, name string) string {
	msg := fmt.Sprintf("Revision %s changes %s: %d added, %d changed, %d removed",
		kube.ShortRevision(r.Head), name, rt.Counts.Added, rt.Counts.Changed, rt.Counts.Removed)
	var risks []risk.Risk
	for _, rk := range r.Risks {
		if rk.Target == rt.Name {
			risks = append(risks, rk)
		}
	}
	if len(risks) > 0 {
		msg += "; " + RiskSummary(risks)
	}
	return msg
}
