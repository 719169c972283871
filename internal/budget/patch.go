package budget

import (
	"errors"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// patchGate lets builds under the same copy bound run at once: the bound
// is a package variable of the library kustomize applies JSON patches
// with, set when the first of them starts and put back when the last
// ends. A build under another bound waits until they are done.
var patchGate = struct {
	mu      sync.Mutex
	free    *sync.Cond // signalled when the last build ends
	limit   int64      // the bound of the builds running
	running int
	saved   int64 // the library's bound before the first of them
}{}

func init() { patchGate.free = sync.NewCond(&patchGate.mu) }

// WithPatchCopyLimit runs build (a kustomize build) with the copy
// operations of each JSON patch bounded: one patch applied to one object
// may copy at most limit bytes in all, so a patch of copy operations that
// each double a field fails after a few of them instead of growing the
// object to gigabytes. A build stopped by the bound returns an *Exceeded
// error (limits.patchCopySize) with What empty: the caller names the
// patch. Builds under the same limit run at once; under different ones,
// they take turns.
func WithPatchCopyLimit(limit int64, build func() error) error {
	g := &patchGate
	g.mu.Lock()
	for g.running > 0 && g.limit != limit {
		g.free.Wait()
	}
	if g.running == 0 {
		g.saved, g.limit = jsonpatch.AccumulatedCopySizeLimit, limit
		jsonpatch.AccumulatedCopySizeLimit = limit
	}
	g.running++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running--
		if g.running == 0 {
			jsonpatch.AccumulatedCopySizeLimit = g.saved
			g.free.Broadcast()
		}
		g.mu.Unlock()
	}()
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
