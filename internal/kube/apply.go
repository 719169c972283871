package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// ApplyOptions control one target's apply.
type ApplyOptions struct {
	// Target names the target; it names the inventory and the lease.
	Target string
	// Revision is the Git revision being applied, recorded on the inventory.
	Revision string
	// IsAncestor reports whether commit a is an ancestor of commit b; with
	// it, applying a revision older than the recorded one is refused.
	IsAncestor    func(a, b string) (bool, error)
	AllowRollback bool
	// InventoryNamespace holds the inventory Secret and the lease.
	InventoryNamespace string
	Prune              bool
	// MassPruneRatio is the share of the inventory a prune may delete
	// without AllowMassPrune (default 0.5).
	MassPruneRatio float64
	AllowMassPrune bool
	ForceConflicts bool
	// DryRun does everything but write (the server dry-runs each apply).
	DryRun  bool
	Wait    bool
	Timeout time.Duration
	Lock    LockOptions
	// Concurrency bounds the requests in flight within a wave.
	Concurrency int
	// LeaveOut, when set, is asked about each object whose kind neither
	// the cluster nor a CRD of the render defines. A reason leaves the
	// object out (a Skipped change with that reason) instead of stopping
	// the run; "" keeps the error. ferry passes the Flux objects it acts
	// on itself (see config.ActsOn).
	LeaveOut func(*unstructured.Unstructured) string
	// Provided are the CRDs and Namespaces that targets applied before
	// this one in the same run create on this cluster: objects of this
	// target that need them are checked against them, as against the
	// target's own, instead of failing a dry-run that runs before they
	// exist (a preflight of every target before the first write).
	Provided []*unstructured.Unstructured

	// planned is the target's plan from PreflightFleet: used as it is
	// when the inventory has not changed since it was read.
	planned *targetPlan
	// reads, when set, holds what planning the target reads (set by
	// PreflightFleet).
	reads *snapshot
}

// DefaultApplyOptions returns the options a plain `ferry apply` uses.
func DefaultApplyOptions() ApplyOptions {
	return ApplyOptions{
		InventoryNamespace: DefaultInventoryNS,
		MassPruneRatio:     0.5,
		Timeout:            5 * time.Minute,
		Lock:               LockOptions{Wait: 2 * time.Minute, Duration: 60 * time.Second},
		Concurrency:        16,
	}
}

// withDefaults fills in, from DefaultApplyOptions, the options a caller
// left zero.
func withDefaults(opts ApplyOptions) ApplyOptions {
	def := DefaultApplyOptions()
	if opts.InventoryNamespace == "" {
		opts.InventoryNamespace = def.InventoryNamespace
	}
	if opts.MassPruneRatio == 0 {
		opts.MassPruneRatio = def.MassPruneRatio
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = def.Concurrency
	}
	return opts
}

// object is one desired object on its way to the cluster.
type object struct {
	u       *unstructured.Unstructured
	id      manifest.ID
	key     string
	wave    int
	hook    hook              // a Helm hook's phase, weight, delete policies
	replace bool              // a live hook that before-hook-creation replaces
	mapping *meta.RESTMapping // nil until its CRD is established
	config  string            // hash of the applied configuration
	live    *unstructured.Unstructured
	checked bool // dry-run done
}

