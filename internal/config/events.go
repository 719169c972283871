package config

import "github.com/ferry-ci/ferry/internal/event"

// EventSource is what a target's events are about: its Flux
// Kustomization, as an Alert's eventSources written for Flux select it,
// with that object's labels for their matchLabels.
func (t *Target) EventSource() event.Source {
	ref := event.ObjectReference{Kind: "Kustomization", APIVersion: KustomizeGroup + "/v1", Namespace: t.Namespace, Name: t.Name}
	var labels map[string]string
	if ks := t.Kustomization; ks != nil {
		ref.Namespace, ref.Name = ks.GetNamespace(), ks.GetName()
		labels = ks.GetLabels()
	}
	if ref.Namespace == "" {
		ref.Namespace = DefaultNamespace
	}
	return event.Source{Ref: ref, Labels: labels}
}
