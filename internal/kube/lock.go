package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LockOptions bound how long a run waits for another run of the same target.
type LockOptions struct {
	// Wait is how long to wait for a lease another run holds.
	Wait time.Duration
	// Duration is the lease's length; the holder renews it while it runs, and
	// a holder that died loses it after this long.
	Duration time.Duration
}

// LockedError says another run holds the target's lease.
type LockedError struct {
	Target, Holder string
	Since          time.Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("target %q is locked by another ferry run (%s, since %s); waited and gave up",
		e.Target, e.Holder, e.Since.UTC().Format(time.RFC3339))
}

// Lock is a held lease; Release gives it back.
type Lock struct {
	c        *Client
	ns, name string
	holder   string
	// lease is the Lease as last written by this run: renewing and
	// releasing update it without reading it again (a conflict means
	// someone else wrote it, and then it is read).
	lease  *coordinationv1.Lease
	cancel context.CancelFunc
	done   chan struct{}
}

// Acquire takes the target's Lease in namespace ns, waiting up to
// opts.Wait while another run holds it, and renews it until Release.
func (c *Client) Acquire(ctx context.Context, target, ns string, opts LockOptions) (*Lock, error) {
	return c.acquire(ctx, target, ns, opts, nil)
}

// acquire is Acquire starting from the Lease as a snapshot listed it, when
// it did: a first attempt without reading it (a Lease changed since makes
// that attempt fail, and the next one reads).
func (c *Client) acquire(ctx context.Context, target, ns string, opts LockOptions, snap *snapshot) (*Lock, error) {
	if opts.Duration == 0 {
		opts.Duration = 60 * time.Second
	}
	if err := c.ensureNamespace(ctx, ns, false); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	l := &Lock{c: c, ns: ns, name: ParentName(target) + "-lock", holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))}
	leases := c.clientset.CoordinationV1().Leases(ns)
	seconds := int32(opts.Duration / time.Second)
	deadline := time.Now().Add(opts.Wait)
	listed, fromList := snap.lease(ns, l.name)
	for first := true; ; first = false {
		now := metav1.NewMicroTime(time.Now())
		var lease *coordinationv1.Lease
		var err error
		switch {
		case first && fromList && listed == nil:
			err = apierrors.NewNotFound(coordinationv1.Resource("leases"), l.name)
		case first && fromList:
			lease = listed
		default:
			lease, err = leases.Get(ctx, l.name, metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: ns, Annotations: map[string]string{AnnotationTarget: target}},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &l.holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
			}
			if l.lease, err = leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: FieldManager}); err == nil {
				return l.start(opts.Duration), nil
			}
		case err != nil:
			return nil, fmt.Errorf("target %q: reading Lease/%s/%s: %w", target, ns, l.name, err)
		default:
			if free(lease, time.Now()) {
				lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &l.holder, &seconds
				lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
				if l.lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: FieldManager}); err == nil {
					return l.start(opts.Duration), nil
				}
			}
		}
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("target %q: taking Lease/%s/%s: %w", target, ns, l.name, err)
		}
		if first && fromList {
			continue // the listed Lease was stale: read it
		}
		if time.Now().After(deadline) {
			le := &LockedError{Target: target}
			if lease != nil && lease.Spec.HolderIdentity != nil {
				le.Holder = *lease.Spec.HolderIdentity
				if lease.Spec.AcquireTime != nil {
					le.Since = lease.Spec.AcquireTime.Time
				}
			}
			return nil, le
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func free(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return true
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

func (l *Lock) start(d time.Duration) *Lock {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(d / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				l.renew(ctx)
			}
		}
	}()
	return l
}

func (l *Lock) renew(ctx context.Context) {
	_ = l.update(ctx, func(lease *coordinationv1.Lease) {
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.RenewTime = &now
	})
}

// Release stops renewing and frees the lease for the next run.
func (l *Lock) Release(ctx context.Context) error {
	l.cancel()
	<-l.done
	err := l.update(ctx, func(lease *coordinationv1.Lease) {
		empty := ""
		lease.Spec.HolderIdentity = &empty
	})
	if err != nil {
		return fmt.Errorf("releasing Lease/%s/%s: %w", l.ns, l.name, err)
	}
	return nil
}

// update changes the lease while this run holds it: on the copy it last
// wrote, and after reading it again when that copy is stale. A lease
// someone else has taken meanwhile is left alone.
func (l *Lock) update(ctx context.Context, change func(*coordinationv1.Lease)) error {
	leases := l.c.clientset.CoordinationV1().Leases(l.ns)
	lease := l.lease
	for attempt := 0; ; attempt++ {
		if lease == nil {
			var err error
			if lease, err = leases.Get(ctx, l.name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.holder {
			return nil
		}
		lease = lease.DeepCopy()
		change(lease)
		updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			l.lease = updated
			return nil
		}
		if !apierrors.IsConflict(err) || attempt > 0 {
			return err
		}
		lease = nil // written by someone else since: read it again
	}
}