// Apply server-side applies objs as one target: everything is mapped and
// dry-run before the first write; then the waves of manifest.Wave (CRDs,
// Namespaces, Helm pre hooks, other cluster-scoped objects, namespaced
// objects) are applied, concurrently within each wave; then, when asked,
// it waits for health; then the Helm post hooks are applied; then it
// prunes what the inventory has and the render no longer does. The first
// wave that fails stops the run: the waves after it are not applied.
//
// Hooks (objects annotated manifest.HelmHookAnnotation) are applied in
// steps by helm.sh/hook-weight, lowest first. With Wait, each step is
// awaited (kstatus Current: a Job completed) before the next, and a hook
// that fails fails the target at once. Their helm.sh/hook-delete-policy
// is honoured: before-hook-creation (the default) deletes a live hook
// that is to be applied again and creates it anew; with Wait,
// hook-succeeded and hook-failed delete it after it ran. Without Wait,
// hooks are applied in order but not awaited, and only
// before-hook-creation applies. A hook of both phases (HookPrePost) is
// applied with the pre hooks and again with the post hooks, as Helm runs
// it on both events.
func (c *Client) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) (cs *ChangeSet, err error) {
	opts = withDefaults(opts)
	cs = &ChangeSet{Target: opts.Target, Revision: opts.Revision, DryRun: opts.DryRun}

	if err := c.reachable(ctx); err != nil {
		return cs, err
	}
	if !opts.DryRun {
		// A target already at this revision whose objects are all as
		// ferry left them costs reads only: no Lease, no inventory write.
		// (PreflightFleet has asked already for the targets it plans.)
		if opts.planned == nil {
			if done, err := c.alreadyApplied(ctx, objs, opts, cs); done || err != nil {
				return cs, err
			}
		}
		var snap *snapshot
		if opts.planned != nil {
			snap = opts.planned.reads
		}
		lock, err := c.acquire(ctx, opts.Target, opts.InventoryNamespace, opts.Lock, snap)
		if err != nil {
			return cs, err
		}
		defer func() {
			if rerr := lock.Release(context.WithoutCancel(ctx)); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}

	plan, verified, err := c.lockedPlan(ctx, objs, opts)
	for {
		if plan != nil {
			cs.PreviousRevision = plan.inv.Revision
		}
		if err != nil {
			return cs, err
		}
		err = c.carryOut(ctx, plan, verified, opts, cs)
		if verified || !apierrors.IsConflict(err) {
			return cs, err
		}
		// The inventory changed since the preflight read it: nothing was
		// written (its update was the plan's one write), so plan again.
		cs.Changes = nil
		plan, err = c.planApply(ctx, objs, opts)
		verified = true
	}
}

// carryOut writes what a plan says: the inventory superset, the objects
// wave by wave, health, pruning, the final inventory. An unverified plan
// (see lockedPlan) writes only the final inventory, on condition that it
// is still as planned.
func (c *Client) carryOut(ctx context.Context, plan *targetPlan, verified bool, opts ApplyOptions, cs *ChangeSet) error {
	inv, st := plan.inv, plan.st
	desired, prune, kept, toApply, unchanged := st.desired, st.prune, st.kept, st.toApply, st.unchanged
	cs.Changes = append(cs.Changes, st.leftOut...)
	for _, o := range unchanged {
		cs.Changes = append(cs.Changes, Change{Object: o.id, Action: Unchanged})
	}
	if opts.DryRun {
		for _, o := range toApply {
			ch := Change{Object: o.id, Action: Configured}
			switch {
			case o.replace:
				ch.Action, ch.Reason = Replaced, "hook-delete-policy "+HookBeforeCreation
			case o.live == nil:
				ch.Action = Created
			}
			cs.Changes = append(cs.Changes, ch)
		}
		cs.Changes = append(cs.Changes, pruneChanges(prune, kept, opts)...)
		sortChanges(cs.Changes)
		return nil
	}

	// Superset the inventory before writing anything it must track (a
	// write only when there is something new to track).
	super := *inv
	super.GroupKinds, super.Namespaces = union(inv, desired)
	if !inv.Exists || !sameSet(super.GroupKinds, inv.GroupKinds) || !sameSet(super.Namespaces, inv.Namespaces) {
		if err := c.writeInventory(ctx, opts.Target, &super, ""); err != nil {
			return err
		}
	}

	records := map[string]Record{}
	for _, o := range unchanged {
		records[o.key] = inv.Records[o.key]
	}
	applyErr := c.applyWaves(ctx, toApply, opts, cs, records, manifest.WaveCRDs, manifest.WaveNamespaced)
	if applyErr == nil && opts.Wait {
		cs.NotReady, applyErr = c.wait(ctx, desired, opts.Timeout)
	}
	if applyErr == nil {
		applyErr = c.applyWaves(ctx, toApply, opts, cs, records, manifest.WavePostHooks, manifest.WavePostHooks)
	}

	final := super
	final.Records = records
	if applyErr == nil && opts.Prune {
		applyErr = c.prune(ctx, prune, cs, opts.Concurrency)
	}
	cs.Changes = append(cs.Changes, pruneChanges(nil, kept, opts)...)
	if !opts.Prune {
		cs.Changes = append(cs.Changes, pruneChanges(prune, nil, opts)...)
	}
	sortChanges(cs.Changes)
	if applyErr != nil {
		// Keep the superset (and the records of what did apply) so the next
		// run still knows every object this one may have created.
		_ = c.writeInventory(context.WithoutCancel(ctx), opts.Target, &final, "")
		return applyErr
	}
	// Shrink to what the cluster now holds: the rendered objects, plus what
	// pruning left in place.
	final.GroupKinds, final.Namespaces = union(&Inventory{Namespace: inv.Namespace}, desired)
	remaining := kept
	if !opts.Prune {
		remaining = append(remaining, prune...)
	}
	for _, o := range remaining {
		final.GroupKinds = addGK(final.GroupKinds, o.GroupVersionKind().GroupKind())
		if ns := o.GetNamespace(); ns != "" {
			final.Namespaces = addString(final.Namespaces, ns)
		}
	}
	final.Revision = opts.Revision
	final.AppliedAt = time.Now()
	ifVersion := ""
	if !verified {
		ifVersion = inv.ResourceVersion
	}
	return c.writeInventory(ctx, opts.Target, &final, ifVersion)
}

// targetState is a target's objects, prepared, against the members its
// inventory names.
type targetState struct {
	desired, toApply, unchanged []*object
	leftOut                     []Change
	prune, kept                 []*unstructured.Unstructured
}

// readState prepares objs, reads the live members of the inventory, and
// sorts the objects into those to apply and those unchanged, and the
// members into those to prune and those kept.
func (c *Client) readState(ctx context.Context, objs []*unstructured.Unstructured, inv *Inventory, opts ApplyOptions) (*targetState, error) {
	st := &targetState{}
	var err error
	if st.desired, st.leftOut, err = c.prepare(objs, inv.ID, opts.LeaveOut, opts.Provided); err != nil {
		return nil, err
	}
	live, err := c.listMembers(ctx, inv, st.desired, opts.reads)
	if err != nil {
		return nil, err
	}
	for _, o := range st.desired {
		o.live = live[o.key]
		o.replace = o.replaces()
	}
	if st.prune, st.kept, err = prunable(live, st.desired, opts); err != nil {
		return nil, err
	}
	st.toApply, st.unchanged = splitUnchanged(st.desired, inv)
	return st, nil
}

// targetPlan is one target's apply worked out before anything is
// written: its inventory as read, its objects against the live members,
// every check passed.
type targetPlan struct {
	inv *Inventory
	st  *targetState
	// reads is the snapshot the plan was read from, if any.
	reads *snapshot
}

// planApply reads a target's inventory and live members and runs every
// check that comes before a write: the rollback guard, mapping, the
// mass-prune guard, schemas, namespaces, and the server dry-run of what
// changes. The plan comes back with the error when the inventory was read.
func (c *Client) planApply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) (*targetPlan, error) {
	inv, err := c.readInventory(ctx, opts.Target, opts.InventoryNamespace, opts.reads)
	if err != nil {
		return nil, err
	}
	p := &targetPlan{inv: inv, reads: opts.reads}
	if err := checkRevision(inv.Revision, opts); err != nil {
		return p, err
	}
	if p.st, err = c.readState(ctx, objs, inv, opts); err != nil {
		return p, err
	}
	// Every object that can be dry-run now is; the rest need a Namespace
	// or CRD of this run and are checked against the render now and
	// dry-run in their wave.
	return p, c.preflight(ctx, p.st.toApply, p.st.desired, opts)
}

