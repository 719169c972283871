package alertmanagertest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/notify/alertmanagertest"
)

// Two servers run side by side, each with its own alerts, and an alert
// posted to API v2 is read back with what was posted.
func TestStartAndAlerts(t *testing.T) {
	a, b := alertmanagertest.Start(t), alertmanagertest.Start(t)
	if a.URL == b.URL || a.Receiver == b.Receiver {
		t.Fatalf("two servers share %s / %s", a.URL, a.Receiver)
	}
	if got := a.Alerts(t); len(got) != 0 {
		t.Fatalf("a fresh server holds %+v", got)
	}
	body := `[{"labels":{"alertname":"Test","team":"fleet"},"annotations":{"message":"hello"},"startsAt":"2026-01-02T03:04:05Z","generatorURL":"https://ci.example.com/runs/1"}]`
	resp, err := http.Post(a.URL+"/api/v2/alerts", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: %s", resp.Status)
	}
	got := a.Alerts(t)
	if len(got) != 1 || got[0].Labels["team"] != "fleet" || got[0].Annotations["message"] != "hello" ||
		got[0].StartsAt.Format("2006-01-02T15:04:05Z07:00") != "2026-01-02T03:04:05Z" ||
		got[0].GeneratorURL != "https://ci.example.com/runs/1" || got[0].Fingerprint == "" {
		t.Errorf("alerts of the server posted to: %+v", got)
	}
	if got := b.Alerts(t); len(got) != 0 {
		t.Errorf("the other server holds %+v", got)
	}
}
