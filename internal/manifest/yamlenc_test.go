package manifest

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestEncodeYAMLAsSigsYAML: encodeYAML writes what sigs.k8s.io/yaml.Marshal
// writes, byte for byte, for objects of every JSON type, as unstructured
// holds them after a JSON round trip and as they are built in code, and
// leaves them unchanged.
func TestEncodeYAMLAsSigsYAML(t *testing.T) {
	scalars := []any{
		nil, true, false, int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 7,
		0.0, math.Copysign(0, -1), 1.5, -2.25, 3.0, 1e6, 123456789.0, 1e15, 1e19, 1.8446744073709552e19, 1e20, 9.99e20, 1e21, 1e22, -1e19, -9.3e18,
		1e-7, 0.000001, 1.0000000000000002, math.MaxFloat64, math.SmallestNonzeroFloat64,
		"", "plain", "yes", "no", "on", "off", "y", "~", "null", "true", "1", "1.0", "0x1F", "0o17", "1e3", ".inf", "-", "---", "...",
		"a: b", "- x", "#comment", "key: value\nother: 2", "line\n", "trailing ", " leading", "tab\there", "quote\"s", "'single'",
		"<html>&amp;", "ünïcødé ✓", "\u2028", "emoji 🚢", "2024-01-01", "12:30", "*alias", "&anchor", "!tag", "%directive", "@at", "`tick`",
		"{a: 1}", "[1, 2]", "=", "<<", strings.Repeat("long ", 40),
	}
	for i, v := range scalars {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "value": v, "list": []any{v, map[string]any{"in": v}}}
		compare(t, i, obj)
	}
	// Random trees of them.
	r := rand.New(rand.NewPCG(1, 2))
	var tree func(depth int) any
	tree = func(depth int) any {
		switch k := r.IntN(4); {
		case depth > 3 || k == 0:
			return scalars[r.IntN(len(scalars))]
		case k == 1:
			l := make([]any, r.IntN(4))
			for i := range l {
				l[i] = tree(depth + 1)
			}
			return l
		default:
			m := map[string]any{}
			for range r.IntN(5) {
				key := scalars[r.IntN(len(scalars))]
				s, ok := key.(string)
				if !ok {
					s = "k"
				}
				m[s] = tree(depth + 1)
			}
			return m
		}
	}
	for i := range 500 {
		obj := map[string]any{"apiVersion": "v1", "kind": "X", "spec": tree(0)}
		compare(t, 1000+i, obj)
		// As unstructured holds it after JSON.
		b, err := (&unstructured.Unstructured{Object: obj}).MarshalJSON()
		if err != nil {
			continue // a NaN or so: no JSON
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		compare(t, 2000+i, u.Object)
	}
}

// TestEncodeYAMLDetour: what JSON cannot hold, or would change, takes
// sigs.k8s.io/yaml's own way, errors included.
func TestEncodeYAMLDetour(t *testing.T) {
	for i, v := range []any{"bad \xff utf-8", math.NaN(), math.Inf(1), int32(3), float32(1.5), []string{"a"}, map[string]string{"a": "b"}} {
		compare(t, i, map[string]any{"v": v})
		compare(t, i, map[string]any{"bad \xff key": "v"})
	}
}

func compare(t *testing.T, i int, obj map[string]any) {
	t.Helper()
	before, _ := yaml.Marshal(obj)
	want, werr := yaml.Marshal(obj)
	got, gerr := encodeYAML(obj)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("object %d: sigs.k8s.io/yaml: %v, encodeYAML: %v", i, werr, gerr)
	}
	if string(got) != string(want) {
		t.Fatalf("object %d %#v:\nsigs.k8s.io/yaml:\n%s\nencodeYAML:\n%s", i, obj, want, got)
	}
	if after, _ := yaml.Marshal(obj); string(after) != string(before) {
		t.Fatalf("object %d changed", i)
	}
}
