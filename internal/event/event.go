// Package event is what ferry reports: events shaped like Flux's, each
// about an object (a target's Flux Kustomization, an ImagePolicy). The
// results of apply (kube), diff, drift and bump build their events; notify
// delivers them.
package event

import "time"

// Severities of an Event, as Flux names them.
const (
	SeverityInfo  = "info"
	SeverityError = "error"
)

// Controller is the reportingController of every event ferry sends.
const Controller = "ferry"

// Event is one thing ferry reports, shaped like Flux's event
// (github.com/fluxcd/pkg/apis/event v1beta1 Event), so that payloads and
// Alert filters written for Flux work unchanged.
type Event struct {
	// InvolvedObject is the target's Flux Kustomization (apply, drift,
	// diff) or the ImagePolicy (bump).
	InvolvedObject ObjectReference `json:"involvedObject"`
	// Severity is SeverityInfo or SeverityError.
	Severity  string    `json:"severity"`
	Timestamp time.Time `json:"timestamp"`
	Message   string    `json:"message"`
	// Reason is a CamelCase word: ReconciliationSucceeded,
	// ReconciliationFailed, DependencyNotReady, DriftDetected,
	// DriftResolved, PullRequestOpened, PullRequestUpdated, Progressing.
	Reason string `json:"reason"`
	// Metadata holds "revision" (the Git revision) and "summary" (the
	// Alert's), among others; an Alert's eventMetadata is added at send
	// time.
	Metadata            map[string]string `json:"metadata,omitempty"`
	ReportingController string            `json:"reportingController"`
	ReportingInstance   string            `json:"reportingInstance,omitempty"`

	// Labels are the involved object's labels, for an Alert's
	// eventSources matchLabels; they are not sent.
	Labels map[string]string `json:"-"`
}

// ObjectReference names an event's involved object.
type ObjectReference struct {
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// Source is what events are about: their involved object and its labels
// (an Alert's eventSources select by both).
type Source struct {
	Ref    ObjectReference
	Labels map[string]string
}

// Event is an event about s, now, from ferry; revision, when set, is its
// "revision" metadata.
func (s Source) Event(severity, reason, revision, message string) Event {
	ev := Event{
		InvolvedObject:      s.Ref,
		Severity:            severity,
		Timestamp:           time.Now().UTC(),
		Reason:              reason,
		Message:             message,
		ReportingController: Controller,
		Labels:              s.Labels,
	}
	if revision != "" {
		ev.Metadata = map[string]string{"revision": revision}
	}
	return ev
}

// Note says a run-wide fact in every event: note before each message, and
// key: value in its metadata (a skipped signature verification, say).
func Note(events map[string][]Event, note, key, value string) {
	for _, evs := range events {
		for i := range evs {
			evs[i].Message = note + " " + evs[i].Message
			if evs[i].Metadata == nil {
				evs[i].Metadata = map[string]string{}
			}
			evs[i].Metadata[key] = value
		}
	}
}
