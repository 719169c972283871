package kube

import (
	"fmt"

	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/manifest"
)

// Action is what happened (or, in a dry run, would happen) to one object.
type Action string

// Actions of a ChangeSet.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Pruned     Action = "pruned"
	// Skipped: no longer rendered, but protected from pruning by an
	// annotation; or rendered, but left out by ApplyOptions.LeaveOut. The
	// change's Reason says which.
	Skipped Action = "skipped"
	// Orphaned: no longer rendered and left in place because pruning is off.
	Orphaned Action = "orphaned"
	// Replaced: a Helm hook deleted and created anew by its
	// hook-delete-policy before-hook-creation (Reason says so).
	Replaced Action = "replaced"
	// Deleted: a Helm hook deleted after it ran, by its hook-delete-policy
	// hook-succeeded or hook-failed (Reason says which). The same hook
	// also has the Change of its apply (created, configured or replaced).
	Deleted Action = "deleted"
)

// Change is one object's action.
type Change struct {
	Object manifest.ID `json:"object"`
	Action Action      `json:"action"`
	Reason string      `json:"reason,omitempty"`
}

// ChangeSet is the result of applying one target.
type ChangeSet struct {
	Target           string   `json:"target"`
	Revision         string   `json:"revision,omitempty"`
	PreviousRevision string   `json:"previousRevision,omitempty"`
	DryRun           bool     `json:"dryRun,omitempty"`
	Changes          []Change `json:"changes"`
	// NotReady lists objects that were not healthy when the wait ended.
	NotReady []Health `json:"notReady,omitempty"`
	// Error is why the target's apply failed (Changes hold what it did
	// before), "" when it succeeded.
	Error string `json:"error,omitempty"`
	// NotAttempted is why the target was not applied at all: a target it
	// depends on failed or was not attempted itself.
	NotAttempted string `json:"notAttempted,omitempty"`
}

// Count returns how many changes have the given action.
func (cs *ChangeSet) Count(a Action) int {
	n := 0
	for _, c := range cs.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Health is the kstatus verdict on one object.
type Health struct {
	Object  manifest.ID `json:"object"`
	Status  string      `json:"status"`
	Message string      `json:"message,omitempty"`
}

// Event is the event of a target's apply about src (the target's Flux
// Kustomization): ReconciliationSucceeded (info) with the counts of its
// changes, ReconciliationFailed (error) with its error, or
// DependencyNotReady (error) saying which dependency stopped it.
func (cs *ChangeSet) Event(src event.Source) event.Event {
	switch {
	case cs.NotAttempted != "":
		return src.Event(event.SeverityError, "DependencyNotReady", cs.Revision, "Not applied: "+cs.NotAttempted)
	case cs.Error != "":
		return src.Event(event.SeverityError, "ReconciliationFailed", cs.Revision, cs.Error)
	}
	msg := "Applied"
	if cs.Revision != "" {
		msg += " revision " + ShortRevision(cs.Revision)
	}
	return src.Event(event.SeverityInfo, "ReconciliationSucceeded", cs.Revision, fmt.Sprintf("%s: %d created, %d configured, %d unchanged, %d pruned", msg,
		cs.Count(Created), cs.Count(Configured)+cs.Count(Replaced), cs.Count(Unchanged), cs.Count(Pruned)))
}