// lockedPlan is the plan Apply carries out, under the Lease: the one
// PreflightFleet made, when the inventory is as it was then (no other run
// wrote it since), else a new one. A planned target whose one write is its
// inventory (a new revision, every object unchanged) is not read again:
// that write is made on condition that the inventory is still as planned
// (verified false), and Apply plans again if it is not.
func (c *Client) lockedPlan(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) (p *targetPlan, verified bool, err error) {
	if p := opts.planned; p != nil && !opts.DryRun {
		if p.inventoryOnly() {
			return p, false, nil
		}
		inv, err := c.ReadInventory(ctx, opts.Target, opts.InventoryNamespace)
		if err != nil {
			return nil, false, err
		}
		if inv.Exists == p.inv.Exists && inv.ResourceVersion == p.inv.ResourceVersion {
			return p, true, nil
		}
	}
	opts.reads = nil // under the Lease, read afresh
	p, err = c.planApply(ctx, objs, opts)
	return p, true, err
}

// inventoryOnly reports a plan whose one write is the final inventory:
// every object unchanged, nothing to prune or keep, and the inventory
// already tracking exactly the rendered kinds and namespaces.
func (p *targetPlan) inventoryOnly() bool {
	inv, st := p.inv, p.st
	if st == nil || !inv.Exists || inv.ResourceVersion == "" {
		return false
	}
	if len(st.prune) > 0 || len(st.kept) > 0 || len(st.toApply) > 0 {
		return false
	}
	gks, nss := union(&Inventory{Namespace: inv.Namespace}, st.desired)
	return sameSet(gks, inv.GroupKinds) && sameSet(nss, inv.Namespaces)
}

