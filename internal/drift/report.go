package drift

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// Class is what is wrong, or not, with one object.
type Class string

// Drift classes, and the classes that are not drift.
const (
	// Modified: a field ferry owns has another value now, or another
	// manager owns it now.
	Modified Class = "modified"
	// Missing: applied by ferry, deleted from the cluster since.
	Missing Class = "missing"
	// Orphaned: in the inventory, no longer in Git; prune never ran or
	// failed.
	Orphaned Class = "orphaned"
	// Unowned: rendered and in the cluster, but in no inventory of this
	// target: ferry never applied it.
	Unowned Class = "unowned"

	// Pending is not drift: Git changed since the last apply and the
	// target has not been applied yet.
	Pending Class = "pending"
	// Kept is not drift: no longer in Git and protected from pruning by
	// an annotation.
	Kept Class = "kept"
	// Unknown: the object could not be read or dry-run (see Reason).
	Unknown Class = "unknown"
)

// Drift reports whether the class is drift.
func (c Class) Drift() bool {
	switch c {
	case Modified, Missing, Orphaned, Unowned:
		return true
	}
	return false
}

// Classes lists every class in report order.
var Classes = []Class{Modified, Missing, Orphaned, Unowned, Unknown, Pending, Kept}

// Status is a target's verdict.
type Status string

// Statuses of a Report.
const (
	InSync Status = "in sync"
	// Drifted: at least one object drifted.
	Drifted Status = "drifted"
	// NotApplied: no drift, but Git has changes the cluster does not have
	// yet (the target is behind Git, or was never applied).
	NotApplied Status = "not applied yet"
	// Failed: the target could not be rendered or compared, or some of
	// its objects could not be (Unknown).
	Failed Status = "error"
)

// Field is one field of an object that differs from what ferry would
// apply, or that another manager owns now.
type Field struct {
	// Path is the field's path as the API server names it in conflicts,
	// e.g. .spec.template.spec.containers[name="web"].image.
	Path string `json:"path"`
	// Git is the value applying would set, Live the value in the cluster,
	// both as JSON; Live is empty when the field is not set. Both are
	// empty when Hidden.
	Git  json.RawMessage `json:"git,omitempty"`
	Live json.RawMessage `json:"live,omitempty"`
	// Hidden: a Secret's value; only the key is shown.
	Hidden bool `json:"hidden,omitempty"`
	// Managers own the field on the live object now, other than ferry.
	Managers []string `json:"managers,omitempty"`
	// Pending: Git changed this field since the last apply; not drift.
	Pending bool `json:"pending,omitempty"`
}

// Object is one object that is not in sync.
type Object struct {
	Object manifest.ID `json:"object"`
	Class  Class       `json:"class"`
	Reason string      `json:"reason,omitempty"`
	Fields []Field     `json:"fields,omitempty"`
	// MoreFields counts the fields left out of Fields.
	MoreFields int `json:"moreFields,omitempty"`
}

// Report is the drift of one target.
type Report struct {
	Target string `json:"target"`
	// Cluster is the API server's address.
	Cluster string `json:"cluster,omitempty"`
	Status  Status `json:"status"`
	// Revision is the checked-out revision; AppliedRevision and AppliedAt
	// are recorded on the inventory by the last apply.
	Revision        string     `json:"revision,omitempty"`
	AppliedRevision string     `json:"appliedRevision,omitempty"`
	AppliedAt       *time.Time `json:"appliedAt,omitempty"`
	// Behind: the cluster has another revision than the checkout; what Git
	// changed since is Pending, not drift.
	Behind bool `json:"behind,omitempty"`
	// NeverApplied: the target has no inventory.
	NeverApplied bool `json:"neverApplied,omitempty"`
	// Objects are the objects not in sync, drift first.
	Objects []Object `json:"objects"`
	// InSync counts the rendered objects in sync.
	InSync int `json:"inSync"`
	// Error says why the target could not be rendered or compared.
	Error string `json:"error,omitempty"`
	// Heal is what `--heal` applied, HealError why it failed.
	Heal      *kube.ChangeSet `json:"heal,omitempty"`
	HealError string          `json:"healError,omitempty"`
	// Issue is what `--report issue` did with the target's drift issue.
	Issue *Issue `json:"issue,omitempty"`
}

// Issue is the target's drift issue on the forge, and what this run did
// with it: created, edited, unchanged, closed, or none (no drift, no issue).
type Issue struct {
	Action string `json:"action"`
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
}

// ErrorReport is the report of a target that could not be rendered or
// compared: an error, never "everything is missing".
func ErrorReport(target string, err error) *Report {
	return &Report{Target: target, Status: Failed, Objects: []Object{}, Error: err.Error()}
}

// Count returns how many objects have the class.
func (r *Report) Count(c Class) int {
	n := 0
	for _, o := range r.Objects {
		if o.Class == c {
			n++
		}
	}
	return n
}

// Drifted reports whether any object drifted.
func (r *Report) Drifted() bool {
	for _, o := range r.Objects {
		if o.Class.Drift() {
			return true
		}
	}
	return false
}

