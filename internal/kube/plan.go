package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// Plan is one target's apply worked out before anything is written (see
// Client.Plan): its inventory as read, its objects against the live
// members the inventory names, every check passed. Client.Execute carries
// it out.
type Plan struct {
	Target string
	// Inventory is the target's inventory as the plan read it.
	Inventory *Inventory
	// LeftOut are the objects PlanOptions.LeaveOut left out (Skipped).
	LeftOut []Change
	// Prune are the members no longer rendered that are not protected:
	// pruned with PlanOptions.Prune, else orphaned. Kept are those an
	// annotation protects.
	Prune, Kept []*unstructured.Unstructured

	opts    PlanOptions
	objects []*unstructured.Unstructured // as rendered, to plan again
	// desired are the rendered objects, prepared, in wave order; toApply
	// and unchanged split them by whether applying them changes anything.
	desired, toApply, unchanged []*object
	// reads is the snapshot the plan was read from, if any.
	reads *snapshot
	// read: readState sorted the objects and members.
	read bool
}

// ToApply are the objects the plan applies: new or changed, or not as
// ferry left them.
func (p *Plan) ToApply() []manifest.ID { return ids(p.toApply) }

// Unchanged are the objects the plan leaves alone: applying them again
// would change nothing.
func (p *Plan) Unchanged() []manifest.ID { return ids(p.unchanged) }

func ids(objs []*object) []manifest.ID {
	out := make([]manifest.ID, len(objs))
	for i, o := range objs {
		out[i] = o.id
	}
	return out
}

// Plan reads a target's inventory and live members and runs every check
// that comes before a write: the rollback guard, mapping, the mass-prune
// guard, schemas, namespaces, and the server dry-run of what changes. It
// writes nothing. The plan comes back with the error when the inventory
// was read.
func (c *Client) Plan(ctx context.Context, objs []*unstructured.Unstructured, opts PlanOptions) (*Plan, error) {
	opts = ApplyOptions{PlanOptions: opts}.withDefaults().PlanOptions
	return c.plan(ctx, objs, opts, nil)
}

// plan is Plan reading what a snapshot holds from it.
func (c *Client) plan(ctx context.Context, objs []*unstructured.Unstructured, opts PlanOptions, snap *snapshot) (*Plan, error) {
	inv, err := c.readInventory(ctx, opts.Target, opts.InventoryNamespace, snap)
	if err != nil {
		return nil, err
	}
	p := &Plan{Target: opts.Target, Inventory: inv, opts: opts, objects: objs, reads: snap}
	if err := checkRevision(inv.Revision, opts); err != nil {
		return p, err
	}
	if err := c.readState(ctx, p); err != nil {
		return p, err
	}
	// Every object that can be dry-run now is; the rest need a Namespace
	// or CRD of this run and are checked against the render now and
	// dry-run in their wave.
	return p, c.preflight(ctx, p)
}

// readState prepares the plan's objects, reads the live members of its
// inventory, and sorts the objects into those to apply and those
// unchanged, and the members into those to prune and those kept.
func (c *Client) readState(ctx context.Context, p *Plan) error {
	var err error
	if p.desired, p.LeftOut, err = c.prepare(p.objects, p.Inventory.ID, p.opts.LeaveOut, p.opts.Provided); err != nil {
		return err
	}
	live, err := c.listMembers(ctx, p.Inventory, p.desired, p.reads)
	if err != nil {
		return err
	}
	for _, o := range p.desired {
		o.live = live[o.key]
		o.replace = o.replaces()
	}
	if p.Prune, p.Kept, err = prunable(live, p.desired, p.opts); err != nil {
		return err
	}
	p.toApply, p.unchanged = splitUnchanged(p.desired, p.Inventory)
	p.read = true
	return nil
}

// Stale reports a plan whose target's inventory is no longer as the plan
// read it: another run has written it since.
func (p *Plan) Stale(inv *Inventory) bool {
	return inv.Exists != p.Inventory.Exists || inv.ResourceVersion != p.Inventory.ResourceVersion
}

