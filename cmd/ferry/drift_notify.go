package main

import (
	"context"
	"fmt"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/notify"
)

// driftChange is a target whose drift state changed since the last
// notification: the events saying so, and the state to remember once
// they are delivered.
type driftChange struct {
	target *config.Target
	client *kube.Client
	state  string
	events []notify.Event
}

// notifyDrift sends DriftDetected and DriftResolved once per change of a
// target's drift state: the state last notified is kept on the target's
// inventory Secret (kube.AnnotationNotifiedDrift) and moves on only once
// every delivery of the change succeeded, so an undelivered change is
// sent again by the next run. Targets that could not be checked, were
// never applied, or whose state did not change send nothing.
func (o *driftOptions) notifyDrift(ctx context.Context, e *env, repo *config.Repo, targets []*config.Target, reports []*drift.Report) {
	if o.notify.off {
		return
	}
	byName := map[string]*config.Target{}
	for _, t := range targets {
		byName[t.Name] = t
	}
	var changes []driftChange
	events := map[string][]notify.Event{}
	for _, r := range reports {
		t := byName[r.Target]
		if t == nil || r.Failed() || r.Status == drift.NotApplied {
			continue
		}
		c, err := o.cluster.client(e, t)
		if err != nil {
			continue // reported by the check itself
		}
		prev, exists, err := c.NotifiedDrift(ctx, t.Name, o.compare.InventoryNamespace)
		if err != nil {
			e.notifyWarning(fmt.Sprintf("target %q: drift notifications: %v", t.Name, err))
			continue
		}
		if !exists {
			continue
		}
		if prev == "" {
			prev = drift.StateInSync // nothing notified yet: as if in sync
		}
		ch := driftChange{target: t, client: c, state: r.State()}
		healed := r.Heal != nil && r.HealError == ""
		if r.Drifted() && ch.state != prev {
			msg := "Drift detected: " + r.Summary()
			if healed {
				msg += "; healed by ferry drift --heal"
			}
			ch.events = append(ch.events, targetEvent(t, notify.SeverityError, "DriftDetected", r.Revision, msg))
		}
		if healed {
			ch.state = drift.StateInSync
		}
		if ch.state == drift.StateInSync && prev != drift.StateInSync {
			msg := "Drift resolved: the cluster matches Git again"
			if healed {
				msg = "Drift resolved: healed by ferry drift --heal"
			}
			ch.events = append(ch.events, targetEvent(t, notify.SeverityInfo, "DriftResolved", r.Revision, msg))
		}
		if ch.state == prev {
			continue
		}
		changes = append(changes, ch)
		events[t.Cluster] = append(events[t.Cluster], ch.events...)
	}
	if len(changes) == 0 {
		return
	}
	out := e.notify(ctx, o.notify, repo, events)
	if o.notify.dryRun {
		return
	}
	for _, ch := range changes {
		ref, _ := kustomizationRef(ch.target)
		if !out.alerts[ch.target.Cluster] || out.failed[notifyKey(ch.target.Cluster, ref)] {
			continue
		}
		if err := ch.client.SetNotifiedDrift(ctx, ch.target.Name, o.compare.InventoryNamespace, ch.state); err != nil {
			e.notifyWarning(fmt.Sprintf("target %q: remembering the drift notified: %v", ch.target.Name, err))
		}
	}
}
