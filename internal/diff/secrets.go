package diff

import (
	"encoding/base64"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// redacted replaces every Secret value in a diff.
const redacted = "<redacted>"

func isSecret(id manifest.ID) bool { return id.Kind == "Secret" && id.Group == "" }

// text is the normalized YAML an object is diffed as. Secret values (and
// annotations that may copy them) are redacted, and decrypted values that
// reached other fields are masked before the YAML is written (nil mask:
// shown as they are).
func text(u *unstructured.Unstructured, mask *secrets.Masker) string {
	if isSecret(manifest.IDOf(u)) {
		u = u.DeepCopy()
		for _, field := range []string{"data", "stringData"} {
			m, ok := u.Object[field].(map[string]any)
			if !ok {
				continue
			}
			for k := range m {
				m[k] = redacted
			}
		}
		if a := u.GetAnnotations(); a != nil {
			delete(a, "kubectl.kubernetes.io/last-applied-configuration")
			if len(a) == 0 {
				a = nil
			}
			u.SetAnnotations(a)
		}
		delete(u.Object, "sops")
	}
	if m, ok := mask.MaskValue(u.Object).(map[string]any); ok {
		u = &unstructured.Unstructured{Object: m}
	}
	b, err := manifest.YAML(u)
	if err != nil {
		return "# " + mask.Mask(err.Error()) + "\n"
	}
	return string(b)
}

// maskedChange warns about an object whose only differences are in
// values that hold decrypted secrets: masked, its diff reads as empty.
const maskedChange = "a value that holds a decrypted secret changed (masked in the diff)"

// diffMasked is the diff of two objects with decrypted values masked,
// and whether they differ only where the masks hide it.
func diffMasked(base, head *unstructured.Unstructured, mask *secrets.Masker) (string, bool) {
	d := Unified(text(base, mask), text(head, mask))
	if d != "" || mask == nil || reflect.DeepEqual(base.Object, head.Object) {
		return d, false
	}
	return "", text(base, nil) != text(head, nil)
}

// secretValues maps each key of a Secret to its value (data decoded,
// stringData taking precedence as the API server merges it). The values
// stay inside this package: only comparisons leave it.
func secretValues(u *unstructured.Unstructured) (map[string]string, bool) {
	out := map[string]string{}
	encrypted := false
	if data, ok := u.Object["data"].(map[string]any); ok {
		for k, v := range data {
			s, _ := v.(string)
			if strings.HasPrefix(s, "ENC[") {
				encrypted = true
				out[k] = s
				continue
			}
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				s = string(b)
			}
			out[k] = s
		}
	}
	if data, ok := u.Object["stringData"].(map[string]any); ok {
		for k, v := range data {
			s, _ := v.(string)
			if strings.HasPrefix(s, "ENC[") {
				encrypted = true
			}
			out[k] = s
		}
	}
	if _, ok := u.Object["sops"]; ok {
		encrypted = true
	}
	return out, encrypted
}

func secretKeys(u *unstructured.Unstructured) []string {
	v, _ := secretValues(u)
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func compareSecrets(base, head *unstructured.Unstructured) *SecretChange {
	bv, be := secretValues(base)
	hv, he := secretValues(head)
	sc := &SecretChange{Encrypted: be || he}
	sc.Added, sc.Removed, sc.Changed = keyChanges(bv, hv)
	return sc
}

// keyChanges compares two sets of keys and their values (a Secret's
// values, an encrypted file's ciphertexts): the keys only head has, those
// only base has, and those whose value changed, each sorted.
func keyChanges(base, head map[string]string) (added, removed, changed []string) {
	for k, v := range head {
		old, ok := base[k]
		switch {
		case !ok:
			added = append(added, k)
		case old != v:
			changed = append(changed, k)
		}
	}
	for k := range base {
		if _, ok := head[k]; !ok {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	sort.Strings(changed)
	return added, removed, changed
}

func (sc *SecretChange) empty() bool {
	return len(sc.Added)+len(sc.Removed)+len(sc.Changed) == 0
}
