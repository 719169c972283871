package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/notify"
	"github.com/ferry-ci/ferry/internal/notify/alertmanagertest"
)

// A drift alert reaches a real Alertmanager through an alertmanager
// Provider, and Alertmanager holds it with the labels and annotations
// notification-controller gives it; the good apply beside it is filtered
// out by the Alert's eventSeverity.
func TestAlertmanagerReceivesDriftAlert(t *testing.T) {
	am := alertmanagertest.Start(t)
	cfg := notify.Config{
		Providers: []notify.Provider{{
			Name: "alertmanager", Namespace: "flux-system", Type: notify.TypeAlertmanager,
			Address: am.URL + "/api/v2/alerts",
		}},
		Alerts: []notify.Alert{{
			Name: "drift", Namespace: "flux-system", ProviderRef: "alertmanager",
			EventSeverity: notify.SeverityError,
			EventSources:  []notify.EventSource{{Kind: "Kustomization", Name: "*"}},
			EventMetadata: map[string]string{"cluster": "production"},
			Summary:       "production fleet",
		}},
	}
	// Alertmanager keeps startsAt to the second.
	at := time.Now().UTC().Truncate(time.Second)
	apps := notify.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "apps", APIVersion: "kustomize.toolkit.fluxcd.io/v1"}
	events := []notify.Event{
		{
			InvolvedObject: apps,
			Severity:       notify.SeverityError,
			Timestamp:      at,
			Message:        "drift detected: 2 objects changed in the cluster (Deployment/apps/web, ConfigMap/apps/web-config)",
			Reason:         "DriftDetected",
			Metadata:       map[string]string{"revision": "main@sha1:0123456789abcdef0123456789abcdef01234567"},
		},
		{
			InvolvedObject: notify.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "infra", APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
			Severity:       notify.SeverityInfo,
			Timestamp:      at,
			Message:        "applied: 3 created, 1 configured",
			Reason:         "ReconciliationSucceeded",
			Metadata:       map[string]string{"revision": "main@sha1:0123456789abcdef0123456789abcdef01234567"},
		},
	}

	deliveries := notify.Send(context.Background(), cfg, events, notify.Options{})
	if len(deliveries) != 1 || deliveries[0].Err != nil || deliveries[0].Attempts != 1 || deliveries[0].Event.Reason != "DriftDetected" {
		t.Fatalf("deliveries: %+v, want the drift event delivered once", deliveries)
	}

	alerts := am.Alerts(t)
	if len(alerts) != 1 {
		t.Fatalf("Alertmanager holds %d alerts, want 1: %+v", len(alerts), alerts)
	}
	got := alerts[0]
	wantLabels := map[string]string{
		"alertname":           "FluxKustomizationDriftdetected",
		"severity":            "error",
		"reason":              "DriftDetected",
		"kind":                "Kustomization",
		"name":                "apps",
		"namespace":           "flux-system",
		"reportingcontroller": "ferry",
		"revision":            "main@sha1:0123456789abcdef0123456789abcdef01234567",
		"cluster":             "production",
	}
	if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		"message": events[0].Message,
		"summary": "production fleet",
	}
	if diff := cmp.Diff(wantAnnotations, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if !got.StartsAt.Equal(at) {
		t.Errorf("startsAt %s, want the event's timestamp %s", got.StartsAt, at)
	}
	// Flux sends no end: Alertmanager resolves the alert itself after its
	// resolve_timeout, so it is active now and ends after it started.
	if got.State != "active" || !got.EndsAt.After(got.StartsAt) || len(got.Receivers) != 1 || got.Receivers[0] != am.Receiver {
		t.Errorf("alert state %q, endsAt %s, receivers %v; want active, ending after %s, routed to %s", got.State, got.EndsAt, got.Receivers, got.StartsAt, am.Receiver)
	}

	// The same drift again is the same alert (one fingerprint), not a
	// second one.
	if d := notify.Send(context.Background(), cfg, events[:1], notify.Options{}); len(d) != 1 || d[0].Err != nil {
		t.Fatalf("second send: %+v", d)
	}
	if again := am.Alerts(t); len(again) != 1 || again[0].Fingerprint != got.Fingerprint {
		t.Errorf("after the same drift again: %+v, want the one alert %s", again, got.Fingerprint)
	}
}
