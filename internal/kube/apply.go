package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// PlanOptions control what planning a target reads and checks (see
// Client.Plan).
type PlanOptions struct {
	// Target names the target; it names the inventory and the lease.
	Target string
	// Revision is the Git revision being applied, recorded on the inventory.
	Revision string
	// Verify is the signature verification Revision passed (a mode), also
	// recorded: later applies are held to it.
	Verify string
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
	// Concurrency bounds the requests in flight within a wave, dry-runs
	// included.
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
}

// ExecuteOptions control how a plan is carried out (see Client.Execute).
type ExecuteOptions struct {
	// DryRun writes nothing: Execute reports what the plan would do.
	DryRun  bool
	Wait    bool
	Timeout time.Duration
}

// ApplyOptions control one target's apply: its plan, its execution, and
// the Lease that serializes the runs that write it.
type ApplyOptions struct {
	PlanOptions
	ExecuteOptions
	Lock LockOptions
}

// DefaultApplyOptions returns the options a plain `ferry apply` uses.
func DefaultApplyOptions() ApplyOptions {
	return ApplyOptions{}.withDefaults()
}

// withDefaults fills in the options a caller left zero: the one place
// ferry's apply defaults are written.
func (o ApplyOptions) withDefaults() ApplyOptions {
	if o.InventoryNamespace == "" {
		o.InventoryNamespace = DefaultInventoryNS
	}
	if o.MassPruneRatio == 0 {
		o.MassPruneRatio = 0.5
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Lock.Wait == 0 {
		o.Lock.Wait = 2 * time.Minute
	}
	if o.Lock.Duration == 0 {
		o.Lock.Duration = 60 * time.Second
	}
	return o
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

// Apply server-side applies objs as one target: it plans (Client.Plan:
// every read and check, no write), and unless the plan has nothing to
// do, takes the target's Lease and executes the plan (Client.Execute).
// A dry run takes no Lease.
func (c *Client) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) (*ChangeSet, error) {
	opts = opts.withDefaults()
	if err := c.reachable(ctx); err != nil {
		return &ChangeSet{Target: opts.Target, Revision: opts.Revision, DryRun: opts.DryRun}, err
	}
	p, err := c.Plan(ctx, objs, opts.PlanOptions)
	if err != nil {
		cs := &ChangeSet{Target: opts.Target, Revision: opts.Revision}
		if p != nil {
			cs = p.changeSet()
		}
		cs.DryRun = opts.DryRun
		return cs, err
	}
	return c.ApplyPlan(ctx, p, opts)
}

// ApplyPlan carries out a plan made beforehand (by Apply or
// PreflightFleet) under the target's Lease. A plan with nothing to do
// costs no write: its objects' health, with Wait. Under the Lease, a plan
// whose inventory changed since it was read (Plan.Stale) is made again
// first; one whose only write is its inventory is not read again: that
// write is conditional on the inventory being as planned, and when it is
// not, the target is planned again. opts' plan options are the plan's.
func (c *Client) ApplyPlan(ctx context.Context, p *Plan, opts ApplyOptions) (cs *ChangeSet, err error) {
	opts = opts.withDefaults()
	opts.PlanOptions = p.opts
	if opts.DryRun {
		return c.Execute(ctx, p, opts.ExecuteOptions)
	}
	if p.Noop() {
		return c.unchanged(ctx, p, opts.ExecuteOptions)
	}
	lock, err := c.acquire(ctx, p.Target, p.opts.InventoryNamespace, opts.Lock, p.reads)
	if err != nil {
		return p.changeSet(), err
	}
	defer func() {
		if rerr := lock.Release(context.WithoutCancel(ctx)); rerr != nil && err == nil {
			err = rerr
		}
	}()
	fresh := false // planned under the Lease
	for attempt := 1; ; attempt++ {
		if !fresh && !p.inventoryOnly() {
			if p, err = c.current(ctx, p); err != nil {
				return p.changeSet(), err
			}
		}
		cs, err = c.Execute(ctx, p, opts.ExecuteOptions)
		if attempt == maxAttempts || !p.inventoryOnly() || !apierrors.IsConflict(err) {
			return cs, err
		}
		// The inventory changed since the plan read it: nothing was
		// written (its update was the plan's one write), so plan again.
		np, err := c.plan(ctx, p.objects, p.opts, nil)
		if np != nil {
			p = np
		}
		if err != nil {
			return p.changeSet(), err
		}
		fresh = true
	}
}

// maxAttempts bounds how often ApplyPlan plans a target again because its
// inventory changed under an inventory-only plan.
const maxAttempts = 3

// changeSet is the change set of a plan before anything is carried out.
func (p *Plan) changeSet() *ChangeSet {
	return &ChangeSet{Target: p.Target, Revision: p.opts.Revision, PreviousRevision: p.Inventory.Revision}
}

// current returns p when the target's inventory is as p read it, and a new
// plan, read under the Lease, when it is not.
func (c *Client) current(ctx context.Context, p *Plan) (*Plan, error) {
	inv, err := c.ReadInventory(ctx, p.Target, p.opts.InventoryNamespace)
	if err != nil {
		return p, err
	}
	if !p.Stale(inv) {
		return p, nil
	}
	np, err := c.plan(ctx, p.objects, p.opts, nil)
	if np == nil {
		return p, err
	}
	return np, err
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
