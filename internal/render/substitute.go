package render

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/envsubst"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// substituter is a target's postBuild variable substitution, its
// variables loaded once.
type substituter struct {
	// ks is the Kustomization whose inline substitute holds every
	// variable, substituteFrom's merged in.
	ks *unstructured.Unstructured
	// without lists the substituteFrom objects that were not found and
	// were gone without (Spec.LeaveMissing); when there are any, the
	// variables nothing defines are left as written instead of emptied.
	without []string
	// unresolved collects the names of the variables left as written;
	// objects are substituted at once (convertAll), so under mu.
	mu         sync.Mutex
	unresolved map[string]bool
	// namesValid: every variable's name is one Flux accepts, so an
	// object substitution cannot change (mayChange) is left as it is.
	// Flux refuses a bad name on every object, so with one, every
	// object goes through it.
	namesValid bool
}

// substitution prepares Flux's postBuild variable substitution: it loads
// the substituteFrom variables once, with Flux's own loader answered from
// what the repository renders (so a missing ConfigMap or Secret fails as it
// does in a cluster, unless spec.LeaveMissing), and returns the
// substituter. It returns nil when there is no postBuild.
func substitution(ctx context.Context, spec Spec) (*substituter, error) {
	ks := spec.Kustomization
	if _, ok, _ := unstructured.NestedMap(ks.Object, "spec", "postBuild"); !ok {
		return nil, nil
	}
	s := &substituter{unresolved: map[string]bool{}}
	load := ks
	if spec.LeaveMissing {
		var err error
		if load, s.without, err = withoutMissing(ctx, spec); err != nil {
			return nil, err
		}
	}
	vars, err := fluxkustomize.LoadVariables(ctx, &varClient{ctx: ctx, lookup: spec.Lookup}, *load)
	if err != nil {
		return nil, fmt.Errorf("postBuild.substituteFrom: %w", err)
	}
	inline, _, err := unstructured.NestedStringMap(ks.Object, "spec", "postBuild", "substitute")
	if err != nil {
		return nil, fmt.Errorf("postBuild.substitute: %w", err)
	}
	merged := map[string]any{}
	for k, v := range vars {
		merged[k] = v
	}
	for k, v := range inline {
		merged[k] = v
	}
	s.namesValid = true
	for k := range merged {
		s.namesValid = s.namesValid && varName.MatchString(k)
	}
	s.ks = ks.DeepCopy()
	unstructured.RemoveNestedField(s.ks.Object, "spec", "postBuild", "substituteFrom")
	if err := unstructured.SetNestedMap(s.ks.Object, merged, "spec", "postBuild", "substitute"); err != nil {
		return nil, err
	}
	return s, nil
}

// withoutMissing returns the Kustomization with each substituteFrom entry
// that Lookup does not find made optional, and those entries as
// Kind/namespace/name.
func withoutMissing(ctx context.Context, spec Spec) (*unstructured.Unstructured, []string, error) {
	ks := spec.Kustomization
	from, _, err := unstructured.NestedSlice(ks.Object, "spec", "postBuild", "substituteFrom")
	if err != nil {
		return nil, nil, fmt.Errorf("postBuild.substituteFrom: %w", err)
	}
	var without []string
	for i, e := range from {
		ref, ok := e.(map[string]any)
		if !ok {
			continue
		}
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		if optional, _ := ref["optional"].(bool); optional || (kind != "ConfigMap" && kind != "Secret") || name == "" {
			continue
		}
		var found bool
		if spec.Lookup != nil {
			u, err := spec.Lookup(ctx, kind, ks.GetNamespace(), name)
			if err != nil {
				return nil, nil, fmt.Errorf("postBuild.substituteFrom: %s/%s/%s: %w", kind, ks.GetNamespace(), name, err)
			}
			found = u != nil
		}
		if !found {
			without = append(without, kind+"/"+ks.GetNamespace()+"/"+name)
			ref = maps.Clone(ref)
			ref["optional"] = true
			from[i] = ref
		}
	}
	if len(without) == 0 {
		return ks, nil, nil
	}
	out := ks.DeepCopy()
	if err := unstructured.SetNestedSlice(out.Object, from, "spec", "postBuild", "substituteFrom"); err != nil {
		return nil, nil, err
	}
	return out, without, nil
}

