package main

import (
	"strconv"

	"github.com/ferry-ci/ferry/internal/kube"
)

// countChanges counts the objects of every change set whose action is one
// of those given, for the apply step's outputs applied (created or
// configured) and pruned.
func countChanges(sets []*kube.ChangeSet, of ...kube.Action) string {
	n := 0
	for _, cs := range sets {
		for _, a := range of {
			n += cs.Count(a)
		}
	}
	return strconv.Itoa(n)
}
