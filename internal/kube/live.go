package kube

import (
	"context"
	"errors"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// CompareOptions control how a target's render is compared with its cluster.
type CompareOptions struct {
	// Target names the target, and so its inventory.
	Target string
	// InventoryNamespace holds the inventory Secret.
	InventoryNamespace string
	// Concurrency bounds the requests in flight.
	Concurrency int
	// DryRunAll dry-runs every object (missing ones too, where their
	// Namespace and kind exist). By default an object is dry-run only when
	// it exists and applying it could change something: objects the
	// inventory records as applied with the same configuration, whose
	// fields ferry still owns exactly as it left them, are not.
	DryRunAll bool
	// LeaveOut is ApplyOptions.LeaveOut: objects it gives a reason for
	// are not compared, and are listed in Comparison.LeftOut.
	LeaveOut func(*unstructured.Unstructured) string
}

// DefaultCompareOptions returns the options `ferry drift` uses.
func DefaultCompareOptions() CompareOptions {
	return CompareOptions{InventoryNamespace: DefaultInventoryNS, Concurrency: 16}
}

// LiveObject is one rendered object next to what the cluster holds.
type LiveObject struct {
	ID manifest.ID
	// Desired is the object as ferry applies it: namespace defaulted,
	// labelled as a member of the target's ApplySet.
	Desired *unstructured.Unstructured
	// Live is the object in the cluster; nil when it does not exist.
	Live *unstructured.Unstructured
	// DryRun is what a server-side apply of Desired by field manager
	// "ferry", taking fields from other managers, would make of it. nil
	// when it was not dry-run (see CompareOptions.DryRunAll) or the
	// dry-run failed (Err).
	DryRun *unstructured.Unstructured
	// Member: the live object is labelled as a member of this target's
	// ApplySet. PartOf is its part-of label when it is not (another
	// ApplySet's id, or "").
	Member bool
	PartOf string
	// Recorded: the inventory has a record of ferry applying the object.
	Recorded bool
	// ConfigChanged: the configuration differs from the one ferry last
	// applied (always true when not recorded).
	ConfigChanged bool
	// FieldsChanged: the fields ferry's manager owns on the live object
	// differ from those it owned after its last apply (always true when
	// not recorded or not live). Ownership moves away from ferry when
	// another manager changes or takes a field, so an unchanged field set
	// means every field ferry owns still holds the value ferry gave it.
	FieldsChanged bool
	// Unchanged: applying the object would change nothing. It is recorded,
	// live, a member, and neither its configuration nor ferry's fields
	// changed. Never true for a Secret with stringData: the server records
	// ownership of stringData, not of the data it becomes, so edits of
	// the data leave ferry's fields as they were. Also true of a Helm hook
	// that ran and was deleted by its hook-delete-policy (HookDeleted),
	// not live, while its configuration is the one that ran: Apply would
	// leave it deleted.
	Unchanged bool
	// HookDeleted: the object is a Helm hook that succeeded and that
	// ferry then deleted by its hook-delete-policy (hook-succeeded), as
	// the inventory records.
	HookDeleted bool
	// Err is why the object could not be read or dry-run (an API error
	// about this object alone).
	Err error
}

// Comparison is a target's render next to its cluster and inventory.
type Comparison struct {
	Target string
	// Cluster is the API server's address.
	Cluster   string
	Inventory *Inventory
	// Objects are the rendered objects, in apply order.
	Objects []*LiveObject
	// Orphans are the live members of the ApplySet no longer rendered,
	// ordered by identity.
	Orphans []*unstructured.Unstructured
	// LeftOut are the rendered objects CompareOptions.LeaveOut left out,
	// with the reason.
	LeftOut []Change
}

// Compare reads the target's inventory and the live state of every
// rendered object, and dry-runs the objects applying could change: one
// list per kind for the ApplySet's members, a read of each rendered object
// that is not one, and a server-side dry-run apply of each object that may
// differ, at most opts.Concurrency requests in flight. Nothing is written.
//
// An error about one object (forbidden, invalid) is kept on that object;
// the returned error is for what stops the whole comparison: the cluster
// cannot be reached, the inventory cannot be read, a kind is unknown.
func (c *Client) Compare(ctx context.Context, objs []*unstructured.Unstructured, opts CompareOptions) (*Comparison, error) {
	opts = opts.withDefaults()
	if err := c.reachable(ctx); err != nil {
		return nil, err
	}
	inv, err := c.ReadInventory(ctx, opts.Target, opts.InventoryNamespace)
	if err != nil {
		return nil, err
	}
	desired, leftOut, err := c.prepare(objs, inv.ID, opts.LeaveOut, nil)
	if err != nil {
		return nil, err
	}
	members, err := c.listMembers(ctx, inv, desired, nil)
	if err != nil {
		return nil, err
	}
	cmp := &Comparison{Target: opts.Target, Cluster: c.Host, Inventory: inv, LeftOut: leftOut}
	byObject, fetch := cmp.pair(desired, inv, members)
	if err := c.readNonMembers(ctx, fetch, byObject, opts.Concurrency); err != nil {
		return nil, err
	}
	dry := assess(desired, byObject, inv, opts.DryRunAll)
	if err := c.dryRunEach(ctx, dry, byObject, opts.Concurrency); err != nil {
		return nil, err
	}
	cmp.Orphans = orphans(desired, members)
	return cmp, nil
}

// withDefaults fills in, from DefaultCompareOptions, the options a caller
// left zero.
func (opts CompareOptions) withDefaults() CompareOptions {
	def := DefaultCompareOptions()
	if opts.InventoryNamespace == "" {
		opts.InventoryNamespace = def.InventoryNamespace
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = def.Concurrency
	}
	return opts
}

// pair adds a LiveObject per desired object to the comparison, in apply
// order, with what the inventory records of it and its live state when it
// is a member. It returns the LiveObject of each object, and the objects
// of a known kind that are not members and must be read one by one.
func (cmp *Comparison) pair(desired []*object, inv *Inventory, members map[string]*unstructured.Unstructured) (map[*object]*LiveObject, []*object) {
	byObject := make(map[*object]*LiveObject, len(desired))
	var fetch []*object
	for _, o := range desired {
		lo := &LiveObject{ID: o.id, Desired: o.u}
		rec, ok := inv.Records[o.key]
		lo.Recorded = ok
		lo.ConfigChanged = !ok || rec.Config != o.config
		lo.HookDeleted = ok && rec.Deleted && o.hook.phase != ""
		if live := members[o.key]; live != nil {
			lo.Live = live
		} else if o.mapping != nil {
			fetch = append(fetch, o)
		}
		byObject[o] = lo
		cmp.Objects = append(cmp.Objects, lo)
	}
	return byObject, fetch
}

// readNonMembers reads the rendered objects that are not members: missing
// (Live stays nil), or someone else's.
func (c *Client) readNonMembers(ctx context.Context, fetch []*object, byObject map[*object]*LiveObject, concurrency int) error {
	return c.each(ctx, fetch, concurrency, func(ctx context.Context, o *object) error {
		u, err := c.resource(o).Get(ctx, o.u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return keep(byObject[o], &ObjectError{ID: o.id, Err: err})
		default:
			byObject[o].Live = u
		}
		return nil
	})
}

// assess sets what the live state says of each object (membership,
// ferry's fields, unchanged) and returns those to dry-run: every object
// of a known kind with dryRunAll, otherwise the live ones that applying
// could change; never one whose read failed.
func assess(desired []*object, byObject map[*object]*LiveObject, inv *Inventory, dryRunAll bool) []*object {
	var dry []*object
	for _, o := range desired {
		lo := byObject[o]
		if lo.Live != nil {
			lo.PartOf = lo.Live.GetLabels()[LabelPartOf]
			lo.Member = lo.PartOf == inv.ID
			if lo.Member {
				lo.PartOf = ""
			}
			rec := inv.Records[o.key]
			lo.FieldsChanged = !lo.Recorded || rec.Fields != ownedFieldsHash(lo.Live)
			lo.Unchanged = lo.Member && lo.Recorded && !lo.ConfigChanged && !lo.FieldsChanged && !stringDataSecret(o.u)
		} else {
			lo.FieldsChanged = true
			lo.Unchanged = lo.HookDeleted && !lo.ConfigChanged && lo.Err == nil
		}
		if o.mapping != nil && lo.Err == nil && (dryRunAll || (lo.Live != nil && !lo.Unchanged)) {
			dry = append(dry, o)
		}
	}
	return dry
}

// dryRunEach server-side dry-run applies each object and keeps the result
// (or the API's error about it) on its LiveObject.
func (c *Client) dryRunEach(ctx context.Context, dry []*object, byObject map[*object]*LiveObject, concurrency int) error {
	return c.each(ctx, dry, concurrency, func(ctx context.Context, o *object) error {
		res, err := c.patch(ctx, o, true, true)
		if err != nil {
			return keep(byObject[o], &ObjectError{ID: o.id, Err: err})
		}
		byObject[o].DryRun = res
		return nil
	})
}

// orphans are the live members no desired object stands for, ordered by
// identity.
func orphans(desired []*object, members map[string]*unstructured.Unstructured) []*unstructured.Unstructured {
	want := make(map[string]bool, len(desired))
	for _, o := range desired {
		want[o.key] = true
	}
	var out []*unstructured.Unstructured
	for key, u := range members {
		if !want[key] {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return manifest.Less(manifest.IDOf(out[i]), manifest.IDOf(out[j]))
	})
	return out
}

// keep stores an API server's answer about one object on it, and passes
// any other error (the connection broke) on, which stops the comparison.
func keep(lo *LiveObject, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		lo.Err = err
		return nil
	}
	return err
}

// stringDataSecret reports a core Secret that sets stringData.
func stringDataSecret(u *unstructured.Unstructured) bool {
	if u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return false
	}
	sd, ok := u.Object["stringData"].(map[string]any)
	return ok && len(sd) > 0
}

// serverSetMetadata are the metadata fields the API server sets.
var serverSetMetadata = []string{
	"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
}

// Normalize returns a copy of a live or dry-run object without what the
// API server and controllers set on their own: managedFields,
// resourceVersion, uid, generation, creationTimestamp, deletion
// timestamps, selfLink, the deployment.kubernetes.io/revision annotation
// and status. Two normalized objects are equal when a user would call
// them the same.
func Normalize(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	out := u.DeepCopy()
	for _, f := range serverSetMetadata {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	delete(out.Object, "status")
	if a := out.GetAnnotations(); a != nil {
		delete(a, "deployment.kubernetes.io/revision")
		if len(a) == 0 {
			unstructured.RemoveNestedField(out.Object, "metadata", "annotations")
		} else {
			out.SetAnnotations(a)
		}
	}
	return out
}
