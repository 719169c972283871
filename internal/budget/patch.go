package budget

import (
	"errors"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// patchMu serialises the builds that set json-patch's copy bound, a
// package variable of the library kustomize applies JSON patches with.
var patchMu sync.Mutex

// WithPatchCopyLimit runs build (a kustomize build) with the copy
// operations of each JSON patch bounded: one patch applied to one object
// may copy at most limit bytes in all, so a patch of copy operations that
// each double a field fails after a few of them instead of growing the
// object to gigabytes. A build stopped by the bound returns an *Exceeded
// error (limits.patchCopySize) with What empty: the caller names the
// patch. Builds that run through here take turns.
func WithPatchCopyLimit(limit int64, build func() error) error {
	patchMu.Lock()
	defer patchMu.Unlock()
	saved := jsonpatch.AccumulatedCopySizeLimit
	jsonpatch.AccumulatedCopySizeLimit = limit
	defer func() { jsonpatch.AccumulatedCopySizeLimit = saved }()
	err := build()
	if IsPatchCopy(err) {
		return &Exceeded{Doing: "the copy operations of a JSON patch add more than", Limit: "patchCopySize", Value: Size(limit)}
	}
	return err
}

// IsPatchCopy reports whether err is json-patch's refusal of a copy past
// its bound (kustomize passes its message on, not always the error).
func IsPatchCopy(err error) bool {
	if err == nil {
		return false
	}
	var ce *jsonpatch.AccumulatedCopySizeError
	return errors.As(err, &ce) || strings.Contains(err.Error(), "accumulated size increase of copy")
}
