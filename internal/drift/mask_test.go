package drift

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets/masktest"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// ferryOwnsCopies: ferry's apply owns the fields kustomize copied a
// decrypted value into.
const ferryOwnsCopies = `  - {manager: ferry, operation: Apply, apiVersion: v1, fieldsType: FieldsV1,
     fieldsV1: {"f:data": {"f:token": {}, "f:b64": {}, "f:config": {}}, "f:metadata": {"f:annotations": {"f:copied": {}}}}}`

// copies is a ConfigMap that got the value by kustomize replacements:
// plain, as the Secret's base64 data, at the end of a value longer than a
// report shows, and in an annotation.
func copies(t *testing.T, value string) *unstructured.Unstructured {
	u := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: ns\n  managedFields:\n"+ferryOwnsCopies+"\n")
	u.Object["data"] = map[string]any{
		"token":  value,
		"b64":    base64.StdEncoding.EncodeToString([]byte(value)),
		"config": strings.Repeat("x", maxValue-16) + value,
	}
	u.SetAnnotations(map[string]string{"copied": value})
	return u
}

// TestDetectMasksDecryptedValues: drift of fields that hold a decrypted
// value shows the fields and owners, and the value in no format, in no
// encoding: not even cut short where a field value is truncated.
func TestDetectMasksDecryptedValues(t *testing.T) {
	cases := []struct{ name, value string }{
		{"html", `p<ss&w>rd`},
		{"quotes and backslash", `say "hi" \ now`},
		{"tab", "tab\tseparated"},
		{"newline", "first-line\nsecond-line"},
		{"unicode", "pässwörd-ключ-🔑"},
		{"long", "passphrase of many words: zanzibar quokka marmalade xylophone jubilee nebula pterodactyl"},
		{"cut short", "truncated-secret-value-9f8e7d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := masktest.Masker(t, tc.value)
			want := copies(t, tc.value)
			live := copies(t, "stale-value")
			live.Object["data"] = map[string]any{"token": "stale", "b64": "c3RhbGU=", "config": "stale"}
			live.SetAnnotations(map[string]string{"copied": "stale"})
			bad := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: ns}\n")
			c := &kube.Comparison{Target: "stage", Inventory: inventory(revA), Objects: []*kube.LiveObject{
				{ID: manifest.IDOf(want), Desired: want, DryRun: want, Live: live, Member: true, Recorded: true},
				{ID: manifest.IDOf(bad), Desired: bad, Live: bad, Member: true, Recorded: true,
					Err: fmt.Errorf("ConfigMap %q is invalid: data.token: Invalid value: %q", "bad", tc.value)},
			}}
			r := Detect(c, revA, m)
			if len(r.Objects) != 2 || r.Objects[0].Class != Modified || len(r.Objects[0].Fields) != 4 || r.Objects[1].Class != Unknown {
				t.Fatalf("objects %+v", r.Objects)
			}
			var js, text, md strings.Builder
			if err := JSON(&js, []*Report{r}); err != nil {
				t.Fatal(err)
			}
			if err := Text(&text, []*Report{r}); err != nil {
				t.Fatal(err)
			}
			if err := Markdown(&md, []*Report{r}); err != nil {
				t.Fatal(err)
			}
			for format, out := range map[string]string{"json": js.String(), "text": text.String(), "markdown": md.String(), "issue": MarkdownTarget(r)} {
				if got := secretstest.Leaks(out, tc.value); len(got) > 0 {
					t.Errorf("%s output holds %v:\n%s", format, got, out)
				}
				for _, w := range strings.Fields(tc.value) {
					if len(w) > 5 && strings.Contains(out, w) {
						t.Errorf("%s output holds %q of the value:\n%s", format, w, out)
					}
				}
				if strings.Contains(out, "truncated-se") {
					t.Errorf("%s output holds the start of a value cut short:\n%s", format, out)
				}
				if !strings.Contains(out, ".data.token") || !strings.Contains(out, "stale") {
					t.Errorf("%s output does not show the drifted field:\n%s", format, out)
				}
			}
		})
	}
}
