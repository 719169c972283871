package kube

import (
	"context"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// snapshot is what the plans of a run's targets on one cluster read: their
// inventories and the metadata of their members, read with one list per
// inventory namespace and one per kind (per idsPerList targets), where
// reading target by target costs a read per target and a list per kind
// and target. What could not be listed (no right to list a kind cluster
// wide, a kind that is not served) is not in it, and the target reads it
// for itself, with its own errors.
type snapshot struct {
	// inventories: namespace -> Secret name -> Secret, of the Secrets
	// labelled as ApplySet parents (one that is absent is read by name:
	// a Secret of that name without the label is someone else's).
	inventories map[string]map[string]*corev1.Secret
	// leases: namespace -> Lease name -> Lease, for each namespace whose
	// Leases were listed: taking a target's Lease starts from it instead
	// of reading it (a stale one only costs the usual read).
	leases map[string]map[string]*coordinationv1.Lease
	// members: kind -> ApplySet id -> the members' metadata, for each kind
	// listed.
	members map[schema.GroupKind]map[string][]*unstructured.Unstructured

	// namespaces are the cluster's, listed when a first plan needs them
	// (one with objects to apply), and shared by the others.
	nsOnce     sync.Once
	namespaces map[string]bool
	nsErr      error
}

// snapTarget is what a snapshot needs to know of a target.
type snapTarget struct {
	name, inventoryNamespace string
	objects                  []*unstructured.Unstructured
}

// idsPerList bounds the ApplySet ids one label selector names (each is 55
// characters; the request line stays well under the API server's limits).
const idsPerList = 40

// parents are the ApplySet parents (inventory Secrets) and the Leases
// of one inventory namespace, as listed; nil where a list failed.
type parents struct {
	inventories map[string]*corev1.Secret
	leases      map[string]*coordinationv1.Lease
	done        chan struct{}
}

// Warm starts reading, in the background, what a fleet's preflight reads
// first on this cluster: the API server's version and kinds, and the
// inventories and Leases of namespace ns. A run calls it before it
// renders, so that these reads overlap the render. It reports nothing:
// the preflight meets any error again, and reports it.
func (c *Client) Warm(ctx context.Context, ns string) {
	c.parentsOf(ctx, ns, false)
}

// parentsOf starts listing ns's parents unless a listing has started;
// with take, it waits for that listing and hands it over (a later one
// lists again: a client may serve several runs).
func (c *Client) parentsOf(ctx context.Context, ns string, take bool) *parents {
	c.mu.Lock()
	p, ok := c.listedParents[ns]
	if !ok {
		p = &parents{done: make(chan struct{})}
		if c.listedParents == nil {
			c.listedParents = map[string]*parents{}
		}
		c.listedParents[ns] = p
		go func() {
			defer close(p.done)
			if c.reachable(ctx) != nil {
				return
			}
			// The first mapping reads the API server's kinds, which every
			// plan maps its objects with.
			_, _ = c.mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"})
			if l, err := c.clientset.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelApplySetID}); err == nil {
				p.inventories = map[string]*corev1.Secret{}
				for i := range l.Items {
					p.inventories[l.Items[i].Name] = &l.Items[i]
				}
			}
			if l, err := c.clientset.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{}); err == nil {
				p.leases = map[string]*coordinationv1.Lease{}
				for i := range l.Items {
					p.leases[l.Items[i].Name] = &l.Items[i]
				}
			}
		}()
	}
	if take {
		delete(c.listedParents, ns)
	}
	c.mu.Unlock()
	if !take {
		return nil
	}
	select {
	case <-p.done:
		return p
	case <-ctx.Done():
		return &parents{}
	}
}

