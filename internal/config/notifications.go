package config

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/notify"
)

// NotificationsConfig is ferry.yaml's notifications: Flux Providers and
// Alerts declared with the fields of their specs, for every cluster.
type NotificationsConfig struct {
	Providers []ProviderConfig `json:"providers,omitempty" yaml:"providers,omitempty"`
	Alerts    []AlertConfig    `json:"alerts,omitempty" yaml:"alerts,omitempty"`
}

// ProviderConfig is a Flux Provider (notification.toolkit.fluxcd.io
// v1beta3): its name, namespace (DefaultNamespace when empty) and spec.
type ProviderConfig struct {
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`

	Type             string    `json:"type" yaml:"type"`
	Interval         string    `json:"interval,omitempty" yaml:"interval,omitempty"`
	Channel          string    `json:"channel,omitempty" yaml:"channel,omitempty"`
	Username         string    `json:"username,omitempty" yaml:"username,omitempty"`
	Address          string    `json:"address,omitempty" yaml:"address,omitempty"`
	Timeout          string    `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	Proxy            string    `json:"proxy,omitempty" yaml:"proxy,omitempty"`
	SecretRef        *LocalRef `json:"secretRef,omitempty" yaml:"secretRef,omitempty"`
	CertSecretRef    *LocalRef `json:"certSecretRef,omitempty" yaml:"certSecretRef,omitempty"`
	CommitStatusExpr string    `json:"commitStatusExpr,omitempty" yaml:"commitStatusExpr,omitempty"`
	Suspend          bool      `json:"suspend,omitempty" yaml:"suspend,omitempty"`
}

// AlertConfig is a Flux Alert (notification.toolkit.fluxcd.io v1beta3):
// its name, namespace (DefaultNamespace when empty) and spec.
type AlertConfig struct {
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`

	ProviderRef   LocalRef            `json:"providerRef" yaml:"providerRef"`
	EventSeverity string              `json:"eventSeverity,omitempty" yaml:"eventSeverity,omitempty"`
	EventSources  []EventSourceConfig `json:"eventSources,omitempty" yaml:"eventSources,omitempty"`
	InclusionList []string            `json:"inclusionList,omitempty" yaml:"inclusionList,omitempty"`
	ExclusionList []string            `json:"exclusionList,omitempty" yaml:"exclusionList,omitempty"`
	EventMetadata map[string]string   `json:"eventMetadata,omitempty" yaml:"eventMetadata,omitempty"`
	Summary       string              `json:"summary,omitempty" yaml:"summary,omitempty"`
	Suspend       bool                `json:"suspend,omitempty" yaml:"suspend,omitempty"`
}

// EventSourceConfig is one of an Alert's eventSources.
type EventSourceConfig struct {
	APIVersion  string            `json:"apiVersion,omitempty" yaml:"apiVersion,omitempty"`
	Kind        string            `json:"kind" yaml:"kind"`
	Name        string            `json:"name" yaml:"name"`
	Namespace   string            `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty" yaml:"matchLabels,omitempty"`
}

// notificationAPIVersion is the version ferry.yaml's entries stand for.
const notificationAPIVersion = NotificationGroup + "/v1beta3"

