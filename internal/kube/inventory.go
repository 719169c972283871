package kube

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ApplySet (KEP-3659) labels and annotations, as kubectl reads them.
const (
	LabelApplySetID      = "applyset.kubernetes.io/id"
	LabelPartOf          = "applyset.kubernetes.io/part-of"
	AnnotationTooling    = "applyset.kubernetes.io/tooling"
	AnnotationGroupKinds = "applyset.kubernetes.io/contains-group-kinds"
	AnnotationNamespaces = "applyset.kubernetes.io/additional-namespaces"
	AnnotationTarget     = "ferry.dev/target"
	AnnotationRevision   = "ferry.dev/revision"
	// AnnotationVerify records the signature verification the last apply
	// was held to (HEAD, Tag, TagAndHEAD): the next apply is held to it
	// at least, whatever its own revision asks.
	AnnotationVerify      = "ferry.dev/verify"
	AnnotationAppliedAt   = "ferry.dev/applied-at"
	AnnotationPrune       = "ferry.dev/prune"
	AnnotationFluxPrune   = "kustomize.toolkit.fluxcd.io/prune"
	PruneDisabled         = "disabled"
	Tooling               = "ferry/v1"
	FieldManager          = "ferry"
	DefaultInventoryNS    = "ferry-system"
	inventoryRecordsKey   = "objects"
	inventoryParentPrefix = "ferry-"
)

// Inventory is a target's ApplySet parent: a Secret holding which kinds
// and namespaces the set spans, the revision last applied, and a record
// per member that lets a re-apply skip what has not changed.
type Inventory struct {
	Name      string
	Namespace string
	// ID is the ApplySet id the members are labelled with.
	ID         string
	GroupKinds []schema.GroupKind
	// Namespaces are the namespaces members live in.
	Namespaces []string
	Revision   string
	// Verify is the verification mode the revision was applied under.
	Verify    string
	AppliedAt time.Time
	// Records maps a member's identity to what ferry last applied to it.
	Records map[string]Record
	Exists  bool
	// ResourceVersion is the Secret's, as read: it changes with every
	// write, so a run can tell whether another wrote it meanwhile.
	ResourceVersion string
}

// Record is what ferry knows about one member after applying it.
type Record struct {
	// Config is the hash of the configuration ferry applied.
	Config string `json:"c"`
	// Fields is the hash of the fields ferry's manager owned afterwards.
	// If either changes, the object is applied again.
	Fields string `json:"f"`
	// Deleted: a hook that succeeded and was deleted by its
	// hook-delete-policy (hook-succeeded). While its configuration stays
	// Config, Apply leaves it deleted and drift does not call it missing.
	Deleted bool `json:"d,omitempty"`
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// ParentName is the name of a target's inventory Secret.
func ParentName(target string) string {
	n := nonName.ReplaceAllString(strings.ToLower(target), "-")
	n = strings.Trim(n, "-")
	name := inventoryParentPrefix + n
	if len(name) > 63 || n != strings.ToLower(target) {
		// Keep names unique when sanitizing folded two targets together.
		sum := sha256.Sum256([]byte(target))
		if len(name) > 52 {
			name = strings.TrimRight(name[:52], "-")
		}
		name += "-" + hex.EncodeToString(sum[:])[:10]
	}
	return name
}

// ApplySetID computes the KEP-3659 id of a parent:
// base64url(sha256(<name>.<namespace>.<kind>.<group>)).
func ApplySetID(name, namespace, kind, group string) string {
	sum := sha256.Sum256([]byte(name + "." + namespace + "." + kind + "." + group))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// ReadInventory reads a target's parent; a missing parent is an empty
// inventory (Exists false).
func (c *Client) ReadInventory(ctx context.Context, target, namespace string) (*Inventory, error) {
	return c.readInventory(ctx, target, namespace, nil)
}

// readInventory reads the parent from the snapshot when it holds it, and
// from the cluster otherwise.
func (c *Client) readInventory(ctx context.Context, target, namespace string, snap *snapshot) (*Inventory, error) {
	inv := &Inventory{Name: ParentName(target), Namespace: namespace, Records: map[string]Record{}}
	inv.ID = ApplySetID(inv.Name, namespace, "Secret", "")
	s := snap.inventory(namespace, inv.Name)
	if s == nil {
		var err error
		s, err = c.clientset.CoreV1().Secrets(namespace).Get(ctx, inv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return inv, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading inventory Secret/%s/%s: %w", namespace, inv.Name, err)
		}
	}
	inv.Exists, inv.ResourceVersion = true, s.ResourceVersion
	if got := s.Labels[LabelApplySetID]; got != inv.ID {
		return nil, fmt.Errorf("Secret/%s/%s exists but is not ferry's inventory of target %q (label %s is %q)", namespace, inv.Name, target, LabelApplySetID, got)
	}
	if t := s.Annotations[AnnotationTooling]; t != "" && !strings.HasPrefix(t, "ferry/") {
		return nil, fmt.Errorf("Secret/%s/%s: ApplySet is managed by %q, not ferry", namespace, inv.Name, t)
	}
	for _, gk := range splitList(s.Annotations[AnnotationGroupKinds]) {
		inv.GroupKinds = append(inv.GroupKinds, schema.ParseGroupKind(gk))
	}
	inv.Namespaces = splitList(s.Annotations[AnnotationNamespaces])
	inv.Namespaces = addString(inv.Namespaces, namespace)
	inv.Revision = s.Annotations[AnnotationRevision]
	inv.Verify = s.Annotations[AnnotationVerify]
	if t, err := time.Parse(time.RFC3339, s.Annotations[AnnotationAppliedAt]); err == nil {
		inv.AppliedAt = t
	}
	if raw := s.Data[inventoryRecordsKey]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &inv.Records); err != nil {
			// Records only speed up re-applies; without them everything is
			// applied again, which is always safe.
			inv.Records = map[string]Record{}
		}
	}
	return inv, nil
}