// readSnapshot lists the inventories and members of targets. It never
// fails: what a list could not read is left for the targets to read.
func (c *Client) readSnapshot(ctx context.Context, targets []snapTarget) *snapshot {
	s := &snapshot{inventories: map[string]map[string]*corev1.Secret{}, leases: map[string]map[string]*coordinationv1.Lease{}, members: map[schema.GroupKind]map[string][]*unstructured.Unstructured{}}
	gks := map[schema.GroupKind]bool{}
	var ids []string
	listed := map[string]bool{}
	for _, t := range targets {
		ns := t.inventoryNamespace
		if !listed[ns] {
			listed[ns] = true
			p := c.parentsOf(ctx, ns, true)
			if p.inventories != nil {
				s.inventories[ns] = p.inventories
			}
			if p.leases != nil {
				s.leases[ns] = p.leases
			}
		}
		name := ParentName(t.name)
		ids = append(ids, ApplySetID(name, ns, "Secret", ""))
		if sec := s.inventories[ns][name]; sec != nil {
			for _, gk := range splitList(sec.Annotations[AnnotationGroupKinds]) {
				gks[schema.ParseGroupKind(gk)] = true
			}
		}
		for _, u := range t.objects {
			gks[u.GroupVersionKind().GroupKind()] = true
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for gk := range gks {
		m, err := c.mapper.RESTMapping(gk)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if byID, ok := listMembersOf(ctx, c.metadata, m, ids); ok {
				mu.Lock()
				s.members[gk] = byID
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return s
}

// listMembersOf lists the members of kind m of the ApplySets ids, by id;
// false when a list failed.
func listMembersOf(ctx context.Context, md metadata.Interface, m *meta.RESTMapping, ids []string) (map[string][]*unstructured.Unstructured, bool) {
	byID := map[string][]*unstructured.Unstructured{}
	for start := 0; start < len(ids); start += idsPerList {
		chunk := ids[start:min(start+idsPerList, len(ids))]
		sel := LabelPartOf + " in (" + strings.Join(chunk, ",") + ")"
		l, err := md.Resource(m.Resource).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, false
		}
		for i := range l.Items {
			u := memberOf(&l.Items[i], m)
			id := u.GetLabels()[LabelPartOf]
			byID[id] = append(byID[id], u)
		}
	}
	return byID, true
}

// memberOf is a listed member's metadata as an object of its kind: what
// planning a target reads of a member (identity, labels, annotations,
// uid, resourceVersion, managed fields).
func memberOf(p *metav1.PartialObjectMetadata, m *meta.RESTMapping) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(m.GroupVersionKind)
	u.SetName(p.Name)
	u.SetNamespace(p.Namespace)
	u.SetUID(p.UID)
	u.SetResourceVersion(p.ResourceVersion)
	u.SetGeneration(p.Generation)
	u.SetLabels(p.Labels)
	u.SetAnnotations(p.Annotations)
	u.SetManagedFields(p.ManagedFields)
	if p.DeletionTimestamp != nil {
		u.SetDeletionTimestamp(p.DeletionTimestamp)
	}
	return u
}

// inventory is the listed parent Secret, nil when the snapshot has none
// (or there is no snapshot).
func (s *snapshot) inventory(namespace, name string) *corev1.Secret {
	if s == nil {
		return nil
	}
	return s.inventories[namespace][name]
}

// membersOf are the listed members of ApplySet id of kind gk, and whether
// that kind was listed.
func (s *snapshot) membersOf(gk schema.GroupKind, id string) ([]*unstructured.Unstructured, bool) {
	if s == nil {
		return nil, false
	}
	byID, ok := s.members[gk]
	return byID[id], ok
}

// lease is the listed Lease (nil when there is none), and whether the
// namespace's Leases were listed.
func (s *snapshot) lease(namespace, name string) (*coordinationv1.Lease, bool) {
	if s == nil {
		return nil, false
	}
	byName, ok := s.leases[namespace]
	if !ok {
		return nil, false
	}
	if l := byName[name]; l != nil {
		return l.DeepCopy(), true
	}
	return nil, true
}
