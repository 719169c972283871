// Package drift compares a target's live cluster state with what Git
// renders, looking only at the fields ferry owns, and reports it as a typed
// Report with text, JSON and markdown renderers. Check runs the comparison
// over many targets at once and, when asked, heals them in dependency
// order; SyncIssues keeps one forge issue per target while it drifts.
package drift
