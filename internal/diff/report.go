// Package diff finds the targets a change between two revisions affects
// (a Plan, also as workflow matrices), compares their renders object by
// object and returns a typed Report, with markdown, text and JSON
// renderers. Secret values never enter a report: Secrets are compared key
// by key. Objects whose only changes are the labels and annotations Helm
// charts stamp on every object are folded into one line per target.
package diff

import (
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/risk"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/verify"
)

// Action is what a change does to one object.
type Action string

const (
	Added     Action = "added"
	Removed   Action = "removed"
	Changed   Action = "changed"
	Unchanged Action = "unchanged"
)

// Object is the change to one object.
type Object struct {
	ID     manifest.ID `json:"id"`
	Action Action      `json:"action"`
	// Pruned is set on a removed object the target prunes: merging
	// deletes it from the cluster.
	Pruned bool `json:"pruned,omitempty"`
	// Diff holds unified hunks of the normalized YAML ("-" base, "+"
	// head); Secret values are redacted on both sides.
	Diff string `json:"diff,omitempty"`
	// Secret lists the keys of a Secret that changed.
	Secret   *SecretChange `json:"secret,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// MetadataOnly lists, on a changed object whose only changes are to
	// the labels and annotations Helm charts stamp on every object
	// (helm.sh/chart, app.kubernetes.io/version, chart, checksum/*), the
	// keys that changed: the object is folded into its target's Folded
	// line and its Diff left out. Never set on an added or removed
	// object, on one with warnings, or with SetsOptions.ShowAllMetadata.
	MetadataOnly []string `json:"metadataOnly,omitempty"`
	// Refusal is the API server's refusal of the object's dry-run
	// (--live), which becomes a risk; Answered says the server answered
	// the dry-run (accepted or refused it), so its answer replaces the
	// tables'. Neither is part of the JSON report.
	Refusal  error `json:"-"`
	Answered bool  `json:"-"`
}

// SecretChange names the keys of a Secret that were added, removed or
// changed. It never holds a value.
type SecretChange struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
	// Encrypted is set when the values could not be compared (no key):
	// Changed then lists keys whose ciphertext changed.
	Encrypted bool `json:"encrypted,omitempty"`
	// Of names the Secret the keys are compared with when the name
	// changed (a generator's content hash suffix).
	Of string `json:"of,omitempty"`
}

// Counts sums a target's objects by action. Folded objects (see
// Target.Folded) count as changed: applying them changes the cluster.
type Counts struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// Target is the diff of one target.
type Target struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	Prune   bool   `json:"prune"`
	// Why says what made the target affected.
	Why string `json:"why"`
	// Error is set when the target failed to render on one side (Side).
	Error   string   `json:"error,omitempty"`
	Side    string   `json:"side,omitempty"`
	Counts  Counts   `json:"counts"`
	Objects []Object `json:"objects,omitempty"`
	// Folded sums the objects whose only changes are chart metadata
	// (Object.MetadataOnly), which the reports show as one line; nil
	// when there are none.
	Folded *Folded `json:"folded,omitempty"`
	// Releases lists the HelmReleases whose chart or chart version
	// differs between base and head, or that one side only has; their
	// rendered objects are among Objects.
	Releases []ReleaseChange `json:"releases,omitempty"`
	// Encrypted lists encrypted files that changed while no key was
	// given, with the keys SOPS metadata shows.
	Encrypted []EncryptedFile `json:"encrypted,omitempty"`
	// NotCompared lists encrypted Secrets left out for lack of a key.
	NotCompared []manifest.ID `json:"notCompared,omitempty"`
	// RenderedWithout lists the substituteFrom objects (Kind/namespace/
	// name) that neither revision's renders hold (only the cluster does):
	// the target was rendered without them, and Unresolved names the
	// variables left as written.
	RenderedWithout []string `json:"renderedWithout,omitempty"`
	Unresolved      []string `json:"unresolved,omitempty"`
	// Unrendered lists the objects of a release that one revision
	// renders and the other does not (its chart source is not trusted
	// there): they are left out of the comparison, not shown as removed.
	Unrendered []manifest.ID `json:"unrendered,omitempty"`
	// Live compares the head render with the cluster (--live); LiveError
	// says why that comparison could not be made.
	Live       []Object `json:"live,omitempty"`
	LiveCounts *Counts  `json:"liveCounts,omitempty"`
	LiveError  string   `json:"liveError,omitempty"`
}

// ReleaseChange is a HelmRelease of a target that installs another chart
// or chart version at head than at base (Changed), or that only head
// (Added) or base (Removed) has.
type ReleaseChange struct {
	// ID is the HelmRelease's Kind/namespace/name.
	ID     string `json:"id"`
	Action Action `json:"action"`
	// Base and Head are the release at each side, nil on a side without it.
	Base *render.Release `json:"base,omitempty"`
	Head *render.Release `json:"head,omitempty"`
}

// Charts is the change of chart in a few words: "podinfo 6.5.0 ->
// 6.6.0", or "old 1.0.0 -> new 2.0.0" when the chart itself changed; the
// one side's chart ("web 1.1.0") for a release added or removed.
func (c ReleaseChange) Charts() string {
	switch {
	case c.Base == nil:
		return chartOf(c.Head)
	case c.Head == nil:
		return chartOf(c.Base)
	case c.Base.Chart == c.Head.Chart && c.Base.Skipped == "" && c.Head.Skipped == "":
		return c.Head.Chart + " " + c.Base.Version + " -> " + c.Head.Version
	default:
		return chartOf(c.Base) + " -> " + chartOf(c.Head)
	}
}

// NotRendered says why ferry did not render the release's chart at head
// (or, when head did, at base), as "not rendered: <reason>"; "" when
// both sides were rendered. A reviewer must see why part of the change
// is missing from the diff (a chart source the base does not trust).
func (c ReleaseChange) NotRendered() string {
	for _, r := range []*render.Release{c.Head, c.Base} {
		if r == nil || r.Skipped == "" {
			continue
		}
		if strings.HasPrefix(r.Skipped, "not rendered") {
			return r.Skipped
		}
		return "not rendered: " + r.Skipped
	}
	return ""
}

// chartOf is "web 1.1.0", or "(not rendered)" for a release ferry
// skipped.
func chartOf(r *render.Release) string {
	if r.Skipped != "" {
		return "(not rendered)"
	}
	return r.Chart + " " + r.Version
}

// label names the release in the text report: its ID, followed by the
// action for a release only one side has.
func (c ReleaseChange) label() string {
	if c.Action == Changed {
		return c.ID
	}
	return c.ID + " " + string(c.Action)
}

// Releases compares the HelmReleases a target's render expanded at base
// and head, by HelmRelease, and returns those whose chart or chart version
// differs or that one side only has, in the order of their IDs.
func Releases(base, head []render.Release) []ReleaseChange {
	b := make(map[string]*render.Release, len(base))
	for i := range base {
		b[base[i].ID] = &base[i]
	}
	h := make(map[string]*render.Release, len(head))
	for i := range head {
		h[head[i].ID] = &head[i]
	}
	var out []ReleaseChange
	for id, br := range b {
		hr := h[id]
		switch {
		case hr == nil:
			out = append(out, ReleaseChange{ID: id, Action: Removed, Base: br})
		case br.Chart != hr.Chart || br.Version != hr.Version || (br.Skipped == "") != (hr.Skipped == ""):
			out = append(out, ReleaseChange{ID: id, Action: Changed, Base: br, Head: hr})
		}
	}
	for id, hr := range h {
		if b[id] == nil {
			out = append(out, ReleaseChange{ID: id, Action: Added, Head: hr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// EncryptedFile is a SOPS file that changed, compared without a key.
type EncryptedFile struct {
	Path    string   `json:"path"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// Report is the diff of a repository between two revisions.
type Report struct {
	Base    string   `json:"base"`
	Head    string   `json:"head"`
	Targets []Target `json:"targets"`
	// Unaffected counts the targets no change reaches.
	Unaffected int `json:"unaffected"`
	// Broken lists the targets that fail to render before and after a
	// change that does not affect them: among Unaffected, shown, and not
	// a failure of the diff.
	Broken []Broken `json:"broken,omitempty"`
	// Warnings are report-wide (deletions, immutable fields), each
	// prefixed with its target and object.
	Warnings []string `json:"warnings,omitempty"`
	// Signatures, when trusted keys are known, say how the head's
	// commits verify with the base's keys.
	Signatures *verify.Summary `json:"signatures,omitempty"`
	// Risks are the changes the cluster will refuse or regret, the
	// worst first; accepted ones are marked.
	Risks []risk.Risk `json:"risks,omitempty"`
}

// Changed reports whether any object differs or any target failed.
func (r *Report) Changed() bool {
	for _, t := range r.Targets {
		if t.Error != "" || t.LiveError != "" || t.Counts.Added+t.Counts.Changed+t.Counts.Removed > 0 || len(t.Encrypted) > 0 {
			return true
		}
		if t.LiveCounts != nil && t.LiveCounts.Added+t.LiveCounts.Changed+t.LiveCounts.Removed > 0 {
			return true
		}
	}
	return false
}

// SetsOptions says how Sets compares; the zero value is a target that
// does not prune, with nothing masked.
type SetsOptions struct {
	// Prune says whether the target prunes: removed objects are then
	// deleted on merge.
	Prune bool
	// Mask hides decrypted values in the diffs, before they are written
	// (nil shows them).
	Mask *secrets.Masker
	// ShowAllMetadata keeps the diff of every changed object. By default
	// an object whose only changes are to the labels and annotations
	// Helm charts stamp on every object is folded: its Diff is left out
	// and Object.MetadataOnly names the keys.
	ShowAllMetadata bool
}

// Sets compares the objects of one target at base and head. Objects come
// out in apply order.
func Sets(base, head []*unstructured.Unstructured, opts SetsOptions) []Object {
	mask := opts.Mask
	byID := func(objs []*unstructured.Unstructured) map[manifest.ID]*unstructured.Unstructured {
		m := make(map[manifest.ID]*unstructured.Unstructured, len(objs))
		for _, o := range objs {
			m[manifest.IDOf(o)] = o
		}
		return m
	}
	b, h := byID(base), byID(head)
	ids := make([]manifest.ID, 0, len(b)+len(h))
	for id := range b {
		ids = append(ids, id)
	}
	for id := range h {
		if _, ok := b[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return manifest.Less(ids[i], ids[j]) })

	var out []Object
	for _, id := range ids {
		bo, ho := b[id], h[id]
		o := Object{ID: id}
		switch {
		case bo == nil:
			o.Action = Added
			o.Diff = Unified("", text(ho, mask))
			if isSecret(id) {
				o.Secret = &SecretChange{Added: secretKeys(ho)}
			}
		case ho == nil:
			o.Action = Removed
			o.Pruned = opts.Prune
			o.Diff = Unified(text(bo, mask), "")
			if isSecret(id) {
				o.Secret = &SecretChange{Removed: secretKeys(bo)}
			}
		case equalObjects(bo, ho):
			// Equal objects print alike: nothing to marshal.
			o.Action = Unchanged
		default:
			if isSecret(id) {
				o.Secret = compareSecrets(bo, ho)
			}
			var hidden bool
			o.Diff, hidden = diffMasked(bo, ho, mask)
			if o.Diff == "" && !hidden && (o.Secret == nil || o.Secret.empty()) {
				o.Action = Unchanged
			} else {
				o.Action = Changed
				if hidden {
					o.Warnings = append(o.Warnings, maskedChange)
				}
			}
			if o.Secret != nil && o.Secret.empty() {
				o.Secret = nil
			}
			if o.Action == Changed && !opts.ShowAllMetadata && len(o.Warnings) == 0 && o.Secret == nil && !risk.Refuses(bo, ho) {
				if keys := metadataOnly(bo, ho); keys != nil {
					o.MetadataOnly, o.Diff = keys, ""
				}
			}
		}
		o.Warnings = append(o.Warnings, removal(o)...)
		out = append(out, o)
	}
	pairRenamedSecrets(out, b, h)
	return out
}

func count(objs []Object) Counts {
	var c Counts
	for _, o := range objs {
		switch o.Action {
		case Added:
			c.Added++
		case Removed:
			c.Removed++
		case Changed:
			c.Changed++
		case Unchanged:
			c.Unchanged++
		}
	}
	return c
}

// hashSuffix is the content hash kustomize's generators append to names.
var hashSuffix = regexp.MustCompile(`^(.*)-[a-z0-9]{10}$`)

// pairRenamedSecrets compares the keys of a generated Secret whose name
// changed with its content (the hash suffix) with the one it replaces, so
// a rotated value reads as a changed key, not only as remove + add.
func pairRenamedSecrets(objs []Object, base, head map[manifest.ID]*unstructured.Unstructured) {
	removed := map[manifest.ID]manifest.ID{}
	for _, o := range objs {
		if o.Action == Removed && isSecret(o.ID) {
			if m := hashSuffix.FindStringSubmatch(o.ID.Name); m != nil {
				k := o.ID
				k.Name = m[1]
				removed[k] = o.ID
			}
		}
	}
	for i, o := range objs {
		if o.Action != Added || !isSecret(o.ID) {
			continue
		}
		m := hashSuffix.FindStringSubmatch(o.ID.Name)
		if m == nil {
			continue
		}
		k := o.ID
		k.Name = m[1]
		old, ok := removed[k]
		if !ok {
			continue
		}
		sc := compareSecrets(base[old], head[o.ID])
		sc.Of = old.Name
		objs[i].Secret = sc
	}
}

// WithoutNote says, in one line, what the target was rendered without
// (render.WithoutNote), "" when nothing.
func (t *Target) WithoutNote() string {
	return render.WithoutNote(t.RenderedWithout, t.Unresolved)
}
