package diff

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets/masktest"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// longSecret is folded by YAML at a space: only masking the data before
// it is encoded hides it.
const longSecret = "passphrase of many words: zanzibar quokka marmalade xylophone jubilee nebula pterodactyl"

// secretWords are the parts of longSecret a folded YAML line may show.
var secretWords = strings.Fields("zanzibar quokka marmalade xylophone jubilee nebula pterodactyl")

// maskCases are decrypted values every encoder writes differently.
var maskCases = []struct{ name, value string }{
	{"html", `p<ss&w>rd`},
	{"quotes and backslash", `say "hi" \ now`},
	{"tab", "tab\tseparated"},
	{"newline", "first-line\nsecond-line"},
	{"unicode", "pässwörd-ключ-🔑"},
	{"long", longSecret},
}

// renders returns the report in every format: JSON, text (plain and
// colored) and markdown.
func renders(t *testing.T, r *Report) map[string]string {
	t.Helper()
	out := map[string]string{}
	var js, text, color strings.Builder
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := Text(&text, r, false); err != nil {
		t.Fatal(err)
	}
	if err := Text(&color, r, true); err != nil {
		t.Fatal(err)
	}
	out["json"], out["text"], out["color"] = js.String(), text.String(), color.String()
	out["markdown"] = strings.Join(Markdown(r), "\n")
	return out
}

// assertNoLeak fails when an output holds any encoding of a value.
func assertNoLeak(t *testing.T, outputs map[string]string, values ...string) {
	t.Helper()
	for format, out := range outputs {
		for _, v := range values {
			if got := secretstest.Leaks(out, v); len(got) > 0 {
				t.Errorf("%s output holds %v:\n%s", format, got, out)
			}
		}
		for _, w := range secretWords {
			if strings.Contains(out, w) {
				t.Errorf("%s output holds %q of the long value:\n%s", format, w, out)
			}
		}
	}
}

// TestSetsMaskDecryptedValues: a decrypted value that kustomize copied
// out of its Secret (replacements into a ConfigMap, plain and as the
// Secret's base64 data; an annotation; a container's env) is in no
// format of the report, in no encoding.
func TestSetsMaskDecryptedValues(t *testing.T) {
	for _, tc := range maskCases {
		t.Run(tc.name, func(t *testing.T) {
			m := masktest.Masker(t, tc.value)
			b64 := base64.StdEncoding.EncodeToString([]byte(tc.value))
			cm := func(data map[string]any) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "app", "namespace": "shop", "annotations": map[string]any{"copied": data["plain"]}},
					"data":     data,
				}}
			}
			deploy := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": "shop"},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
					"name": "web", "env": []any{map[string]any{"name": "TOKEN", "value": tc.value}},
				}}}}},
			}}
			secret := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": "app", "namespace": "shop"},
				"data":     map[string]any{"token": b64},
			}}
			base := []*unstructured.Unstructured{cm(map[string]any{"plain": "before"})}
			head := []*unstructured.Unstructured{
				cm(map[string]any{"plain": tc.value, "base64": b64, "inside": "user=shop password=" + tc.value + " host=db"}),
				deploy, secret,
			}
			objs := Sets(base, head, SetsOptions{Mask: m})
			r := &Report{Base: "b", Head: "h", Targets: []Target{{
				Name: "shop", Objects: objs, Counts: count(objs),
				// An error that quotes the value, as kustomize and the API
				// server do: Revisions redacts the report before it returns.
				Error: fmt.Sprintf("kustomize: invalid value %q in %s", tc.value, b64), Side: "head",
			}}}
			m.Redact(r)
			outputs := renders(t, r)
			assertNoLeak(t, outputs, tc.value)
			if !strings.Contains(outputs["text"], "Deployment.apps/shop/web (added)") || !strings.Contains(outputs["text"], "+  plain: ") || !strings.Contains(outputs["text"], "***") {
				t.Errorf("the report lost the objects or the masks:\n%s", outputs["text"])
			}
		})
	}
}

// TestSetsMaskedChange: an object whose only change is a decrypted value
// (masked on both sides) is changed, with a warning in place of a diff.
func TestSetsMaskedChange(t *testing.T) {
	m := masktest.Masker(t, "old-token-value", "new-token-value")
	cm := func(v string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "app", "namespace": "shop"},
			"data": map[string]any{"token": v},
		}}}
	}
	want := []Object{{
		ID:       manifest.ID{Kind: "ConfigMap", Namespace: "shop", Name: "app"},
		Action:   Changed,
		Warnings: []string{maskedChange},
	}}
	if d := cmp.Diff(want, Sets(cm("old-token-value"), cm("new-token-value"), SetsOptions{Mask: m})); d != "" {
		t.Errorf("masked change (-want +got):\n%s", d)
	}
	want[0].Action, want[0].Warnings = Unchanged, nil
	if d := cmp.Diff(want, Sets(cm("new-token-value"), cm("new-token-value"), SetsOptions{Mask: m})); d != "" {
		t.Errorf("no change (-want +got):\n%s", d)
	}
}

// TestLiveMasksDecryptedValues: the same for diff --live, the cluster's
// errors included.
func TestLiveMasksDecryptedValues(t *testing.T) {
	for _, tc := range maskCases {
		t.Run(tc.name, func(t *testing.T) {
			m := masktest.Masker(t, tc.value)
			cm := func(name string, data map[string]any) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "shop"}, "data": data,
				}}
			}
			id := func(name string) manifest.ID { return manifest.ID{Kind: "ConfigMap", Namespace: "shop", Name: name} }
			copied := cm("copied", map[string]any{"token": tc.value})
			cmpr := &kube.Comparison{
				Objects: []*kube.LiveObject{
					{ID: id("copied"), Desired: copied, Live: cm("copied", map[string]any{"token": "stale"}), DryRun: copied},
					{ID: id("new"), Desired: cm("new", map[string]any{"b64": base64.StdEncoding.EncodeToString([]byte(tc.value))})},
					{ID: id("bad"), Desired: cm("bad", nil), Err: fmt.Errorf("ConfigMap %q is invalid: data.token: Invalid value: %q", "bad", tc.value)},
				},
				Orphans: []*unstructured.Unstructured{cm("old", map[string]any{"token": tc.value})},
			}
			live := Live(cmpr, true, m)
			c := count(live)
			r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "shop", Live: live, LiveCounts: &c}}}
			assertNoLeak(t, renders(t, r), tc.value)
			if len(live) != 4 || live[2].Action != Changed || len(live[2].Warnings) != 1 {
				t.Errorf("live objects: %+v", live)
			}
		})
	}
}