// objects turns the entries into Provider and Alert objects, as if a
// render held them, so they are read by the same parser
// (notify.FromObjects) as those of the cluster's renders.
func (n *NotificationsConfig) objects() ([]*unstructured.Unstructured, error) {
	if n == nil {
		return nil, nil
	}
	var out []*unstructured.Unstructured
	add := func(kind, at, name, ns string, entry any) error {
		if name == "" {
			return fmt.Errorf("%s: notifications: %s: name is required", FileName, at)
		}
		if ns == "" {
			ns = DefaultNamespace
		}
		id := kind + "/" + ns + "/" + name
		if err := checkNamePart(name); err != nil {
			return fmt.Errorf("%s: notifications: %s: name %q: %w", FileName, id, name, err)
		}
		if err := checkNamePart(ns); err != nil {
			return fmt.Errorf("%s: notifications: %s: namespace %q: %w", FileName, id, ns, err)
		}
		spec := map[string]any{}
		if err := toMap(entry, &spec); err != nil {
			return fmt.Errorf("%s: notifications: %s: %w", FileName, id, err)
		}
		delete(spec, "name")
		delete(spec, "namespace")
		for _, o := range out {
			if o.GetKind() == kind && o.GetName() == name && o.GetNamespace() == ns {
				return fmt.Errorf("%s: notifications: %s is declared twice", FileName, id)
			}
		}
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": notificationAPIVersion,
			"kind":       kind,
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       spec,
		}})
		return nil
	}
	for i, p := range n.Providers {
		if err := add("Provider", fmt.Sprintf("providers[%d]", i), p.Name, p.Namespace, p); err != nil {
			return nil, err
		}
	}
	for i, a := range n.Alerts {
		if err := add("Alert", fmt.Sprintf("alerts[%d]", i), a.Name, a.Namespace, a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// check validates the entries as a Provider or Alert of a render is
// validated, naming ferry.yaml and the entry.
func (n *NotificationsConfig) check() error {
	objs, err := n.objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := notify.FromObjects([]*unstructured.Unstructured{o}); err != nil {
			return fmt.Errorf("%s: notifications: %w", FileName, err)
		}
	}
	return nil
}

// AllClusters, as the cluster of Notifications and ClusterSecret, stands
// for every cluster of the repository together: for events that belong
// to none (ferry bump's).
const AllClusters = "*"

// inCluster reports whether t belongs to cluster (or cluster is
// AllClusters).
func inCluster(t *Target, cluster string) bool { return cluster == AllClusters || t.Cluster == cluster }

// isNotification reports a Provider or Alert object.
func isNotification(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == NotificationGroup && (gvk.Kind == "Provider" || gvk.Kind == "Alert")
}

// Notifications is the notification configuration of a cluster: the
// Provider and Alert objects its renders hold (its root, and the build of
// every one of its targets), and those ferry.yaml declares for every
// cluster. An object found twice is read once (the first found: root,
// then targets in order, then ferry.yaml). A target that does not build
// is passed over: its own command reports that.
func (r *Repo) Notifications(ctx context.Context, cluster string) (notify.Config, error) {
	if !r.mayNotify() {
		return notify.Config{}, nil // spares the renders of every target
	}
	var objs []*unstructured.Unstructured
	seen := map[string]bool{}
	add := func(list []*unstructured.Unstructured) {
		for _, o := range list {
			if !isNotification(o) {
				continue
			}
			id := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
			if seen[id] {
				continue
			}
			seen[id] = true
			objs = append(objs, o)
		}
	}
	if cluster == AllClusters {
		for _, c := range r.Clusters {
			add(r.rootObjs[c.Name])
		}
	} else {
		add(r.rootObjs[cluster])
	}
	for _, t := range r.Targets {
		if !inCluster(t, cluster) {
			continue
		}
		if res, err := r.build(ctx, t); err == nil {
			add(res.Set.Objects)
		}
	}
	if r.File != nil {
		fromFile, err := r.File.Notifications.objects()
		if err != nil {
			return notify.Config{}, err
		}
		add(fromFile)
	}
	cfg, err := notify.FromObjects(objs)
	if err != nil {
		return notify.Config{}, fmt.Errorf("notifications of cluster %q: %w", cluster, err)
	}
	return cfg, nil
}

// mayNotify reports whether the repository may declare notifications:
// ferry.yaml has some, or a YAML file of the repository (or of a source
// checked out beside it) names the notification API group. Without
// either, Notifications needs not render every target of a cluster to
// find none. (Notification objects only a remote base or a Helm chart
// would bring are not looked for.)
func (r *Repo) mayNotify() bool {
	if r.notifyFiles != nil {
		return *r.notifyFiles
	}
	found := r.File != nil && r.File.Notifications != nil && (len(r.File.Notifications.Providers) > 0 || len(r.File.Notifications.Alerts) > 0)
	dirs := []string{r.Root}
	for _, t := range r.Targets {
		if !slices.Contains(dirs, t.Root) {
			dirs = append(dirs, t.Root)
		}
	}
	needle := []byte(NotificationGroup)
	for _, dir := range dirs {
		if found {
			break
		}
		_ = manifest.WalkYAML(dir, func(_ string, data []byte) error {
			if bytes.Contains(data, needle) {
				found = true
				return errStopWalk
			}
			return nil
		})
	}
	r.notifyFiles = &found
	return found
}

// errStopWalk ends a walk early.
var errStopWalk = errors.New("stop")

// ClusterSecret finds the Secret namespace/name among what cluster's
// renders hold (its root, then its targets' builds, decrypted as they
// are built) and returns its values by key: data decoded from base64,
// with stringData over it. false when no render holds it.
func (r *Repo) ClusterSecret(ctx context.Context, cluster, namespace, name string) (map[string]string, bool) {
	roots := []string{cluster}
	if cluster == AllClusters {
		roots = roots[:0]
		for _, c := range r.Clusters {
			roots = append(roots, c.Name)
		}
	}
	for _, c := range roots {
		if o := r.rootVars[c][objectKey{"Secret", namespace, name}]; o != nil {
			return secretValues(o), true
		}
	}
	for _, t := range r.Targets {
		if !inCluster(t, cluster) {
			continue
		}
		res, err := r.build(ctx, t)
		if err != nil {
			continue
		}
		for _, o := range res.Set.Objects {
			if o.GetAPIVersion() == "v1" && o.GetKind() == "Secret" && o.GetNamespace() == namespace && o.GetName() == name {
				return secretValues(o), true
			}
		}
	}
	return nil, false
}

// secretValues are a Secret's values: data decoded, stringData over it.
// A data value that is not base64 is taken as it is.
func secretValues(s *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	data, _, _ := unstructured.NestedStringMap(s.Object, "data")
	for k, v := range data {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			out[k] = string(b)
		} else {
			out[k] = v
		}
	}
	plain, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
	maps.Copy(out, plain)
	return out
}
