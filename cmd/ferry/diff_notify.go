package main

import (
	"fmt"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/notify"
)

// Reasons of diff's events: a target whose head render differs from its
// base's, and one whose head does not render.
const (
	reasonDiffChanged = "DiffChanged"
	reasonBuildFailed = "BuildFailed"
)

// diffEvents are the events of diff --notify, by cluster: one per target
// that changes (DiffChanged, info: a github or gitea Provider sets a
// success status named for the target on the head commit) or that fails
// to render at head (BuildFailed, error: a failure status). A target the
// pull request removes has no Kustomization at head and gets none.
func diffEvents(head *config.Repo, r *diff.Report) map[string][]notify.Event {
	events := map[string][]notify.Event{}
	for _, rt := range r.Targets {
		name := rt.Name
		if rt.Cluster != "" {
			name = rt.Cluster + "/" + rt.Name
		}
		t, err := head.Target(name)
		if err != nil {
			continue // removed at head
		}
		var ev notify.Event
		switch {
		case rt.Error != "" && rt.Side != "base":
			ev = targetEvent(t, notify.SeverityError, reasonBuildFailed, r.Head, "Head does not render: "+rt.Error)
		case rt.Counts.Added+rt.Counts.Changed+rt.Counts.Removed > 0:
			ev = targetEvent(t, notify.SeverityInfo, reasonDiffChanged, r.Head, fmt.Sprintf("Revision %s changes %s: %d added, %d changed, %d removed",
				kube.ShortRevision(r.Head), t.Name, rt.Counts.Added, rt.Counts.Changed, rt.Counts.Removed))
		default:
			continue
		}
		events[t.Cluster] = append(events[t.Cluster], ev)
	}
	return events
}
