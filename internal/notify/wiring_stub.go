package notify

// TEMPORARY (notify-wiring): stand-ins for FromObjects and Send until
// branch notify-core lands; delete this file when merging it.

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// group is the API group of Flux's notification objects.
const group = "notification.toolkit.fluxcd.io"

// FromObjects reads the Provider and Alert objects among objs.
func FromObjects(objs []*unstructured.Unstructured) (Config, error) {
	var c Config
	for _, o := range objs {
		if o.GroupVersionKind().Group != group {
			continue
		}
		id := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		str := func(f ...string) string {
			s, _, _ := unstructured.NestedString(o.Object, append([]string{"spec"}, f...)...)
			return s
		}
		switch o.GetKind() {
		case "Provider":
			p := Provider{Name: o.GetName(), Namespace: o.GetNamespace(), Type: str("type"), Address: str("address"), Channel: str("channel"), Username: str("username"), SecretRef: str("secretRef", "name"), CertSecretRef: str("certSecretRef", "name")}
			if p.Type == "" {
				return c, fmt.Errorf("%s: spec.type is required", id)
			}
			if t := str("timeout"); t != "" {
				d, err := time.ParseDuration(t)
				if err != nil {
					return c, fmt.Errorf("%s: spec.timeout: %w", id, err)
				}
				p.Timeout = d
			}
			c.Providers = append(c.Providers, p)
		case "Alert":
			a := Alert{Name: o.GetName(), Namespace: o.GetNamespace(), ProviderRef: str("providerRef", "name"), EventSeverity: str("eventSeverity"), Summary: str("summary")}
			if a.ProviderRef == "" {
				return c, fmt.Errorf("%s: spec.providerRef.name is required", id)
			}
			srcs, _, _ := unstructured.NestedSlice(o.Object, "spec", "eventSources")
			for _, s := range srcs {
				m, _ := s.(map[string]any)
				k, _ := m["kind"].(string)
				n, _ := m["name"].(string)
				ns, _ := m["namespace"].(string)
				a.EventSources = append(a.EventSources, EventSource{Kind: k, Name: n, Namespace: ns})
			}
			c.Alerts = append(c.Alerts, a)
		}
	}
	return c, nil
}

// Send delivers events (stand-in: nothing is sent).
func Send(ctx context.Context, cfg Config, events []Event, opts Options) []Delivery {
	return nil
}
