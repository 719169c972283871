package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// Helm's annotations on the hook objects of a rendered HelmRelease (those
// marked with manifest.HelmHookAnnotation), as Apply reads them.
const (
	// AnnotationHookWeight orders the hooks of one phase: lower weights
	// are applied (and, with Wait, awaited) first. Default 0.
	AnnotationHookWeight = "helm.sh/hook-weight"
	// AnnotationHookDeletePolicy lists, comma-separated, when a hook is
	// deleted: HookBeforeCreation (the default when the annotation is
	// absent), HookSucceeded, HookFailed.
	AnnotationHookDeletePolicy = "helm.sh/hook-delete-policy"
)

// Helm's hook delete policies.
const (
	// HookBeforeCreation: a live hook that is to be applied again is
	// deleted first, and created anew.
	HookBeforeCreation = "before-hook-creation"
	// HookSucceeded: with Wait, a hook is deleted once it is Current.
	HookSucceeded = "hook-succeeded"
	// HookFailed: with Wait, a hook is deleted when it failed.
	HookFailed = "hook-failed"
)

// hook is what Apply reads of a hook object's annotations.
type hook struct {
	phase string // manifest.HookPre, HookPost or HookPrePost; "" for other objects
	// again marks a hook of both phases: applied with the pre hooks, and
	// again with the post hooks, as Helm runs it on both events.
	again    bool
	weight   int
	policies map[string]bool
}

// hookOf reads u's hook phases, weight and delete policies. A weight that
// is not an integer counts as 0, as Helm counts it.
func hookOf(u *unstructured.Unstructured) hook {
	pre, post := manifest.HookPhases(u)
	if !pre && !post {
		return hook{}
	}
	a := u.GetAnnotations()
	h := hook{phase: a[manifest.HelmHookAnnotation], again: pre && post}
	h.weight, _ = strconv.Atoi(strings.TrimSpace(a[AnnotationHookWeight]))
	h.policies = map[string]bool{}
	for p := range strings.SplitSeq(a[AnnotationHookDeletePolicy], ",") {
		if p = strings.TrimSpace(p); p != "" {
			h.policies[p] = true
		}
	}
	if len(h.policies) == 0 {
		h.policies[HookBeforeCreation] = true
	}
	return h
}

// replaces reports a hook that before-hook-creation deletes before it is
// applied again: one that is live (for the second phase of a hook of
// both, live since its first). A hook CRD or Namespace is never
// deleted (it would take every object it holds with it); it is applied
// in place like any object.
func (o *object) replaces() bool {
	if o.hook.phase == "" || o.live == nil || !o.hook.policies[HookBeforeCreation] {
		return false
	}
	w := manifest.KindWave(o.u)
	return w != manifest.WaveCRDs && w != manifest.WaveNamespaces
}

// steps splits a wave's objects into the groups applied one after the
// other: a wave of ordinary objects is one step; a hook wave has a step
// per hook weight, lowest first, and within a weight one per kind wave,
// so that a hook Namespace or CRD exists before the hooks that use it.
func steps(objs []*object) [][]*object {
	if len(objs) == 0 {
		return nil
	}
	type key struct{ weight, kind int }
	keyOf := func(o *object) key { return key{o.hook.weight, manifest.KindWave(o.u)} }
	sorted := append([]*object(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		ki, kj := keyOf(sorted[i]), keyOf(sorted[j])
		if ki.weight != kj.weight {
			return ki.weight < kj.weight
		}
		return ki.kind < kj.kind
	})
	if sorted[0].hook.phase == "" {
		return [][]*object{objs}
	}
	var out [][]*object
	for i, o := range sorted {
		if i == 0 || keyOf(o) != keyOf(sorted[i-1]) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], o)
	}
	return out
}

// dryRunReplace dry-runs a hook that before-hook-creation will replace:
// as a create under a generated name, since its live copy is still there
// and may differ in fields that cannot be changed in place (a Job's pod
// template).
func (c *Client) dryRunReplace(ctx context.Context, o *object) error {
	u := o.u.DeepCopy()
	u.SetName("")
	u.SetGenerateName(o.u.GetName())
	_, err := c.resource(o).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager, DryRun: []string{metav1.DryRunAll}})
	return err
}