// noop reports a plan with nothing to do: the target is at this revision
// already, and the plan's one write would be an inventory identical to
// the one there (see inventoryOnly), with a record for every object.
func (p *targetPlan) noop(opts ApplyOptions) bool {
	return opts.Revision != "" && p.inv.Revision == opts.Revision && p.inventoryOnly() && len(p.inv.Records) == len(p.st.unchanged)
}

// unchangedSet is the change set of a no-op plan: every object unchanged
// (and, with Wait, their health).
func (c *Client) unchangedSet(ctx context.Context, p *targetPlan, opts ApplyOptions, cs *ChangeSet) error {
	cs.PreviousRevision = p.inv.Revision
	cs.Changes = append(cs.Changes, p.st.leftOut...)
	for _, o := range p.st.unchanged {
		cs.Changes = append(cs.Changes, Change{Object: o.id, Action: Unchanged})
	}
	sortChanges(cs.Changes)
	if opts.Wait {
		var err error
		cs.NotReady, err = c.wait(ctx, p.st.desired, opts.Timeout)
		return err
	}
	return nil
}

// alreadyApplied reports a target that this revision has already been
// applied to and whose objects are all unchanged (same configuration,
// fields ferry owns as it left them), with nothing to prune and nothing new
// for the inventory to track. It only reads; cs gets the unchanged objects
// (and, with Wait, their health). Anything else is left to Apply's locked
// path, which reads again under the Lease.
func (c *Client) alreadyApplied(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions, cs *ChangeSet) (bool, error) {
	inv, err := c.ReadInventory(ctx, opts.Target, opts.InventoryNamespace)
	if err != nil || !inv.Exists || opts.Revision == "" || inv.Revision != opts.Revision {
		return false, nil // the locked path reports errors
	}
	// An object whose kind is not served yet has no live copy, so it is
	// among those to apply.
	st, err := c.readState(ctx, objs, inv, opts)
	if err != nil {
		return false, nil
	}
	p := &targetPlan{inv: inv, st: st}
	if !p.noop(opts) {
		return false, nil
	}
	return true, c.unchangedSet(ctx, p, opts, cs)
}

// sameSet reports two lists that hold the same elements, each once.
func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	set := make(map[T]bool, len(a))
	for _, x := range a {
		set[x] = true
	}
	for _, x := range b {
		if !set[x] {
			return false
		}
	}
	return true
}

// reachable fails fast, with the server's address, when the API server
// cannot be reached.
func (c *Client) reachable(ctx context.Context) error {
	if c.reached.Load() {
		return nil // once per client: the targets of a run share it
	}
	if err := c.clientset.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Host, err)
	}
	c.reached.Store(true)
	return nil
}

// RevisionError refuses to apply an older revision over a newer one.
type RevisionError struct {
	Target, Recorded, Applying string
}

