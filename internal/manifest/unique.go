package manifest

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DuplicateError is an identity that two objects of one target share.
// Both cannot be applied: the second would silently replace the first in
// the cluster, while a diff keyed by identity would show only one of them.
type DuplicateError struct {
	ID ID
	// First and Second say where each object comes from, in the order of
	// the target's objects.
	First, Second string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%s is defined twice: by %s and by %s", e.ID, e.First, e.Second)
}

// Unique checks that no two of objs share an identity as the API server
// tells objects apart: by group, kind, namespace and name, where the
// namespace of a cluster-scoped object does not count (the server drops
// it). namespaced says which objects belong in a namespace; origin says
// where an object comes from, and is asked only of duplicates. Every
// duplicate is reported, each as a *DuplicateError naming the first
// object of its identity and the later one.
func Unique(objs []*unstructured.Unstructured, namespaced func(*unstructured.Unstructured) bool, origin func(*unstructured.Unstructured) string) error {
	first := make(map[ID]*unstructured.Unstructured, len(objs))
	var errs []error
	for _, o := range objs {
		id := IDOf(o)
		if id.Namespace != "" && !namespaced(o) {
			id.Namespace = ""
		}
		prev, ok := first[id]
		if !ok {
			first[id] = o
			continue
		}
		errs = append(errs, &DuplicateError{ID: id, First: origin(prev), Second: origin(o)})
	}
	return errors.Join(errs...)
}
