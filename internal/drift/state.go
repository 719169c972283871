package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/kube"
)

// StateInSync is the State of a target that does not drift.
const StateInSync = "in-sync"

// Summary is the drift classes of the report and their counts, as the
// reports word them: "2 modified, 1 missing" ("none" without drift).
func (r *Report) Summary() string { return driftCounts(r) }

// State names the report's drift for remembering what was last
// notified: StateInSync, or "drift:" and a short hash of which objects
// drift and how, so the same drift on the next run has the same state
// and another drift a new one. Fields' values are left out: a value that
// keeps changing is still the same drift.
func (r *Report) State() string {
	if !r.Drifted() {
		return StateInSync
	}
	var lines []string
	for _, o := range r.Objects {
		if o.Class.Drift() {
			lines = append(lines, string(o.Class)+" "+o.Object.String())
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "drift:" + hex.EncodeToString(sum[:8])
}

// Notice is a target whose drift state changed since the last
// notification: the events saying so, and the state to remember once
// they are delivered.
type Notice struct {
	Target  string
	Cluster string
	Source  event.Source
	State   string
	Events  []event.Event
	client  *kube.Client
}

// Notices are DriftDetected and DriftResolved, once per change of a
// target's drift state: the state last notified is kept on the target's
// inventory Secret (kube.AnnotationNotifiedDrift, in inventoryNS).
// Targets that could not be checked, were never applied, or whose state
// did not change have none. A state that cannot be read is a warning.
func Notices(ctx context.Context, targets []Target, reports []*Report, connect func(target string) (*kube.Client, error), inventoryNS string) (notices []Notice, warnings []string) {
	byName := map[string]*Target{}
	for i := range targets {
		byName[targets[i].Name] = &targets[i]
	}
	for _, r := range reports {
		t := byName[r.Target]
		if t == nil || r.Failed() || r.Status == NotApplied {
			continue
		}
		c, err := connect(t.Name)
		if err != nil {
			continue // reported by the check itself
		}
		prev, exists, err := c.NotifiedDrift(ctx, t.Name, inventoryNS)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("target %q: drift notifications: %v", t.Name, err))
			continue
		}
		if !exists {
			continue
		}
		if prev == "" {
			prev = StateInSync // nothing notified yet: as if in sync
		}
		if n := notice(t, r, prev); n.State != prev {
			n.client = c
			notices = append(notices, n)
		}
	}
	return notices, warnings
}

// notice is the events of target t's report r, its state last notified
// prev, and the state they move it to.
func notice(t *Target, r *Report, prev string) Notice {
	n := Notice{Target: t.Name, Cluster: t.Cluster, Source: t.Source, State: r.State()}
	healed := r.Heal != nil && r.HealError == ""
	if r.Drifted() && n.State != prev {
		msg := "Drift detected: " + r.Summary()
		if healed {
			msg += "; healed by ferry drift --heal"
		}
		n.Events = append(n.Events, t.Source.Event(event.SeverityError, "DriftDetected", r.Revision, msg))
	}
	if healed {
		n.State = StateInSync
	}
	if n.State == StateInSync && prev != StateInSync {
		msg := "Drift resolved: the cluster matches Git again"
		if healed {
			msg = "Drift resolved: healed by ferry drift --heal"
		}
		n.Events = append(n.Events, t.Source.Event(event.SeverityInfo, "DriftResolved", r.Revision, msg))
	}
	return n
}

// NoticeEvents are the notices' events, by cluster.
func NoticeEvents(notices []Notice) map[string][]event.Event {
	out := map[string][]event.Event{}
	for _, n := range notices {
		out[n.Cluster] = append(out[n.Cluster], n.Events...)
	}
	return out
}

// Remember moves each notice's target to its new state once delivered
// says its events reached a Provider; an undelivered change is sent
// again by the next run. A state that cannot be written is a warning.
func Remember(ctx context.Context, notices []Notice, delivered func(cluster string, ref event.ObjectReference) bool, inventoryNS string) (warnings []string) {
	for _, n := range notices {
		if !delivered(n.Cluster, n.Source.Ref) {
			continue
		}
		if err := n.client.SetNotifiedDrift(ctx, n.Target, inventoryNS, n.State); err != nil {
			warnings = append(warnings, fmt.Sprintf("target %q: remembering the drift notified: %v", n.Target, err))
		}
	}
	return warnings
}
