package notify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func kustomizationEvent(name, severity, message string) Event {
	return Event{
		InvolvedObject: ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: name,
			APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
		Severity: severity, Message: message, Reason: "ReconciliationSucceeded",
		Labels: map[string]string{"team": "a"},
	}
}

func TestAlertMatches(t *testing.T) {
	all := []EventSource{{Kind: "Kustomization", Name: "*"}}
	for _, tc := range []struct {
		name  string
		alert Alert
		event Event
		want  bool
	}{
		{"severity error skips info", Alert{EventSeverity: "error", EventSources: all},
			kustomizationEvent("apps", SeverityInfo, "Applied"), false},
		{"severity error takes error", Alert{EventSeverity: "error", EventSources: all},
			kustomizationEvent("apps", SeverityError, "failed"), true},
		{"severity info takes error", Alert{EventSeverity: "info", EventSources: all},
			kustomizationEvent("apps", SeverityError, "failed"), true},
		{"by name", Alert{EventSources: []EventSource{{Kind: "Kustomization", Name: "apps"}}},
			kustomizationEvent("apps", SeverityInfo, "m"), true},
		{"other name", Alert{EventSources: []EventSource{{Kind: "Kustomization", Name: "infra"}}},
			kustomizationEvent("apps", SeverityInfo, "m"), false},
		{"other kind", Alert{EventSources: []EventSource{{Kind: "HelmRelease", Name: "*"}}},
			kustomizationEvent("apps", SeverityInfo, "m"), false},
		{"by star", Alert{EventSources: all}, kustomizationEvent("apps", SeverityInfo, "m"), true},
		{"matchLabels", Alert{EventSources: []EventSource{{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "a"}}}},
			kustomizationEvent("apps", SeverityInfo, "m"), true},
		{"matchLabels not matching", Alert{EventSources: []EventSource{{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "b"}}}},
			kustomizationEvent("apps", SeverityInfo, "m"), false},
		{"other namespace", Alert{EventSources: []EventSource{{Kind: "Kustomization", Name: "*", Namespace: "apps"}}},
			kustomizationEvent("apps", SeverityInfo, "m"), false},
		{"alert's namespace by default", Alert{Namespace: "apps", EventSources: all},
			kustomizationEvent("apps", SeverityInfo, "m"), false},
		{"inclusion", Alert{EventSources: all, InclusionList: []string{"^Applied"}},
			kustomizationEvent("apps", SeverityInfo, "Applied revision"), true},
		{"not included", Alert{EventSources: all, InclusionList: []string{"^Applied"}},
			kustomizationEvent("apps", SeverityInfo, "Health check passed"), false},
		{"exclusion beats inclusion", Alert{EventSources: all, InclusionList: []string{"^Applied"}, ExclusionList: []string{"revision"}},
			kustomizationEvent("apps", SeverityInfo, "Applied revision"), false},
		{"suspended", Alert{Suspend: true, EventSources: all}, kustomizationEvent("apps", SeverityInfo, "m"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.alert.Namespace == "" {
				tc.alert.Namespace = "flux-system"
			}
			if got := tc.alert.Matches(&tc.event); got != tc.want {
				t.Errorf("Matches = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestAlertFor checks the precedence of notification-controller's
// combineEventMetadata (Flux RFC 0008): event-group keys < eventMetadata
// < summary < the involved object's keys.
func TestAlertFor(t *testing.T) {
	e := kustomizationEvent("apps", SeverityInfo, "m")
	e.Metadata = map[string]string{
		"event.toolkit.fluxcd.io/token":    "low",
		"event.toolkit.fluxcd.io/env":      "from-event-group",
		"kustomize.toolkit.fluxcd.io/size": "3",
		"revision":                         "main@sha1:abc",
		"summary":                          "from the event",
		"other.example.com/dropped":        "x",
	}
	a := Alert{EventMetadata: map[string]string{"env": "prod", "revision": "alert", "cluster": "c1"}, Summary: "from the alert"}
	got := a.For(e).Metadata
	want := map[string]string{
		"token": "low", "env": "prod", "cluster": "c1", "size": "3",
		"revision": "main@sha1:abc", "summary": "from the event",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if _, ok := e.Metadata["cluster"]; ok {
		t.Error("For changed the event it was given")
	}
	e.Metadata = map[string]string{"revision": "r"}
	if got := (&Alert{Summary: "s"}).For(e).Metadata; !cmp.Equal(got, map[string]string{"revision": "r", "summary": "s"}) {
		t.Errorf("summary: got %v", got)
	}
}
