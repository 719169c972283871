package drift

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// owner is one field manager's field set on an object.
type owner struct {
	name string
	set  *fieldpath.Set
}

// fieldSets returns the fields ferry's apply manager owns on u, and the
// field sets of every other manager, named "manager" or "manager (subresource)".
func fieldSets(u *unstructured.Unstructured) (ferry *fieldpath.Set, others []owner) {
	ferry = fieldpath.NewSet()
	for _, mf := range u.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		set := fieldpath.NewSet()
		if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			continue
		}
		if mf.Manager == kube.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			ferry = set
			continue
		}
		name := mf.Manager
		if mf.Subresource != "" {
			name += " (" + mf.Subresource + ")"
		}
		others = append(others, owner{name: name, set: set})
	}
	return ferry, others
}

// managersOf names the managers owning p, or a field p is inside of.
func managersOf(others []owner, p fieldpath.Path) []string {
	var out []string
	for _, o := range others {
		for i := len(p); i > 0; i-- {
			if o.set.Has(p[:i]) {
				out = append(out, o.name)
				break
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// compareFields lists the fields ferry would own after applying (its
// field set on the dry-run result) whose live value differs, or that
// ferry does not own on the live object while another manager does.
// Fields other managers own that ferry does not set, and server defaults,
// are in neither set and so never differ. Values are compared as they
// are and recorded with decrypted values masked.
//
// A field is Pending (changed in Git, not drift) when the configuration
// changed since the last apply and either ferry still owns the field live
// (so it holds the value ferry last gave it) or ferry's fields are as it
// left them (so the field is new in Git). Otherwise it is drift.
func compareFields(lo *kube.LiveObject, mask *secrets.Masker) []Field {
	want, _ := fieldSets(lo.DryRun)
	have, others := fieldSets(lo.Live)
	secret := isSecret(lo.Desired)
	pending := func(p fieldpath.Path) bool {
		if !lo.Recorded {
			return true
		}
		return lo.ConfigChanged && (have.Has(p) || !lo.FieldsChanged)
	}
	var out []Field
	want.Leaves().Iterate(func(p fieldpath.Path) {
		if secret && (under(p, "data") || under(p, "stringData")) {
			return // compared key by key below, without values
		}
		gitV, gitOK := lookup(lo.DryRun.Object, p)
		liveV, liveOK := lookup(lo.Live.Object, p)
		equal := gitOK == liveOK && sameValue(gitV, liveV)
		if equal && have.Has(p) {
			return
		}
		managers := managersOf(others, p)
		if equal && len(managers) == 0 {
			return // ferry will own it; nobody else does, nothing changes
		}
		f := Field{Path: p.String(), Managers: managers, Pending: pending(p)}
		if gitOK {
			f.Git = encode(mask.MaskValue(gitV))
		}
		if liveOK {
			f.Live = encode(mask.MaskValue(liveV))
		}
		out = append(out, f)
	})
	if secret {
		out = append(out, secretFields(lo, have, others, pending)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// secretFields compares a Secret's data key by key (stringData becomes
// data on the server) and never records a value.
func secretFields(lo *kube.LiveObject, have *fieldpath.Set, others []owner, pending func(fieldpath.Path) bool) []Field {
	keys := map[string]bool{}
	for _, field := range []string{"data", "stringData"} {
		m, _ := lo.Desired.Object[field].(map[string]any)
		for k := range m {
			keys[k] = true
		}
	}
	gitData, _ := lo.DryRun.Object["data"].(map[string]any)
	liveData, _ := lo.Live.Object["data"].(map[string]any)
	var out []Field
	for k := range keys {
		g, gok := gitData[k]
		l, lok := liveData[k]
		if gok == lok && sameValue(g, l) {
			continue
		}
		p := fieldpath.MakePathOrDie("data", k)
		sp := fieldpath.MakePathOrDie("stringData", k)
		// Owning stringData.<key> is owning the key: the server records
		// ownership of what was applied.
		pend := pending(p) || (lo.ConfigChanged && have.Has(sp))
		out = append(out, Field{Path: p.String(), Hidden: true, Managers: managersOf(others, p), Pending: pend})
	}
	return out
}

func isSecret(u *unstructured.Unstructured) bool {
	return u != nil && u.GetKind() == "Secret" && u.GroupVersionKind().Group == ""
}

func under(p fieldpath.Path, field string) bool {
	return len(p) > 0 && p[0].FieldName != nil && *p[0].FieldName == field
}

// lookup finds the value at p in an unstructured object.
func lookup(obj any, p fieldpath.Path) (any, bool) {
	cur := obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
		case pe.Key != nil:
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			if cur, ok = firstItem(l, func(item any) bool { return hasKeys(item, *pe.Key) }); !ok {
				return nil, false
			}
		case pe.Value != nil:
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			want := (*pe.Value).Unstructured()
			if cur, ok = firstItem(l, func(item any) bool { return sameValue(item, want) }); !ok {
				return nil, false
			}
		case pe.Index != nil:
			l, ok := cur.([]any)
			if !ok || *pe.Index < 0 || *pe.Index >= len(l) {
				return nil, false
			}
			cur = l[*pe.Index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// firstItem is the first item of a list that matches.
func firstItem(l []any, match func(any) bool) (any, bool) {
	for _, item := range l {
		if match(item) {
			return item, true
		}
	}
	return nil, false
}

// hasKeys says whether a list item is an object with the key fields of an
// associative list's element (a container's name, a port's number and
// protocol).
func hasKeys(item any, keys value.FieldList) bool {
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range keys {
		if v, ok := m[k.Name]; !ok || !sameValue(v, k.Value.Unstructured()) {
			return false
		}
	}
	return true
}

// sameValue compares two unstructured values as JSON, so that int64(2)
// and float64(2) are equal.
func sameValue(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// maxValue bounds a value's JSON in a report.
const maxValue = 200

func encode(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) > maxValue {
		s := string(b[:maxValue])
		// Cut on a rune boundary and keep it one JSON string.
		s = strings.ToValidUTF8(s, "")
		b, _ = json.Marshal(s + "…")
	}
	return b
}