func (e *RevisionError) Error() string {
	return fmt.Sprintf("target %q: revision %s is older than %s, which the cluster already has (pass --allow-rollback to apply it anyway)",
		e.Target, ShortRevision(e.Applying), ShortRevision(e.Recorded))
}

func checkRevision(recorded string, opts ApplyOptions) error {
	if recorded == "" || opts.Revision == "" || recorded == opts.Revision || opts.AllowRollback || opts.IsAncestor == nil {
		return nil
	}
	older, err := opts.IsAncestor(opts.Revision, recorded)
	if err != nil {
		return fmt.Errorf("target %q: cannot tell whether %s is older than the recorded %s (fetch more history, or pass --allow-rollback): %w",
			opts.Target, ShortRevision(opts.Revision), ShortRevision(recorded), err)
	}
	if older {
		return &RevisionError{Target: opts.Target, Recorded: recorded, Applying: opts.Revision}
	}
	return nil
}

// prepare maps every object to its resource, defaults namespaces, labels
// it as a member, and hashes the configuration. A kind neither the cluster
// nor a CRD of the render knows stops the run here.
func (c *Client) prepare(objs []*unstructured.Unstructured, setID string, leaveOut func(*unstructured.Unstructured) string, provided []*unstructured.Unstructured) ([]*object, []Change, error) {
	crds := renderedCRDs(append(append([]*unstructured.Unstructured{}, objs...), provided...))
	var out []*object
	var leftOut []Change
	var errs []error
	seen := map[string]bool{}
	for _, in := range objs {
		u := in.DeepCopy()
		gvk := u.GroupVersionKind()
		o := &object{u: u, wave: manifest.Wave(u), hook: hookOf(u)}
		mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			o.mapping = mapping
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace && u.GetNamespace() == "" {
				u.SetNamespace(c.namespace)
			}
			if mapping.Scope.Name() == meta.RESTScopeNameRoot {
				u.SetNamespace("")
			}
		case meta.IsNoMatchError(err):
			crd, ok := crds[gvk.GroupKind()]
			if !ok && leaveOut != nil {
				if reason := leaveOut(u); reason != "" {
					leftOut = append(leftOut, Change{Object: manifest.IDOf(u), Action: Skipped, Reason: reason})
					continue
				}
			}
			if !ok {
				errs = append(errs, fmt.Errorf("%s: kind %s (apiVersion %s) is not known to the cluster and no CRD in the target defines it", manifest.IDOf(u), gvk.Kind, gvk.GroupVersion()))
				continue
			}
			if crd.Namespaced() && u.GetNamespace() == "" {
				u.SetNamespace(c.namespace)
			}
		default:
			return nil, nil, fmt.Errorf("cluster %s: mapping %s: %w", c.Host, gvk, err)
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelPartOf] = setID
		u.SetLabels(labels)
		o.id = manifest.IDOf(u)
		o.key = o.id.String()
		if seen[o.key] {
			errs = append(errs, fmt.Errorf("%s: rendered twice", o.id))
			continue
		}
		seen[o.key] = true
		b, err := json.Marshal(u.Object)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", o.id, err)
		}
		sum := sha256.Sum256(b)
		o.config = hex.EncodeToString(sum[:])
		out = append(out, o)
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].wave != out[j].wave {
			return out[i].wave < out[j].wave
		}
		return manifest.Less(out[i].id, out[j].id)
	})
	return out, leftOut, nil
}

// renderedCRDs returns the kinds the render's CRDs define.
func renderedCRDs(objs []*unstructured.Unstructured) map[schema.GroupKind]manifest.CRD {
	out := map[schema.GroupKind]manifest.CRD{}
	for _, c := range manifest.CRDs(objs) {
		out[schema.GroupKind{Group: c.Group, Kind: c.Kind}] = c
	}
	return out
}

