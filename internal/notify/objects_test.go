package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// objects decodes a multi-document YAML stream.
func objects(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := yaml.NewDecoder(strings.NewReader(docs))
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func TestFromObjects(t *testing.T) {
	objs := objects(t, `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: slack, namespace: flux-system}
spec:
  type: slack
  channel: general
  username: flux
  timeout: 1m30s
  secretRef: {name: slack-url}
  certSecretRef: {name: slack-ca}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Provider
metadata: {name: gh, namespace: flux-system}
spec: {type: github, address: "https://github.com/o/r", suspend: true}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: on-call, namespace: flux-system}
spec:
  providerRef: {name: slack}
  eventSources:
    - {kind: Kustomization, name: "*", matchLabels: {team: a}}
    - {kind: HelmRelease, name: web, namespace: apps}
  inclusionList: ["^Applied"]
  exclusionList: ["dry"]
  eventMetadata: {env: prod}
  summary: Cluster prod
---
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Alert
metadata: {name: errors, namespace: flux-system}
spec:
  providerRef: {name: gh}
  eventSeverity: error
  suspend: true
  eventSources: [{kind: Kustomization, name: apps}]
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: hook, namespace: flux-system}
spec: {type: github}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
`)
	cfg, err := FromObjects(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Providers: []Provider{
			{Name: "gh", Namespace: "flux-system", Type: "github", Address: "https://github.com/o/r", Suspend: true},
			{Name: "slack", Namespace: "flux-system", Type: "slack", Channel: "general", Username: "flux",
				Timeout: 90 * time.Second, SecretRef: "slack-url", CertSecretRef: "slack-ca"},
		},
		Alerts: []Alert{
			{Name: "errors", Namespace: "flux-system", ProviderRef: "gh", EventSeverity: "error", Suspend: true,
				EventSources: []EventSource{{Kind: "Kustomization", Name: "apps", Namespace: "flux-system"}}},
			{Name: "on-call", Namespace: "flux-system", ProviderRef: "slack", EventSeverity: "info",
				EventSources: []EventSource{
					{Kind: "Kustomization", Name: "*", Namespace: "flux-system", MatchLabels: map[string]string{"team": "a"}},
					{Kind: "HelmRelease", Name: "web", Namespace: "apps"},
				},
				InclusionList: []string{"^Applied"}, ExclusionList: []string{"dry"},
				EventMetadata: map[string]string{"env": "prod"}, Summary: "Cluster prod"},
		},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("FromObjects (-want +got):\n%s", diff)
	}
}

func TestFromObjectsRefusesBadObjects(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown type", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: p, namespace: ns}
spec: {type: carrier-pigeon}`, `Provider/ns/p: unknown provider type "carrier-pigeon"`},
		{"bad timeout", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: p, namespace: ns}
spec: {type: slack, timeout: 1h}`, `Provider/ns/p: spec.timeout "1h"`},
		{"bad inclusion", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: a, namespace: ns}
spec: {providerRef: {name: p}, eventSources: [{kind: Kustomization, name: x}], inclusionList: ["("]}`, `Alert/ns/a: inclusionList[0]: error parsing regexp`},
		{"bad exclusion", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: a, namespace: ns}
spec: {providerRef: {name: p}, eventSources: [{kind: Kustomization, name: x}], exclusionList: ["[a-"]}`, `Alert/ns/a: exclusionList[0]: error parsing regexp`},
		{"no providerRef", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: a, namespace: ns}
spec: {eventSources: [{kind: Kustomization, name: x}]}`, `Alert/ns/a: spec.providerRef.name is required`},
		{"matchLabels on a name", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: a, namespace: ns}
spec: {providerRef: {name: p}, eventSources: [{kind: Kustomization, name: x, matchLabels: {a: b}}]}`, `Alert/ns/a: eventSources[0] has matchLabels, which requires name "*"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromObjects(objects(t, tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