// writeInventory server-side applies the parent with the given kinds,
// namespaces and records; with ifVersion, only if the Secret is still at
// that resourceVersion (a Conflict error otherwise).
func (c *Client) writeInventory(ctx context.Context, target string, inv *Inventory, ifVersion string) error {
	if err := c.ensureNamespace(ctx, inv.Namespace, false); err != nil {
		return err
	}
	gks := make([]string, 0, len(inv.GroupKinds))
	for _, gk := range inv.GroupKinds {
		gks = append(gks, gk.String())
	}
	sort.Strings(gks)
	var extra []string
	for _, ns := range inv.Namespaces {
		if ns != inv.Namespace && ns != "" {
			extra = append(extra, ns)
		}
	}
	sort.Strings(extra)
	records, err := json.Marshal(inv.Records)
	if err != nil {
		return err
	}
	annotations := map[string]any{
		AnnotationTooling:    Tooling,
		AnnotationGroupKinds: strings.Join(slices.Compact(gks), ","),
		AnnotationNamespaces: strings.Join(slices.Compact(extra), ","),
		AnnotationTarget:     target,
	}
	if inv.Revision != "" {
		annotations[AnnotationRevision] = inv.Revision
	}
	if inv.Verify != "" {
		annotations[AnnotationVerify] = inv.Verify
	}
	if !inv.AppliedAt.IsZero() {
		annotations[AnnotationAppliedAt] = inv.AppliedAt.UTC().Format(time.RFC3339)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":        inv.Name,
			"namespace":   inv.Namespace,
			"labels":      map[string]any{LabelApplySetID: inv.ID},
			"annotations": annotations,
		},
		"type": "ferry.dev/inventory",
		"data": map[string]any{inventoryRecordsKey: base64.StdEncoding.EncodeToString(records)},
	}}
	if ifVersion != "" {
		parent.SetResourceVersion(ifVersion)
	}
	body, err := json.Marshal(parent.Object)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptrTrue()}
	s, err := c.clientset.CoreV1().Secrets(inv.Namespace).Patch(ctx, inv.Name, types.ApplyPatchType, body, opts)
	if err != nil {
		return fmt.Errorf("writing inventory Secret/%s/%s: %w", inv.Namespace, inv.Name, err)
	}
	inv.Exists, inv.ResourceVersion = true, s.ResourceVersion
	return nil
}

func (c *Client) ensureNamespace(ctx context.Context, name string, dryRun bool) error {
	if _, ok := c.namespaces.Load(name); ok {
		return nil
	}
	_, err := c.clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		c.namespaces.Store(name, true)
		return nil
	}
	if dryRun {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("Namespace/%s: %w", name, err)
	}
	body := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`)
	if _, err := c.clientset.CoreV1().Namespaces().Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("creating Namespace/%s: %w", name, err)
	}
	c.namespaces.Store(name, true)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func addString(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func ptrTrue() *bool { b := true; return &b }

// AnnotationNotifiedDrift, on a target's inventory Secret, is the drift
// state last notified for the target ("in-sync", or "drift:" and a hash
// of what drifted), so ferry drift sends an event once per change of
// state rather than on every scheduled run. It is written by its own
// field manager, NotifyFieldManager, so an apply (manager ferry) keeps it.
const (
	AnnotationNotifiedDrift = "ferry.dev/notified-drift"
	NotifyFieldManager      = "ferry-notify"
)

// NotifiedDrift reads the drift state last notified for target (see
// AnnotationNotifiedDrift); exists is false when the target has no
// inventory.
func (c *Client) NotifiedDrift(ctx context.Context, target, namespace string) (state string, exists bool, err error) {
	s, err := c.clientset.CoreV1().Secrets(namespace).Get(ctx, ParentName(target), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading inventory Secret/%s/%s: %w", namespace, ParentName(target), err)
	}
	return s.Annotations[AnnotationNotifiedDrift], true, nil
}

// SetNotifiedDrift records state as the drift state last notified for
// target, on its existing inventory Secret.
func (c *Client) SetNotifiedDrift(ctx context.Context, target, namespace, state string) error {
	name := ParentName(target)
	body, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":        name,
			"namespace":   namespace,
			"annotations": map[string]any{AnnotationNotifiedDrift: state},
		},
	})
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: NotifyFieldManager, Force: ptrTrue()}
	if _, err := c.clientset.CoreV1().Secrets(namespace).Patch(ctx, name, types.ApplyPatchType, body, opts); err != nil {
		return fmt.Errorf("writing inventory Secret/%s/%s: %w", namespace, name, err)
	}
	return nil
}