// splitUnchanged finds the objects whose last applied configuration is the
// same and whose fields ferry still owns exactly as it left them: applying
// them again would change nothing, so they cost no request. Secrets with
// stringData are always applied: their data can be edited without ferry's
// fields (stringData) changing. A hook that succeeded and was deleted by
// its policy is unchanged while its configuration is: it ran already.
func splitUnchanged(desired []*object, inv *Inventory) (toApply, unchanged []*object) {
	for _, o := range desired {
		rec, ok := inv.Records[o.key]
		if ok && rec.Deleted && o.live == nil && rec.Config == o.config && o.hook.phase != "" {
			unchanged = append(unchanged, o)
			continue
		}
		if ok && !rec.Deleted && o.live != nil && rec.Config == o.config && rec.Fields == ownedFieldsHash(o.live) && !stringDataSecret(o.u) {
			unchanged = append(unchanged, o)
			continue
		}
		toApply = append(toApply, o)
	}
	return toApply, unchanged
}

// ownedFieldsHash hashes the field set ferry's manager owns on an object.
func ownedFieldsHash(u *unstructured.Unstructured) string {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" && mf.FieldsV1 != nil {
			sum := sha256.Sum256(append([]byte(mf.APIVersion+"\n"), mf.FieldsV1.Raw...))
			return hex.EncodeToString(sum[:])
		}
	}
	return ""
}

// preflight dry-runs every object that can be dry-run now. Objects whose
// Namespace or CRD this run creates are checked against the render.
func (c *Client) preflight(ctx context.Context, toApply, desired []*object, opts ApplyOptions) error {
	if len(toApply) == 0 {
		return nil
	}
	existing, err := c.existingNamespaces(ctx, opts.reads)
	if err != nil {
		return err
	}
	rendered := map[string]bool{}
	for _, o := range desired {
		if o.id.Kind == "Namespace" && o.id.Group == "" {
			rendered[o.id.Name] = true
		}
	}
	var earlier []*object // CRDs of targets before this one in the run
	for _, u := range opts.Provided {
		switch gvk := u.GroupVersionKind(); {
		case gvk.Group == "" && gvk.Kind == "Namespace":
			rendered[u.GetName()] = true
		case manifest.IsCRD(u):
			earlier = append(earlier, &object{u: u, id: manifest.IDOf(u), wave: manifest.WaveCRDs})
		}
	}
	var now []*object
	var errs []error
	for _, o := range toApply {
		ns := o.u.GetNamespace()
		switch {
		case ns != "" && !existing[ns] && !rendered[ns]:
			errs = append(errs, fmt.Errorf("%s: namespace %q does not exist and neither the target nor one applied before it creates it", o.id, ns))
		case o.mapping == nil || (ns != "" && !existing[ns]):
			// checked in its wave, once its Namespace or CRD exists
		default:
			now = append(now, o)
		}
	}
	schemas, err := schemasOf(append(append([]*object{}, desired...), earlier...))
	if err != nil {
		errs = append(errs, err)
	} else if err := schemas.validate(toApply); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return c.dryRun(ctx, now, opts)
}

// existingNamespaces are the cluster's namespaces: listed once per
// snapshot (the targets of a run share the list), else now.
func (c *Client) existingNamespaces(ctx context.Context, snap *snapshot) (map[string]bool, error) {
	list := func() (map[string]bool, error) {
		l, err := c.clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: listing namespaces: %w", c.Host, err)
		}
		existing := make(map[string]bool, len(l.Items))
		for _, ns := range l.Items {
			existing[ns.Name] = true
		}
		return existing, nil
	}
	if snap == nil {
		return list()
	}
	snap.nsOnce.Do(func() { snap.namespaces, snap.nsErr = list() })
	return snap.namespaces, snap.nsErr
}

// dryRun server-side dry-runs objects concurrently and reports every
// failure, each naming its object.
func (c *Client) dryRun(ctx context.Context, objs []*object, opts ApplyOptions) error {
	return c.each(ctx, objs, opts.Concurrency, func(ctx context.Context, o *object) error {
		var err error
		if o.replace {
			err = c.dryRunReplace(ctx, o)
		} else {
			_, err = c.patch(ctx, o, opts.ForceConflicts, true)
		}
		o.checked = true
		if err != nil {
			return describe(o.id, err)
		}
		return nil
	})
}

