// Package risk finds, in the change between two renders of a target, the
// changes the cluster will refuse or regret: fields the API server does
// not let change in place, prunes that delete data or cascade, APIs the
// cluster no longer serves, Flux objects whose reconciliation flips,
// chart versions that move back or a major forward, and Pod templates
// that reference what nothing provides. Each risk names the object, the
// field or action, the values before and after, why it matters and what
// to do. With a cluster at hand, the server's own answers (a dry-run
// refusal, the objects a CRD's prune deletes) replace the tables.
package risk

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Level says how bad a risk is, from the worst.
type Level string

const (
	// Refused: the API server will refuse the apply; the deploy fails
	// after the merge.
	Refused Level = "refused"
	// Destructive: the apply deletes data or objects beyond the one
	// named.
	Destructive Level = "destructive"
	// Warning: the cluster will do something a reviewer should have
	// seen.
	Warning Level = "warning"
)

// Levels are the levels, the worst first.
var Levels = []Level{Refused, Destructive, Warning}

// AtLeast reports whether l is at least as bad as min.
func (l Level) AtLeast(min Level) bool {
	return slices.Index(Levels, l) <= slices.Index(Levels, min)
}

// ParseLevel reads a --fail-on value: a level, or "risk" for any.
func ParseLevel(s string) (Level, error) {
	if s == "risk" {
		return Warning, nil
	}
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown risk level %q (risk, refused, destructive or warning)", s)
}

// Risk is one change the cluster will refuse or regret.
type Risk struct {
	// ID names the risk for an accept-risk comment or annotation:
	// rule:Kind/namespace/name, and :field when there is one.
	ID    string `json:"id"`
	Rule  string `json:"rule"`
	Level Level  `json:"level"`
	// Target and Object (Kind/namespace/name) say where.
	Target string `json:"target"`
	Object string `json:"object"`
	// Field is the field or action at risk; Base and Head its values
	// (short, JSON), empty when a side has none or the values are a
	// Secret's.
	Field string `json:"field,omitempty"`
	Base  string `json:"base,omitempty"`
	Head  string `json:"head,omitempty"`
	// Why it matters, and what to do.
	Why string `json:"why"`
	Fix string `json:"fix"`
	// From says who found it when not ferry's tables: "server dry-run",
	// "cluster".
	From string `json:"from,omitempty"`
	// Accepted says where it was accepted (an accept-risk comment of the
	// pull request, an annotation of the object); an accepted risk is
	// shown and does not fail the diff.
	Accepted string `json:"accepted,omitempty"`
}

// AcceptAnnotation on an object accepts its risks: a comma-separated
// list of rules (or IDs), "*" for all.
const AcceptAnnotation = "ferry.dev/accept-risk"

// Line is the risk in one line of text.
func (r Risk) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s: %s", r.Level, r.Target, r.Object)
	if r.Field != "" {
		b.WriteString(" " + r.Field)
	}
	if r.Base != "" || r.Head != "" {
		fmt.Fprintf(&b, " (%s -> %s)", orNone(Short(r.Base)), orNone(Short(r.Head)))
	}
	b.WriteString(": " + r.Why)
	if r.From != "" {
		b.WriteString(" (" + r.From + ")")
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Change is an object of a target at base and head (nil on the side that
// does not have it).
type Change struct {
	Base, Head *unstructured.Unstructured
	// Pruned says a removed object is deleted on merge (the target
	// prunes).
	Pruned bool
}

// Release is a HelmRelease whose chart version changes.
type Release struct {
	ID                       string
	Chart                    string
	BaseVersion, HeadVersion string
}

// Target is what Find reads of one target's change.
type Target struct {
	Name    string
	Changes []Change
	// Releases are the HelmReleases whose chart or version changes.
	Releases []Release
	// KubeVersion is the cluster's Kubernetes version (ferry.yaml's
	// kubeVersion, or the server's); empty skips the served-API check.
	KubeVersion string
	// Provides says whether the cluster's head renders hold an object
	// (another target's, say); nil looks only in this target.
	Provides func(kind, namespace, name string) bool
}

// Find returns the risks of t's change, sorted by level, then object.
func Find(t Target) []Risk {
	var out []Risk
	provided := t.provider()
	var bases []*unstructured.Unstructured
	for _, c := range t.Changes {
		if c.Base != nil {
			bases = append(bases, c.Base)
		}
	}
	hadOwn := Index(bases)
	for _, c := range t.Changes {
		switch {
		case c.Base != nil && c.Head != nil:
			out = append(out, immutable(t.Name, c.Base, c.Head)...)
			out = append(out, protection(t.Name, c.Base, c.Head)...)
			out = append(out, flux(t.Name, c.Base, c.Head)...)
		case c.Base != nil && c.Pruned:
			out = append(out, pruned(t.Name, c.Base)...)
		}
		if c.Head != nil {
			out = append(out, servedAPI(t.Name, c.Head, t.KubeVersion)...)
			out = append(out, dangling(t.Name, c.Base, c.Head, provided, hadOwn)...)
		}
	}
	out = append(out, charts(t.Name, t.Releases)...)
	Sort(out)
	return out
}

// Sort orders risks by level, then target, object and field.
func Sort(rs []Risk) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Level != b.Level {
			return slices.Index(Levels, a.Level) < slices.Index(Levels, b.Level)
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		return a.Field < b.Field
	})
}

