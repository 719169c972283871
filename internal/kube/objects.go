package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// ObjectError is what went wrong with one object: every error about an
// object names it this way.
type ObjectError struct {
	ID  manifest.ID
	Err error
}

// Error names the object and, for a field conflict, the fields and their
// managers.
func (e *ObjectError) Error() string {
	if fields := conflictingFields(e.Err); len(fields) > 0 {
		return fmt.Sprintf("%s: field conflict: %s (pass --force-conflicts to take these fields)", e.ID, strings.Join(fields, "; "))
	}
	return fmt.Sprintf("%s: %v", e.ID, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// conflictingFields are the fields (and their managers) of a server-side
// apply conflict; none for any other error.
func conflictingFields(err error) []string {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsConflict(err) {
		return nil
	}
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
	return fields
}

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
