package manifest

import (
	"maps"
	"math"
	"slices"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// encodeYAML is sigs.k8s.io/yaml.Marshal(obj) for an object of JSON's
// types (what unstructured holds), byte for byte, without its detour:
// that marshals the object to JSON and parses the JSON back with yaml.v2
// before yaml.v2 writes it, half of a render's output time. What the
// detour changes is done here: a float64 holding an integer yaml.v2 would
// parse as one becomes that integer. Anything else the detour could
// change (a NaN or an infinity, a string that is not UTF-8, a type JSON
// does not have) takes the detour.
func encodeYAML(obj map[string]any) ([]byte, error) {
	v, _, ok := jsonTyped(obj)
	if !ok {
		return yaml.Marshal(obj)
	}
	return yamlv2.Marshal(v)
}

// jsonTyped is v as yaml.v2 parses it back from its JSON, whether that is
// another value than v, and false when v holds something the detour may
// change otherwise. v itself is never changed: a map or list that holds
// another value is copied.
func jsonTyped(v any) (any, bool, bool) {
	switch x := v.(type) {
	case nil, bool, int64, int:
		return v, false, true
	case string:
		return v, false, utf8.ValidString(x)
	case float64:
		return jsonFloat(x)
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			t, changed, ok := jsonTyped(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false, false
			}
			if changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = t
			}
		}
		if out == nil {
			return x, false, true
		}
		return out, true, true
	case []any:
		var out []any
		for i, e := range x {
			t, changed, ok := jsonTyped(e)
			if !ok {
				return nil, false, false
			}
			if changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = t
			}
		}
		if out == nil {
			return x, false, true
		}
		return out, true, true
	}
	return nil, false, false
}

// jsonFloat is f as yaml.v2 parses json.Marshal's text of it: an
// integer's text below 2^63 an int, below 2^64 a uint64, anything else
// the float (json.Marshal writes a fraction, or an exponent from 1e21 on,
// which yaml.v2 parses as a float). NaN and the infinities have no JSON
// text.
func jsonFloat(f float64) (any, bool, bool) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, false, false
	case f != math.Trunc(f) || math.Abs(f) >= 1e21:
		return f, false, true
	case f >= -(1<<63) && f < 1<<63:
		return int64(f), true, true
	case f >= 0 && f < 1<<64:
		return uint64(f), true, true
	}
	return f, false, true
}