// deleteHook deletes the live hook (the one with this uid) and waits
// until it is gone, so the hook applied next is a new object.
func (c *Client) deleteHook(ctx context.Context, o *object, uid string, deadline time.Time) error {
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	if uid != "" {
		u := types.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	err := c.resource(o).Delete(ctx, o.u.GetName(), opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return &ObjectError{ID: o.id, Err: fmt.Errorf("deleting hook: %w", err)}
	}
	for {
		u, err := c.resource(o).Get(ctx, o.u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return &ObjectError{ID: o.id, Err: fmt.Errorf("waiting for the hook's deletion: %w", err)}
		case uid != "" && string(u.GetUID()) != uid:
			return nil // gone, and created again by someone else
		}
		if time.Now().After(deadline) {
			return &ObjectError{ID: o.id, Err: fmt.Errorf("hook still present after deleting it (finalizers %v)", u.GetFinalizers())}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HookFailedError reports hooks that failed (kstatus Failed: a Job past
// its backoff limit, a Pod that failed).
type HookFailedError struct {
	Hooks []Health
}

func (e *HookFailedError) Error() string {
	var parts []string
	for _, h := range e.Hooks {
		p := h.Object.String() + ": hook failed"
		if h.Message != "" {
			p += ": " + h.Message
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// awaitHooks polls the kstatus health of a step's hooks until every one
// is Current, one has Failed (the wait stops at once: the hooks after it
// would not run anyway), or the deadline passes. It returns the hooks
// that are Current and those that failed.
func (c *Client) awaitHooks(ctx context.Context, objs []*object, deadline time.Time, timeout time.Duration) (done []*object, failed []Health, failedObjs []*object, err error) {
	pending := append([]*object(nil), objs...)
	for {
		var still []*object
		var notReady []Health
		for _, o := range pending {
			u, err := c.resource(o).Get(ctx, o.u.GetName(), metav1.GetOptions{})
			if err != nil {
				still = append(still, o)
				notReady = append(notReady, Health{Object: o.id, Status: "Unknown", Message: err.Error()})
				continue
			}
			res, err := status.Compute(u)
			switch {
			case err != nil:
				still = append(still, o)
				notReady = append(notReady, Health{Object: o.id, Status: "Unknown", Message: err.Error()})
			case res.Status == status.CurrentStatus:
				done = append(done, o)
			case res.Status == status.FailedStatus:
				failed = append(failed, Health{Object: o.id, Status: res.Status.String(), Message: res.Message})
				failedObjs = append(failedObjs, o)
			default:
				still = append(still, o)
				notReady = append(notReady, Health{Object: o.id, Status: res.Status.String(), Message: res.Message})
			}
		}
		pending = still
		if len(failed) > 0 {
			return done, failed, failedObjs, &HookFailedError{Hooks: failed}
		}
		if len(pending) == 0 {
			return done, nil, nil, nil
		}
		if time.Now().After(deadline) {
			sort.Slice(notReady, func(i, j int) bool { return manifest.Less(notReady[i].Object, notReady[j].Object) })
			return done, nil, nil, &NotReadyError{Objects: notReady, Timeout: timeout}
		}
		select {
		case <-ctx.Done():
			return done, nil, nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// finishHooks waits for a step of hooks that was just applied and
// carries out their delete policies: a hook that is Current and has
// hook-succeeded is deleted (the inventory keeps its record, marked
// Deleted, so the next apply of the same configuration leaves it alone
// and drift does not call it missing); a hook that failed, or was not
// Current in time, loses its record so the next apply runs it again, and
// is deleted when it has hook-failed.
func (c *Client) finishHooks(ctx context.Context, objs []*object, timeout time.Duration, cs *ChangeSet, records map[string]Record) error {
	deadline := time.Now().Add(timeout)
	done, failed, failedObjs, waitErr := c.awaitHooks(ctx, objs, deadline, timeout)
	var errs []error
	if waitErr != nil {
		errs = append(errs, waitErr)
		cs.NotReady = append(cs.NotReady, failed...)
		var nr *NotReadyError
		if errors.As(waitErr, &nr) {
			cs.NotReady = append(cs.NotReady, nr.Objects...)
		}
		isDone := map[*object]bool{}
		for _, o := range done {
			isDone[o] = true
		}
		for _, o := range objs {
			if !isDone[o] {
				delete(records, o.key)
			}
		}
	}
	deleteBy := func(o *object, policy string) {
		if err := c.deleteHook(ctx, o, "", deadline); err != nil {
			errs = append(errs, err)
			return
		}
		o.live = nil
		cs.Changes = append(cs.Changes, Change{Object: o.id, Action: Deleted, Reason: "hook-delete-policy " + policy})
		if policy == HookSucceeded {
			records[o.key] = Record{Config: o.config, Deleted: true}
		}
	}
	for _, o := range done {
		if o.hook.policies[HookSucceeded] {
			deleteBy(o, HookSucceeded)
		}
	}
	for _, o := range failedObjs {
		if o.hook.policies[HookFailed] {
			deleteBy(o, HookFailed)
		}
	}
	return errors.Join(errs...)
}
