package resourceset

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"sort"
	"strconv"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// StaticType is the provider type whose one input set is its
// spec.defaultValues: the only type resolved without Options.Dynamic.
const StaticType = "Static"

// source is one origin of input sets: the ResourceSet itself (spec.inputs)
// or one provider.
type source struct {
	obj    *unstructured.Unstructured
	inputs []map[string]any
}

// inputs computes the input sets of the ResourceSet with their built-in
// fields, as its strategy combines them.
func (e *expansion) inputs(ctx context.Context, s *spec) ([]map[string]any, error) {
	var sources []source
	if len(s.Inputs) > 0 {
		for i, in := range s.Inputs {
			if in == nil { // "- null" or "- ": an input set without values
				s.Inputs[i] = map[string]any{}
			}
		}
		sources = append(sources, source{obj: e.rset, inputs: s.Inputs})
	}
	providers, err := e.selectProviders(s.InputsFrom)
	if err != nil {
		return nil, err
	}
	for _, p := range providers {
		in, err := e.providerInputs(ctx, p)
		if err != nil {
			return nil, err
		}
		sources = append(sources, source{obj: p, inputs: in})
	}
	for _, src := range sources {
		for _, in := range src.inputs {
			in["provider"] = map[string]any{
				"apiVersion": APIVersion,
				"kind":       src.obj.GetKind(),
				"name":       src.obj.GetName(),
				"namespace":  src.obj.GetNamespace(),
			}
		}
	}
	if s.strategy() == Permute {
		return permute(sources, s.InputStrategy.IncludeEmptyProviders, e.opts.MaxInputs)
	}
	var all []map[string]any
	for _, src := range sources {
		all = append(all, src.inputs...)
	}
	return all, nil
}

// selectProviders returns the providers spec.inputsFrom selects, each
// once, ordered by name. Only providers in the ResourceSet's namespace
// count. A provider named but not given is an error: ferry cannot tell
// what it would export.
func (e *expansion) selectProviders(refs []inputsFrom) ([]*unstructured.Unstructured, error) {
	ns := e.rset.GetNamespace()
	var local []*unstructured.Unstructured
	for _, p := range e.opts.Providers {
		if IsProvider(p) && p.GetNamespace() == ns {
			local = append(local, p)
		}
	}
	chosen := map[string]*unstructured.Unstructured{}
	for i, r := range refs {
		if r.Name != "" {
			found := false
			for _, p := range local {
				if p.GetName() == r.Name {
					chosen[p.GetName()], found = p, true
				}
			}
			if !found {
				return nil, fmt.Errorf("spec.inputsFrom[%d]: %s/%s/%s not found among the providers given", i, ProviderKind, ns, r.Name)
			}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(r.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.inputsFrom[%d].selector: %w", i, err)
		}
		for _, p := range local {
			if sel.Matches(labels.Set(p.GetLabels())) {
				chosen[p.GetName()] = p
			}
		}
	}
	out := make([]*unstructured.Unstructured, 0, len(chosen))
	for _, p := range chosen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// providerInputs returns the input sets one provider exports: for a Static
// provider its spec.defaultValues with an id, for any other type what
// Options.Dynamic says.
func (e *expansion) providerInputs(ctx context.Context, p *unstructured.Unstructured) ([]map[string]any, error) {
	typ, _, _ := unstructured.NestedString(p.Object, "spec", "type")
	if typ == StaticType {
		in := map[string]any{}
		if dv, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "defaultValues"); ok && dv != nil {
			m, ok := dv.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: spec.defaultValues is not a map", ref(p))
			}
			if err := copyJSON(m, &in); err != nil {
				return nil, fmt.Errorf("%s: spec.defaultValues: %w", ref(p), err)
			}
		}
		in["id"] = StaticID(p)
		return []map[string]any{in}, nil
	}
	if e.opts.Dynamic == nil {
		return nil, &SkipError{ResourceSet: e.ref, Reason: fmt.Sprintf("its inputs come from %s of type %s, which only the cluster can resolve; ferry.yaml would have to give that provider's inputs", ref(p), typeOrNone(typ))}
	}
	got, err := e.opts.Dynamic(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s: resolving inputs: %w", ref(p), err)
	}
	out := make([]map[string]any, len(got))
	for i, in := range got {
		// A copy with JSON's types, so built-in fields added later never
		// reach the caller's maps.
		if err := copyJSON(in, &out[i]); err != nil {
			return nil, fmt.Errorf("%s: input %d: %w", ref(p), i, err)
		}
		if out[i] == nil {
			out[i] = map[string]any{}
		}
	}
	return out, nil
}

func typeOrNone(t string) string {
	if t == "" {
		return "(none)"
	}
	return t
}

// StaticID is the id of a Static provider's input set: the Adler-32
// checksum of its metadata.uid, as the operator computes it in the
// cluster. A provider read from a file has no uid yet; its id is then the
// checksum of its name, as `flux-operator build rset` computes it.
func StaticID(p *unstructured.Unstructured) string {
	key := string(p.GetUID())
	if key == "" {
		key = p.GetName()
	}
	return checksum(key)
}

// checksum is the decimal Adler-32 checksum of s, the form of every id the
// operator derives.
func checksum(s string) string {
	return strconv.FormatUint(uint64(adler32.Checksum([]byte(s))), 10)
}

// copyJSON copies v into out through JSON, so numbers take the types the
// API machinery gives them (int64 for integers, float64 otherwise).
func copyJSON(v any, out *map[string]any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(data, out)
}

// permute returns the Cartesian product of the sources' input sets. Each
// permutation holds every source's input set under the source's
// normalized name, and an id: the checksum of "key=index" pairs joined by
// "/", in source order. A source without inputs is left out, unless
// includeEmpty, when it makes the product empty.
func permute(sources []source, includeEmpty bool, max int) ([]map[string]any, error) {
	var used []source
	total := 1
	for _, src := range sources {
		if len(src.inputs) == 0 {
			if includeEmpty {
				return nil, nil
			}
			continue
		}
		total *= len(src.inputs)
		if total > max {
			return nil, fmt.Errorf("spec.inputStrategy %s: more than %d input sets (%s makes them at least %d)", Permute, max, ref(src.obj), total)
		}
		used = append(used, src)
	}
	if len(used) == 0 {
		return nil, nil
	}
	keys := make([]string, len(used))
	for i, src := range used {
		keys[i] = NormalizeName(src.obj.GetName())
	}
	out := make([]map[string]any, 0, total)
	idx := make([]int, len(used))
	for {
		perm := make(map[string]any, len(used)+1)
		parts := make([]string, len(used))
		for i, src := range used {
			perm[keys[i]] = src.inputs[idx[i]]
			parts[i] = keys[i] + "=" + strconv.Itoa(idx[i])
		}
		perm["id"] = checksum(strings.Join(parts, "/"))
		out = append(out, perm)
		// Advance the last source first, so the first source's input
		// sets vary slowest.
		i := len(used) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(used[i].inputs) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out, nil
		}
	}
}

// NormalizeName is the key under which the Permute strategy places the
// input sets of a source named name: lower case, spaces and punctuation
// turned into underscores, other characters outside [a-z0-9_] dropped,
// and runs of underscores collapsed, none at either end.
func NormalizeName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case unicode.IsSpace(r), unicode.IsPunct(r):
			b.WriteRune('_')
		}
	}
	var words []string
	for _, w := range strings.Split(b.String(), "_") {
		if w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, "_")
}
