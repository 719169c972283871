package notify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ferry-ci/ferry/internal/markdown"
)

// Objects are a repository's notification objects, by cluster (see
// config.Repo): the Providers and Alerts of a cluster, and the Secrets
// its renders hold.
type Objects interface {
	Notifications(ctx context.Context, cluster string) (Config, error)
	ClusterSecret(ctx context.Context, cluster, namespace, name string) (map[string]string, bool)
}

// Outcome is what a run's notifications came to.
type Outcome struct {
	// Sent counts the notifications delivered (unchanged statuses and
	// skipped sends aside).
	Sent int
	// Failures say, one each, which notifications were not delivered and
	// why; Warnings are the distinct warnings of the providers.
	Failures, Warnings []string

	alerts map[string]bool // clusters with Alerts
	failed map[string]bool // by key
}

// Delivered reports whether every event about ref in cluster was
// delivered through at least one Alert: the cluster has Alerts and no
// delivery of such an event failed.
func (o Outcome) Delivered(cluster string, ref ObjectReference) bool {
	return o.alerts[cluster] && !o.failed[key(cluster, ref)]
}

func key(cluster string, ref ObjectReference) string {
	return cluster + "\x00" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// Deliver sends each cluster's events (by cluster, see config.AllClusters)
// through the Alerts and Providers of that cluster, the clusters in
// order. Each event's message is masked before it is sent; a Provider's
// secretRef is read from the cluster's renders (opts.Secret is set per
// cluster). Deliver never fails: what was not delivered is in the
// Outcome's Failures.
func Deliver(ctx context.Context, objs Objects, events map[string][]Event, opts Options, mask func(string) string) Outcome {
	out := Outcome{alerts: map[string]bool{}, failed: map[string]bool{}}
	warned := map[string]bool{}
	for _, cluster := range slices.Sorted(maps.Keys(events)) {
		evs := events[cluster]
		if len(evs) == 0 {
			continue
		}
		cfg, err := objs.Notifications(ctx, cluster)
		if err != nil {
			out.Failures = append(out.Failures, fmt.Sprintf("notifications of cluster %q: %v", cluster, err))
			for _, ev := range evs {
				out.failed[key(cluster, ev.InvolvedObject)] = true
			}
			continue
		}
		if len(cfg.Alerts) == 0 {
			continue
		}
		out.alerts[cluster] = true
		masked := make([]Event, len(evs))
		for i, ev := range evs {
			ev.Message = mask(ev.Message)
			masked[i] = ev
		}
		o := opts
		o.Secret = func(namespace, name string) (map[string]string, bool) {
			return objs.ClusterSecret(ctx, cluster, namespace, name)
		}
		for _, d := range Send(ctx, cfg, masked, o) {
			for _, w := range d.Warnings {
				if !warned[w] {
					warned[w] = true
					out.Warnings = append(out.Warnings, w)
				}
			}
			switch {
			case d.Err != nil:
				if d.Event != nil {
					out.failed[key(cluster, d.Event.InvolvedObject)] = true
				}
				out.Failures = append(out.Failures, fmt.Sprintf("notification %s -> %s: %v", d.Alert, d.Provider, d.Err))
			case !d.Unchanged && d.Skipped == "":
				out.Sent++
			}
		}
	}
	return out
}

// Markdown is the step summary's section on the notifications not
// delivered, each failure masked with mask before it is quoted; "" when
// none failed.
func (o Outcome) Markdown(mask func(string) string) string {
	if len(o.Failures) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Notifications\n\n")
	fmt.Fprintf(&b, "%d delivered, %d not delivered (the deploy is not affected):\n\n", o.Sent, len(o.Failures))
	for _, f := range o.Failures {
		fmt.Fprintf(&b, "- %s\n", markdown.Text(mask(f)))
	}
	return b.String()
}