// varName is what Flux accepts as a variable name.
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// apply substitutes the variables in one object as kustomize-controller
// does; nil means substitution is disabled on it. When the render went
// without a substituteFrom object, a variable nothing defines is left as
// written (${NAME}) and recorded, where Flux would empty it.
func (s *substituter) apply(ctx context.Context, r *resource.Resource) (*resource.Resource, error) {
	if s.namesValid && !mayChange(r.YNode()) {
		// Nothing to substitute: Flux would give the object back as it
		// is, through a YAML and JSON round trip that changes nothing
		// the render's own conversion to JSON keeps.
		return r, nil
	}
	if len(s.without) == 0 {
		return fluxkustomize.SubstituteVariables(ctx, nil, *s.ks, r, fluxkustomize.SubstituteWithDryRun(true))
	}
	const key = "kustomize.toolkit.fluxcd.io/substitute"
	if r.GetLabels()[key] == fluxkustomize.DisabledValue || r.GetAnnotations()[key] == fluxkustomize.DisabledValue {
		return nil, nil
	}
	vars, _, err := unstructured.NestedStringMap(s.ks.Object, "spec", "postBuild", "substitute")
	if err != nil {
		return nil, err
	}
	for k := range vars {
		if !varName.MatchString(k) {
			return nil, fmt.Errorf("'%s' var name is invalid, must match '%s'", k, varName)
		}
		vars[k] = strings.ReplaceAll(vars[k], "\n", "")
	}
	data, err := r.AsYAML()
	if err != nil {
		return nil, err
	}
	out, err := envsubst.Eval(s.escapeUnknown(string(data), vars), func(name string) (string, bool) {
		return vars[name], true
	})
	if err != nil {
		return nil, fmt.Errorf("variable substitution failed: %w", err)
	}
	js, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("YAMLToJSON: %w", err)
	}
	if err := r.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("UnmarshalJSON: %w", err)
	}
	return r, nil
}

// mayChange says whether Flux's substitution could change the object
// below n: a key or value holds a "$" (the start of any expression
// envsubst expands), an alias, or an integer longer than 15 digits (its
// YAML and JSON round trip takes numbers through float64, which holds
// every integer of up to 15 digits exactly, and not every longer one).
func mayChange(n *kyaml.Node) bool {
	if n == nil {
		return false
	}
	switch n.Kind {
	case kyaml.ScalarNode:
		return strings.Contains(n.Value, "$") ||
			n.ShortTag() == kyaml.NodeTagInt && len(strings.TrimLeft(n.Value, "+-")) > 15
	case kyaml.AliasNode:
		return true
	}
	for _, c := range n.Content {
		if mayChange(c) {
			return true
		}
	}
	return false
}

// varRef is a ${NAME...} expression, with the run of $ before it: an odd
// run is an escaped one ($${NAME}), which envsubst leaves alone.
var varRef = regexp.MustCompile(`(\$+)\{([_[:alpha:]][_[:alpha:][:digit:]]*)`)

// escapeUnknown escapes each ${NAME...} expression whose variable vars
// does not define ($${NAME...}), so that envsubst leaves it as written,
// default and all, and records NAME as unresolved.
func (s *substituter) escapeUnknown(text string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(text, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		dollars, name := sub[1], sub[2]
		if len(dollars)%2 == 0 {
			return m // $${NAME}: escaped already
		}
		if _, ok := vars[name]; ok {
			return m
		}
		s.mu.Lock()
		s.unresolved[name] = true
		s.mu.Unlock()
		return "$" + m
	})
}

// unresolvedNames are the variables left as written, sorted.
func (s *substituter) unresolvedNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.unresolved))
}

// WithoutNote says, in one line, what a render went without (Result's
// Without and Unresolved): "rendered without Secret/flux-system/vars
// (not in Git: only the cluster holds it, and apply, drift and diff
// --live read it there); ${DOMAIN} left as written". It is "" when
// without is empty.
func WithoutNote(without, unresolved []string) string {
	if len(without) == 0 {
		return ""
	}
	note := "rendered without " + strings.Join(without, ", ") + " (not in Git: only the cluster holds it, and apply, drift and diff --live read it there)"
	if len(unresolved) > 0 {
		vars := make([]string, len(unresolved))
		for i, v := range unresolved {
			vars[i] = "${" + v + "}"
		}
		note += "; " + strings.Join(vars, ", ") + " left as written"
	}
	return note
}

// Notes say what the render left out or did not expand, one line each
// naming the target; the last, when there is one, is a warning
// (WithoutNote): the render went without objects only a cluster holds.
func (r *Result) Notes() (notes []string, warning string) {
	for _, id := range r.Omitted {
		notes = append(notes, fmt.Sprintf("target %q: left out encrypted %s (--no-decrypt)", r.Name, id))
	}
	for _, rel := range r.Releases {
		if rel.Skipped != "" {
			notes = append(notes, fmt.Sprintf("target %q: %s not rendered: %s", r.Name, rel.ID, rel.Skipped))
		}
	}
	for _, sk := range r.Skipped {
		notes = append(notes, fmt.Sprintf("target %q: %s not rendered: %s", r.Name, sk.ID, sk.Reason))
	}
	if note := WithoutNote(r.Without, r.Unresolved); note != "" {
		warning = fmt.Sprintf("target %q: %s", r.Name, note)
	}
	return notes, warning
}