func (c *Client) resource(o *object) dynamic.ResourceInterface {
	r := c.dynamic.Resource(o.mapping.Resource)
	if o.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Namespace(o.u.GetNamespace())
	}
	return r
}

func (c *Client) patch(ctx context.Context, o *object, force, dryRun bool) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(o.u.Object)
	if err != nil {
		return nil, err
	}
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	if dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	return c.resource(o).Patch(ctx, o.u.GetName(), types.ApplyPatchType, body, po)
}

// describe turns an API error about one object into a message that names
// the object and, for a field conflict, the fields and their managers.
func describe(id manifest.ID, err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) && apierrors.IsConflict(err) {
		var fields []string
		if d := se.Status().Details; d != nil {
			for _, cause := range d.Causes {
				if cause.Field != "" {
					fields = append(fields, cause.Field+" ("+cause.Message+")")
				} else {
					fields = append(fields, cause.Message)
				}
			}
		}
		if len(fields) > 0 {
			return &wrapped{msg: fmt.Sprintf("%s: field conflict: %s (pass --force-conflicts to take these fields)", id, strings.Join(fields, "; ")), err: err}
		}
	}
	return fmt.Errorf("%s: %w", id, err)
}

// wrapped rewords an error and keeps it for errors.As.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// each runs fn over objs with at most n in flight and returns what failed.
// An error that is not the API server's answer (the connection broke, the
// server went away) stops the objects not yet started: they would fail the
// same way, one message each.
func (c *Client) each(ctx context.Context, objs []*object, n int, fn func(ctx context.Context, o *object) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	errs := make([]error, len(objs))
	started := 0
	for i, o := range objs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, o); err != nil {
				errs[i] = err
				var status apierrors.APIStatus
				if !errors.As(err, &status) {
					cancel(err)
				}
			}
		}()
	}
	wg.Wait()
	return summarize(errs, len(objs)-started, context.Cause(ctx), c.Host)
}

// maxListed bounds the per-object errors one message lists.
const maxListed = 10

// summarize joins per-object errors, at most maxListed of them, and says
// when the cluster stopped answering and how many objects were not tried.
func summarize(errs []error, notStarted int, cause error, host string) error {
	var listed []error
	failed := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		if cause != nil && errors.Is(err, context.Canceled) {
			notStarted++ // cut short after the cluster broke off
			continue
		}
		failed++
		if len(listed) < maxListed {
			listed = append(listed, err)
		}
	}
	if failed == 0 && notStarted == 0 {
		return nil
	}
	if failed > len(listed) {
		listed = append(listed, fmt.Errorf("... and %d more objects failed", failed-len(listed)))
	}
	if cause != nil {
		listed = append([]error{fmt.Errorf("cluster %s stopped answering (%v): %d objects failed, %d were not attempted", host, cause, failed, notStarted)}, listed...)
	}
	return errors.Join(listed...)
}

