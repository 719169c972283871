package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/notify"
	"github.com/ferry-ci/ferry/internal/testtree"
)

func TestFerryYAMLNotifications(t *testing.T) {
	t.Parallel()
	f, err := config.ParseFile([]byte(`
notifications:
  providers:
    - {name: slack, type: slack, channel: ops, secretRef: {name: slack-url}}
    - {name: hook, namespace: apps, type: generic, address: "https://example.com/hook", suspend: true}
  alerts:
    - name: ops
      providerRef: {name: slack}
      eventSeverity: error
      eventSources: [{kind: Kustomization, name: "*", matchLabels: {team: ops}}]
      exclusionList: ["^Dependency"]
      eventMetadata: {env: prod}
`))
	if err != nil {
		t.Fatal(err)
	}
	n := f.Notifications
	want := &config.NotificationsConfig{
		Providers: []config.ProviderConfig{
			{Name: "slack", Type: "slack", Channel: "ops", SecretRef: &config.LocalRef{Name: "slack-url"}},
			{Name: "hook", Namespace: "apps", Type: "generic", Address: "https://example.com/hook", Suspend: true},
		},
		Alerts: []config.AlertConfig{{
			Name: "ops", ProviderRef: config.LocalRef{Name: "slack"}, EventSeverity: "error",
			EventSources:  []config.EventSourceConfig{{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "ops"}}},
			ExclusionList: []string{"^Dependency"},
			EventMetadata: map[string]string{"env": "prod"},
		}},
	}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

func TestFerryYAMLNotificationsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown field", "notifications: {providers: [{name: a, type: slack, chanel: x}]}", []string{"ferry.yaml", `"chanel"`}},
		{"provider without a name", "notifications: {providers: [{type: slack}]}", []string{"ferry.yaml", "providers[0]", "name is required"}},
		{"alert without a name", "notifications: {alerts: [{providerRef: {name: a}}]}", []string{"ferry.yaml", "alerts[0]", "name is required"}},
		{"provider without a type", "notifications: {providers: [{name: a}]}", []string{"ferry.yaml", "Provider/flux-system/a"}},
		{"alert without a provider", "notifications: {alerts: [{name: ops}]}", []string{"ferry.yaml", "Alert/flux-system/ops"}},
		{"declared twice", "notifications: {providers: [{name: a, type: slack}, {name: a, type: generic}]}", []string{"ferry.yaml", "Provider/flux-system/a", "twice"}},
		{"bad namespace", "notifications: {providers: [{name: a, namespace: A/B, type: slack}]}", []string{"ferry.yaml", "namespace"}},
		{"YAML 1.1 boolean", "notifications: {alerts: [{name: a, providerRef: {name: b}, suspend: yes}]}", []string{"ferry.yaml", "suspend"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseFile([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("ParseFile(%q) = nil error, want one with %q", tc.yaml, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// notifyFleet is a fleet of two clusters: staging's root holds a Provider
// and its Secret, its apps target an Alert; production holds a Provider
// of its own; ferry.yaml adds an Alert for every cluster.
var notifyFleet = map[string]string{
	"ferry.yaml": `notifications:
  alerts:
    - {name: everything, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: "*"}]}
`,
	"clusters/staging/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [apps.yaml, notify.yaml]\n",
	"clusters/staging/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps/staging, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
	"clusters/staging/notify.yaml": `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: hook, namespace: flux-system}
spec: {type: generic, secretRef: {name: hook-url}}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-url, namespace: flux-system}
data: {address: aHR0cHM6Ly9leGFtcGxlLmNvbS9ob29r}
stringData: {token: plain}
`,
	"apps/staging/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [alert.yaml, cm.yaml]\n",
	"apps/staging/alert.yaml": `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: failures, namespace: flux-system}
spec:
  providerRef: {name: hook}
  eventSeverity: error
  eventSources: [{kind: Kustomization, name: apps}]
`,
	"apps/staging/cm.yaml":                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {a: b}\n",
	"clusters/production/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [apps.yaml]\n",
	"clusters/production/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps/production, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: chat, namespace: flux-system}
spec: {type: slack, channel: prod}
`,
	"apps/production/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n",
	"apps/production/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {a: b}\n",
}

func TestNotificationsOfCluster(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, notifyFleet))
	ids := func(c notify.Config) []string {
		var out []string
		for _, p := range c.Providers {
			out = append(out, p.ID())
		}
		for _, a := range c.Alerts {
			out = append(out, a.ID())
		}
		return out
	}
	for _, tc := range []struct {
		cluster string
		want    []string
	}{
		// The root's Provider, the target's Alert, ferry.yaml's Alert (by name).
		{"staging", []string{"Provider/flux-system/hook", "Alert/flux-system/everything", "Alert/flux-system/failures"}},
		{"production", []string{"Provider/flux-system/chat", "Alert/flux-system/everything"}},
	} {
		cfg, err := repo.Notifications(t.Context(), tc.cluster)
		if err != nil {
			t.Fatalf("Notifications(%s): %v", tc.cluster, err)
		}
		if diff := cmp.Diff(tc.want, ids(cfg)); diff != "" {
			t.Errorf("Notifications(%s) (-want +got):\n%s", tc.cluster, diff)
		}
	}
	cfg, _ := repo.Notifications(t.Context(), "staging")
	if len(cfg.Providers) != 1 || cfg.Providers[0].SecretRef != "hook-url" || cfg.Providers[0].Type != "generic" {
		t.Errorf("staging providers = %+v, want hook (generic, secretRef hook-url)", cfg.Providers)
	}

	got, ok := repo.ClusterSecret(t.Context(), "staging", "flux-system", "hook-url")
	if want := map[string]string{"address": "https://example.com/hook", "token": "plain"}; !ok || !cmp.Equal(want, got) {
		t.Errorf("ClusterSecret(staging, hook-url) = %v, %v; want %v, true", got, ok, want)
	}
	if got, ok := repo.ClusterSecret(t.Context(), "production", "flux-system", "hook-url"); ok {
		t.Errorf("ClusterSecret(production, hook-url) = %v, true; production's renders hold no such Secret", got)
	}
}

func TestNotificationsOfAllClusters(t *testing.T) {
	t.Parallel()
	repo := load(t, testtree.New(t, notifyFleet))
	cfg, err := repo.Notifications(t.Context(), config.AllClusters)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range cfg.Providers {
		got = append(got, p.ID())
	}
	for _, a := range cfg.Alerts {
		got = append(got, a.ID())
	}
	want := []string{"Provider/flux-system/chat", "Provider/flux-system/hook", "Alert/flux-system/everything", "Alert/flux-system/failures"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Notifications(AllClusters) (-want +got):\n%s", diff)
	}
	if _, ok := repo.ClusterSecret(t.Context(), config.AllClusters, "flux-system", "hook-url"); !ok {
		t.Error("ClusterSecret(AllClusters, hook-url) found nothing; staging's root holds it")
	}
}
