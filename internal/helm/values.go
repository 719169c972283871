package helm

import (
	"encoding/base64"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Lookup finds a ConfigMap or Secret of the same cluster's render by kind,
// namespace and name, decrypted.
type Lookup func(kind, namespace, name string) (*unstructured.Unstructured, bool)

// ComposeValues builds the values a release is installed with, in
// helm-controller's order: each valuesFrom entry in turn (a whole YAML
// document merged over what came before, or with targetPath one value set
// at that path in Helm's --set syntax), then the inline spec.values merged
// over the result. References are looked up in the HelmRelease's
// namespace; a missing optional one (or its missing key) is skipped.
//
// Merging is Helm's: maps merge key by key, anything else replaces. A
// targetPath entry is set on the values composed so far with the inline
// values already merged in, so it wins over them where they share a map
// (helm-controller's order, reproduced here on a copy so r is left as
// it was). Errors name the spec.valuesFrom entry and the object it
// refers to; the caller adds the HelmRelease and its chart.
func ComposeValues(r *Release, lookup Lookup) (map[string]any, error) {
	inline := copyMap(r.Values)
	result := map[string]any{}
	for i, ref := range r.ValuesFrom {
		data, ok, err := valuesData(r, ref, lookup)
		if err != nil {
			return nil, fmt.Errorf("spec.valuesFrom[%d]: %w", i, err)
		}
		if !ok {
			continue
		}
		if ref.TargetPath != "" {
			result = loader.MergeMaps(result, inline)
			if err := setPath(result, ref.TargetPath, data); err != nil {
				return nil, fmt.Errorf("spec.valuesFrom[%d]: setting targetPath %q from %s key %q: %w",
					i, ref.TargetPath, refID(r, ref), ref.ValuesKey, withheld(ref, err))
			}
			continue
		}
		vals, err := common.ReadValues([]byte(data))
		if err != nil {
			return nil, fmt.Errorf("spec.valuesFrom[%d]: reading key %q of %s as YAML: %w",
				i, ref.ValuesKey, refID(r, ref), withheld(ref, err))
		}
		result = loader.MergeMaps(result, vals)
	}
	return loader.MergeMaps(result, inline), nil
}

// valuesData is the value of ref's key; false when an optional reference
// or its key is missing.
func valuesData(r *Release, ref ValuesReference, lookup Lookup) (string, bool, error) {
	var obj *unstructured.Unstructured
	found := false
	if lookup != nil {
		obj, found = lookup(ref.Kind, r.Namespace, ref.Name)
	}
	if !found {
		if ref.Optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%s not found", refID(r, ref))
	}
	data, err := objectData(obj)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", refID(r, ref), err)
	}
	v, ok := data[ref.ValuesKey]
	if !ok {
		if ref.Optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%s has no key %q", refID(r, ref), ref.ValuesKey)
	}
	return v, true, nil
}

// objectData is a ConfigMap's data, or a Secret's data decoded with its
// stringData over it (as the API server stores them).
func objectData(obj *unstructured.Unstructured) (map[string]string, error) {
	data, _, err := unstructured.NestedStringMap(obj.Object, "data")
	if err != nil {
		return nil, fmt.Errorf("reading data: %w", err)
	}
	if obj.GetKind() != "Secret" {
		return data, nil
	}
	out := make(map[string]string, len(data))
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("data key %q is not base64", k)
		}
		out[k] = string(b)
	}
	str, _, err := unstructured.NestedStringMap(obj.Object, "stringData")
	if err != nil {
		return nil, fmt.Errorf("reading stringData: %w", err)
	}
	for k, v := range str {
		out[k] = v
	}
	return out, nil
}

func refID(r *Release, ref ValuesReference) string {
	return ref.Kind + "/" + r.Namespace + "/" + ref.Name
}

// withheld keeps the message of a parser error out of errors about a
// Secret: it may quote the Secret's value.
func withheld(ref ValuesReference, err error) error {
	if ref.Kind == "Secret" {
		return fmt.Errorf("the value does not parse (the parser's message is withheld: it may quote the Secret)")
	}
	return err
}

// setPath sets the value at path (--set syntax) in values. A value in
// single or double quotes is set as a string without its quotes; any
// other is typed as --set types it (numbers, booleans, null).
func setPath(values map[string]any, path, value string) error {
	quoted := func(q string) bool { return strings.HasPrefix(value, q) && strings.HasSuffix(value, q) }
	if quoted(`"`) || quoted("'") {
		return strvals.ParseIntoString(path+"="+strings.Trim(value, `"'`), values)
	}
	return strvals.ParseInto(path+"="+value, values)
}

// copyMap deep-copies values decoded from YAML or JSON.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyMap(v)
	case common.Values:
		return copyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
