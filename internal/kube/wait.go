package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/ferry-ci/ferry/internal/manifest"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// NotReadyError reports the objects that were not healthy in time.
type NotReadyError struct {
	Objects []Health
	Timeout time.Duration
}

func (e *NotReadyError) Error() string {
	var parts []string
	for _, h := range e.Objects {
		p := h.Object.String() + " is " + h.Status
		if h.Message != "" {
			p += ": " + h.Message
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("not ready after %s: %s", e.Timeout, strings.Join(parts, "; "))
}

// waitEstablished waits until the applied CRDs are Established, so the
// kinds they define can be used by the next waves.
func (c *Client) waitEstablished(ctx context.Context, crds []*object, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, o := range crds {
		for {
			u, err := c.dynamic.Resource(crdResource).Get(ctx, o.u.GetName(), metav1.GetOptions{})
			if err == nil && established(u) {
				break
			}
			if time.Now().After(deadline) {
				return &ObjectError{ID: o.id, Err: fmt.Errorf("not Established after %s", timeout)}
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// wait polls the kstatus health of every desired object but the hooks
// (awaited in their own waves, see finishHooks) until all are Current or
// the timeout passes, and names those that are not.
func (c *Client) wait(ctx context.Context, desired []*object, timeout time.Duration) ([]Health, error) {
	deadline := time.Now().Add(timeout)
	for {
		var notReady []Health
		for _, o := range desired {
			if o.mapping == nil || o.hook.phase != "" {
				continue
			}
			u, err := c.resource(o).Get(ctx, o.u.GetName(), metav1.GetOptions{})
			if err != nil {
				notReady = append(notReady, Health{Object: o.id, Status: "Unknown", Message: err.Error()})
				continue
			}
			res, err := status.Compute(u)
			if err != nil {
				notReady = append(notReady, Health{Object: o.id, Status: "Unknown", Message: err.Error()})
				continue
			}
			if res.Status != status.CurrentStatus {
				notReady = append(notReady, Health{Object: o.id, Status: res.Status.String(), Message: res.Message})
			}
		}
		if len(notReady) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) {
			sort.Slice(notReady, func(i, j int) bool { return manifest.Less(notReady[i].Object, notReady[j].Object) })
			return notReady, &NotReadyError{Objects: notReady, Timeout: timeout}
		}
		select {
		case <-ctx.Done():
			return notReady, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