// Failed reports whether the target, an object of it or its heal failed.
func (r *Report) Failed() bool {
	return r.Error != "" || r.HealError != "" || r.Count(Unknown) > 0
}

// NeedsApply reports whether applying the target would change anything
// (drift or changes not applied yet).
func (r *Report) NeedsApply() bool {
	for _, o := range r.Objects {
		if o.Class != Kept {
			return true
		}
	}
	return r.Behind || r.NeverApplied
}

// maxFields bounds the fields listed per object.
const maxFields = 20

// Detect classifies every object of a comparison. revision is the
// checked-out revision ("" when unknown): when the inventory records
// another one, what Git changed since is Pending, not drift. mask hides
// decrypted values: in field values before they are encoded (and cut to
// length), then in every string of the report (nil shows them).
func Detect(c *kube.Comparison, revision string, mask *secrets.Masker) *Report {
	inv := c.Inventory
	r := &Report{
		Target:          c.Target,
		Cluster:         c.Cluster,
		Revision:        revision,
		AppliedRevision: inv.Revision,
		NeverApplied:    !inv.Exists,
		Behind:          inv.Exists && inv.Revision != "" && revision != "" && inv.Revision != revision,
		Objects:         []Object{},
	}
	if !inv.AppliedAt.IsZero() {
		t := inv.AppliedAt.UTC()
		r.AppliedAt = &t
	}
	for _, lo := range c.Objects {
		o, ok := classify(lo, inv, r.Behind, mask)
		if !ok {
			r.InSync++
			continue
		}
		r.Objects = append(r.Objects, o)
	}
	for _, u := range c.Orphans {
		o := Object{Object: manifest.IDOf(u), Class: Orphaned, Reason: "in the inventory, no longer in Git: prune never ran or failed"}
		a := u.GetAnnotations()
		switch {
		case a[kube.AnnotationPrune] == kube.PruneDisabled || a[kube.AnnotationFluxPrune] == kube.PruneDisabled:
			o.Class, o.Reason = Kept, "no longer in Git; pruning disabled by annotation"
		case r.Behind:
			o.Class, o.Reason = Pending, "removed from Git since the applied revision"
		}
		r.Objects = append(r.Objects, o)
	}
	sortObjects(r.Objects)
	r.Status = r.status()
	mask.Redact(r)
	return r
}

func (r *Report) status() Status {
	switch {
	case r.Failed():
		return Failed
	case r.Drifted():
		return Drifted
	case r.NeedsApply():
		return NotApplied
	}
	return InSync
}

// classify returns the object's class, or false when it is in sync.
func classify(lo *kube.LiveObject, inv *kube.Inventory, behind bool, mask *secrets.Masker) (Object, bool) {
	o := Object{Object: lo.ID}
	switch {
	case lo.Live == nil && lo.Err != nil:
		o.Class, o.Reason = Unknown, "cannot be read: "+lo.Err.Error()
	case lo.Live == nil && lo.Unchanged:
		return o, false // a Helm hook that ran and was deleted by its policy
	case lo.Live == nil && lo.HookDeleted:
		o.Class, o.Reason = Pending, "Helm hook changed in Git since it last ran (deleted by its hook-delete-policy since)"
	case lo.Live == nil && (lo.Recorded || (inv.Exists && !behind)):
		o.Class, o.Reason = Missing, "deleted from the cluster"
	case lo.Live == nil:
		o.Class, o.Reason = Pending, "not applied yet"
	case !lo.Member && !lo.Recorded:
		o.Class, o.Reason = Unowned, "in the cluster, in no inventory: not applied by ferry"
		if lo.PartOf != "" {
			o.Reason = fmt.Sprintf("in the cluster as a member of another ApplySet (%s), not of this target's", lo.PartOf)
		}
	case lo.Unchanged:
		return o, false
	case lo.Err != nil:
		o.Class, o.Reason = Unknown, "cannot be dry-run: "+lo.Err.Error()
	case lo.DryRun == nil:
		o.Class, o.Reason = Unknown, "not dry-run"
	default:
		fields := compareFields(lo, mask)
		drifted := false
		for _, f := range fields {
			if !f.Pending {
				drifted = true
			}
		}
		switch {
		case drifted:
			o.Class = Modified
		case len(fields) > 0 || lo.ConfigChanged:
			o.Class, o.Reason = Pending, "changed in Git since the last apply"
		default:
			return o, false
		}
		if len(fields) > maxFields {
			o.MoreFields = len(fields) - maxFields
			fields = fields[:maxFields]
		}
		o.Fields = fields
	}
	return o, true
}

func sortObjects(objs []Object) {
	order := map[Class]int{}
	for i, c := range Classes {
		order[c] = i
	}
	sort.SliceStable(objs, func(i, j int) bool {
		if objs[i].Class != objs[j].Class {
			return order[objs[i].Class] < order[objs[j].Class]
		}
		return manifest.Less(objs[i].Object, objs[j].Object)
	})
}
