// Package drift compares a target's live cluster state with what Git
// renders, looking only at the fields ferry owns, and reports it as a typed
// Report with text, JSON and markdown renderers.
package drift