// provider is t.Provides, after a lookup among t's head objects.
func (t Target) provider() func(kind, namespace, name string) bool {
	var heads []*unstructured.Unstructured
	for _, c := range t.Changes {
		if c.Head != nil {
			heads = append(heads, c.Head)
		}
	}
	own := Index(heads)
	return func(kind, namespace, name string) bool {
		return own(kind, namespace, name) || t.Provides != nil && t.Provides(kind, namespace, name)
	}
}

// newRisk fills the identity fields of a risk of o.
func newRisk(target, rule string, level Level, o *unstructured.Unstructured, field string) Risk {
	obj := ObjectName(o)
	id := rule + ":" + obj
	if field != "" {
		id += ":" + field
	}
	return Risk{ID: id, Rule: rule, Level: level, Target: target, Object: obj, Field: field}
}

// ObjectName is how a risk names its object: Kind/namespace/name
// (Kind/name when cluster-scoped).
func ObjectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// value is v as short JSON, "" for nothing.
func value(v any, found bool) string {
	if !found || v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	// Not shortened here: a report masks decrypted values first, and a
	// value cut short would no longer match its mask (Short, after).
	return string(b)
}

// Short cuts a value for a report line, once it is masked.
func Short(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return s
}

// Accept marks the risks accepted by the ids (from accept-risk comments)
// and by the AcceptAnnotation of the objects in objs (head objects, and
// base objects for those that leave): "pull request" or "annotation".
func Accept(rs []Risk, ids []string, annotated map[string]string) {
	for i := range rs {
		r := &rs[i]
		if slices.Contains(ids, r.ID) || slices.Contains(ids, r.Target+":"+r.ID) {
			r.Accepted = "pull request"
			continue
		}
		if a, ok := annotated[r.Object]; ok {
			for _, v := range strings.Split(a, ",") {
				if v = strings.TrimSpace(v); v == "*" || v == r.Rule || v == r.ID {
					r.Accepted = "annotation " + AcceptAnnotation
					break
				}
			}
		}
	}
}

// AcceptedIDs reads the `# ferry: accept-risk <id> [<id>...]` lines of a
// pull request's body.
func AcceptedIDs(body string) []string {
	var ids []string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "# ferry: accept-risk")
		if !ok {
			rest, ok = strings.CutPrefix(line, "<!-- ferry: accept-risk")
			rest = strings.TrimSuffix(strings.TrimSpace(rest), "-->")
		}
		if ok {
			ids = append(ids, strings.Fields(rest)...)
		}
	}
	return ids
}

// Failing are the risks at least as bad as min that nobody accepted.
func Failing(rs []Risk, min Level) []Risk {
	var out []Risk
	for _, r := range rs {
		if r.Accepted == "" && r.Level.AtLeast(min) {
			out = append(out, r)
		}
	}
	return out
}