// inventoryOnly reports a plan whose one write is the final inventory:
// every object unchanged, nothing to prune or keep, and the inventory
// already tracking exactly the rendered kinds and namespaces.
func (p *Plan) inventoryOnly() bool {
	inv := p.Inventory
	if !p.read || !inv.Exists || inv.ResourceVersion == "" {
		return false
	}
	if len(p.Prune) > 0 || len(p.Kept) > 0 || len(p.toApply) > 0 {
		return false
	}
	gks, nss := union(&Inventory{Namespace: inv.Namespace}, p.desired)
	return sameSet(gks, inv.GroupKinds) && sameSet(nss, inv.Namespaces)
}

// Noop reports a plan with nothing to do: the target is at this revision
// already, and the plan's one write would be an inventory identical to
// the one there (see inventoryOnly), with a record for every object.
func (p *Plan) Noop() bool {
	return p.opts.Revision != "" && p.Inventory.Revision == p.opts.Revision && p.inventoryOnly() && len(p.Inventory.Records) == len(p.unchanged)
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

// RevisionError refuses to apply an older revision over a newer one.
type RevisionError struct {
	Target, Recorded, Applying string
}

func (e *RevisionError) Error() string {
	return fmt.Sprintf("target %q: revision %s is older than %s, which the cluster already has (pass --allow-rollback to apply it anyway)",
		e.Target, ShortRevision(e.Applying), ShortRevision(e.Recorded))
}

func checkRevision(recorded string, opts PlanOptions) error {
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
		o := &object{u: u, wave: manifest.Wave(u), hook: hookOf(u)}
		var err error
		var reason string
		if o.mapping, reason, err = c.mapObject(u, crds, leaveOut); err != nil {
			var oe *ObjectError
			if !errors.As(err, &oe) {
				return nil, nil, err
			}
			errs = append(errs, err)
			continue
		}
		if reason != "" {
			leftOut = append(leftOut, Change{Object: manifest.IDOf(u), Action: Skipped, Reason: reason})
			continue
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
			errs = append(errs, &ObjectError{ID: o.id, Err: errors.New("rendered twice")})
			continue
		}
		seen[o.key] = true
		b, err := json.Marshal(u.Object)
		if err != nil {
			return nil, nil, &ObjectError{ID: o.id, Err: err}
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

// mapObject maps u to its resource and defaults its namespace by the
// resource's scope. A kind the cluster does not serve yet is mapped later
// (nil) when a CRD of the render defines it; else leaveOut's reason leaves
// it out, or it is an ObjectError. Any other error is the cluster's.
func (c *Client) mapObject(u *unstructured.Unstructured, crds map[schema.GroupKind]manifest.CRD, leaveOut func(*unstructured.Unstructured) string) (*meta.RESTMapping, string, error) {
	gvk := u.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && u.GetNamespace() == "" {
			u.SetNamespace(c.namespace)
		}
		if mapping.Scope.Name() == meta.RESTScopeNameRoot {
			u.SetNamespace("")
		}
		return mapping, "", nil
	case !meta.IsNoMatchError(err):
		return nil, "", fmt.Errorf("cluster %s: mapping %s: %w", c.Host, gvk, err)
	}
	crd, ok := crds[gvk.GroupKind()]
	if !ok && leaveOut != nil {
		if reason := leaveOut(u); reason != "" {
			return nil, reason, nil
		}
	}
	if !ok {
		return nil, "", &ObjectError{ID: manifest.IDOf(u), Err: fmt.Errorf("kind %s (apiVersion %s) is not known to the cluster and no CRD in the target defines it", gvk.Kind, gvk.GroupVersion())}
	}
	if crd.Namespaced() && u.GetNamespace() == "" {
		u.SetNamespace(c.namespace)
	}
	return nil, "", nil
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
func (c *Client) preflight(ctx context.Context, p *Plan) error {
	toApply, desired, opts := p.toApply, p.desired, p.opts
	if len(toApply) == 0 {
		return nil
	}
	existing, err := c.existingNamespaces(ctx, p.reads)
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
			errs = append(errs, &ObjectError{ID: o.id, Err: fmt.Errorf("namespace %q does not exist and neither the target nor one applied before it creates it", ns)})
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
	return c.dryRun(ctx, now, opts.Concurrency, opts.ForceConflicts)
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