// applyWaves applies the objects that need it, waves from to to, each
// wave in steps (see steps: one for ordinary objects, by weight for
// hooks). A step's objects not yet dry-run (their Namespace or CRD came
// with this run) are dry-run first, and a failure stops before the step
// writes anything. A step of CRDs is awaited until they are Established;
// with Wait, a step of hooks until they ran (see finishHooks). The post
// hook wave also holds the hooks of both phases, applied a second time:
// replaced when their delete policy says so and they are still there.
func (c *Client) applyWaves(ctx context.Context, toApply []*object, opts ApplyOptions, cs *ChangeSet, records map[string]Record, from, to int) error {
	for wave := from; wave <= to; wave++ {
		var objs []*object
		for _, o := range toApply {
			switch {
			case o.wave == wave:
				objs = append(objs, o)
			case wave == manifest.WavePostHooks && o.hook.again:
				o.replace = o.replaces()
				objs = append(objs, o)
			}
		}
		for _, step := range steps(objs) {
			if err := c.applyStep(ctx, step, opts, cs, records); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyStep applies objs concurrently: hooks that before-hook-creation
// replaces are deleted first (and their deletion awaited).
func (c *Client) applyStep(ctx context.Context, objs []*object, opts ApplyOptions, cs *ChangeSet, records map[string]Record) error {
	if err := c.resolveDeferred(ctx, objs, opts.Timeout); err != nil {
		return err
	}
	var unchecked, replace []*object
	for _, o := range objs {
		if !o.checked {
			unchecked = append(unchecked, o)
		}
		if o.replace {
			replace = append(replace, o)
		}
	}
	if err := c.dryRun(ctx, unchecked, opts); err != nil {
		return err
	}
	deadline := time.Now().Add(opts.Timeout)
	if err := c.each(ctx, replace, opts.Concurrency, func(ctx context.Context, o *object) error {
		return c.deleteHook(ctx, o, string(o.live.GetUID()), deadline)
	}); err != nil {
		return err
	}
	var mu sync.Mutex
	err := c.each(ctx, objs, opts.Concurrency, func(ctx context.Context, o *object) error {
		res, err := c.patch(ctx, o, opts.ForceConflicts, false)
		if err != nil {
			return describe(o.id, err)
		}
		change := Change{Object: o.id, Action: Configured}
		switch {
		case o.replace:
			change.Action, change.Reason = Replaced, "hook-delete-policy "+HookBeforeCreation
		case o.live == nil:
			change.Action = Created
		case res.GetResourceVersion() == o.live.GetResourceVersion():
			change.Action = Unchanged
		}
		mu.Lock()
		cs.Changes = append(cs.Changes, change)
		records[o.key] = Record{Config: o.config, Fields: ownedFieldsHash(res)}
		mu.Unlock()
		if o.hook.again {
			o.live = res // what its second phase finds
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var crds []*object
	for _, o := range objs {
		if manifest.IsCRD(o.u) {
			crds = append(crds, o)
		}
	}
	if len(crds) > 0 {
		if err := c.waitEstablished(ctx, crds, opts.Timeout); err != nil {
			return err
		}
	}
	if opts.Wait && objs[0].hook.phase != "" {
		return c.finishHooks(ctx, objs, opts, cs, records)
	}
	return nil
}

// resolveDeferred maps the objects whose CRD this run created. A CRD is
// Established a moment before the API server's discovery serves its kind,
// so a kind that is not served yet is asked again until the timeout.
func (c *Client) resolveDeferred(ctx context.Context, objs []*object, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if !slices.ContainsFunc(objs, func(o *object) bool { return o.mapping == nil }) {
		return nil // every kind was known when the run began
	}
	for {
		c.mapper.Reset()
		var errs []error
		unknown := false
		for _, o := range objs {
			if o.mapping != nil {
				continue
			}
			gvk := o.u.GroupVersionKind()
			m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				unknown = unknown || meta.IsNoMatchError(err)
				errs = append(errs, fmt.Errorf("%s: kind %s is still unknown after its CRD was applied: %w", o.id, gvk, err))
				continue
			}
			o.mapping = m
		}
		if len(errs) == 0 || !unknown || time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func union(inv *Inventory, desired []*object) ([]schema.GroupKind, []string) {
	gks := append([]schema.GroupKind(nil), inv.GroupKinds...)
	nss := append([]string(nil), inv.Namespaces...)
	nss = addString(nss, inv.Namespace)
	for _, o := range desired {
		gks = addGK(gks, o.u.GroupVersionKind().GroupKind())
		if ns := o.u.GetNamespace(); ns != "" {
			nss = addString(nss, ns)
		}
	}
	return gks, nss
}

func addGK(list []schema.GroupKind, gk schema.GroupKind) []schema.GroupKind {
	for _, x := range list {
		if x == gk {
			return list
		}
	}
	return append(list, gk)
}

func sortChanges(ch []Change) {
	order := map[Action]int{Created: 0, Configured: 1, Replaced: 2, Unchanged: 3, Deleted: 4, Pruned: 5, Skipped: 6, Orphaned: 7}
	sort.SliceStable(ch, func(i, j int) bool {
		if ch[i].Action != ch[j].Action {
			return order[ch[i].Action] < order[ch[j].Action]
		}
		return manifest.Less(ch[i].Object, ch[j].Object)
	})
}
