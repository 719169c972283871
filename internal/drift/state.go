package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// StateInSync is the State of a target that does not drift.
const StateInSync = "in-sync"

// Summary is the drift classes of the report and their counts, as the
// reports word them: "2 modified, 1 missing" ("none" without drift).
func (r *Report) Summary() string { return driftCounts(r) }

// State names the report's drift for remembering what was last
// notified: StateInSync, or "drift:" and a short hash of which objects
// drift and how, so the same drift on the next run has the same state
// and another drift a new one. Fields' values are left out: a value that
// keeps changing is still the same drift.
func (r *Report) State() string {
	if !r.Drifted() {
		return StateInSync
	}
	var lines []string
	for _, o := range r.Objects {
		if o.Class.Drift() {
			lines = append(lines, string(o.Class)+" "+o.Object.String())
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "drift:" + hex.EncodeToString(sum[:8])
}
