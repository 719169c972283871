package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// maskerOf returns a masker watching a decryptor that holds values, as
// if it had decrypted them.
func maskerOf(values ...string) *Masker {
	d := NewDecryptor(nil)
	for _, v := range values {
		d.values[v] = struct{}{}
	}
	m := NewMasker()
	m.Watch(d)
	return m
}

// hardValues are decrypted values every encoder writes differently.
var hardValues = map[string]string{
	"html":      `p<ss&w>rd`,
	"quote":     `say "hello" now`,
	"backslash": `C:\secret\path`,
	"tab":       "tab\tseparated",
	"newline":   "first-line\nsecond-line",
	"unicode":   "pässwörd-ключ-🔑",
	"control":   "bell\x07and\x1bescape",
	"separator": "sep-one\u2028sep-two\u00a0nbsp",
	"single":    "it's-a-secret",
	"mixed":     "a<b>\"c\"\\d\te&f'g\n🔑h",
	"long":      "a long secret phrase with spaces that YAML folds when it runs past the eightieth column of a line",
}

// encodings are the ways a value reaches output, each written by the
// library that writes it in ferry.
var encodings = map[string]func(t *testing.T, v string) string{
	"raw": func(_ *testing.T, v string) string { return "value: " + v + " end" },
	"json": func(t *testing.T, v string) string {
		b, err := json.Marshal(map[string]string{"k": v})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	},
	"json-indent-no-html": func(t *testing.T, v string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode([]any{map[string]any{"k": v}}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	},
	"json-twice": func(t *testing.T, v string) string {
		// A JSON document quoted in a JSON string (a drift value).
		inner, _ := json.Marshal(v)
		b, _ := json.Marshal(map[string]string{"k": v, "raw": string(inner)})
		return string(b)
	},
	"yaml-v2": func(t *testing.T, v string) string {
		b, err := yaml.Marshal(map[string]any{"data": map[string]string{"k": v}})
		if err != nil {
			t.Skipf("not encodable: %v", err) // ferry then shows the error
		}
		return string(b)
	},
	"yaml-v3": func(t *testing.T, v string) string {
		b, err := yamlv3.Marshal(map[string]string{"k": v})
		if err != nil {
			t.Skipf("not encodable: %v", err)
		}
		return string(b)
	},
	"yaml-v3-double-quoted": func(t *testing.T, v string) string { return yamlStyle(t, v, yamlv3.DoubleQuotedStyle) },
	"yaml-v3-single-quoted": func(t *testing.T, v string) string { return yamlStyle(t, v, yamlv3.SingleQuotedStyle) },
	"go-q":                  func(_ *testing.T, v string) string { return fmt.Sprintf("invalid value: %q", v) },
	"go-plus-q":             func(_ *testing.T, v string) string { return fmt.Sprintf("invalid value: %+q", v) },
	"html":                  func(_ *testing.T, v string) string { return "<code>" + html.EscapeString(v) + "</code>" },
	"base64":                func(_ *testing.T, v string) string { return "k: " + base64.StdEncoding.EncodeToString([]byte(v)) },
	"base64-url":            func(_ *testing.T, v string) string { return base64.URLEncoding.EncodeToString([]byte(v)) },
	"base64-inside-1": func(_ *testing.T, v string) string {
		return base64.StdEncoding.EncodeToString([]byte("x" + v + "tail"))
	},
	"base64-inside-2": func(_ *testing.T, v string) string {
		return base64.StdEncoding.EncodeToString([]byte("xy" + v + "tail"))
	},
	"base64-of-json-file": func(_ *testing.T, v string) string {
		// A Secret generated from a whole (decrypted) JSON file.
		b, _ := json.Marshal(map[string]string{"password": v, "user": "shop"})
		return base64.StdEncoding.EncodeToString(b)
	},
	"base64-of-yaml-file": func(t *testing.T, v string) string {
		b, err := yamlv3.Marshal(map[string]string{"password": v, "user": "shop"})
		if err != nil {
			t.Skipf("not encodable: %v", err)
		}
		return base64.StdEncoding.EncodeToString(b)
	},
}

func yamlStyle(t *testing.T, v string, style yamlv3.Style) string {
	t.Helper()
	n := &yamlv3.Node{Kind: yamlv3.MappingNode, Content: []*yamlv3.Node{
		{Kind: yamlv3.ScalarNode, Value: "k"},
		{Kind: yamlv3.ScalarNode, Value: v, Style: style},
	}}
	b, err := yamlv3.Marshal(n)
	if err != nil {
		t.Skipf("not encodable: %v", err)
	}
	return string(b)
}

// TestMaskEveryEncoding: a decrypted value is masked in every encoding
// ferry writes, whatever characters it holds.
func TestMaskEveryEncoding(t *testing.T) {
	for vname, v := range hardValues {
		m := maskerOf(v)
		for ename, encode := range encodings {
			if ename == "yaml-v2" && vname == "long" {
				continue // folded at a space: see TestMaskValueBeforeEncoding
			}
			t.Run(vname+"/"+ename, func(t *testing.T) {
				in := encode(t, v)
				if got := secretstest.Leaks(in, v); len(got) == 0 && ename != "raw" {
					t.Logf("the encoding holds none of the checked forms: %q", in)
				}
				out := m.Mask(in)
				if got := secretstest.Leaks(out, v); len(got) > 0 {
					t.Errorf("masked %s output still holds %v:\n%s", ename, got, out)
				}
			})
		}
	}
}

// TestMaskValueBeforeEncoding: masked as data, a value leaves no trace in
// what any encoder makes of the data, folded YAML included.
func TestMaskValueBeforeEncoding(t *testing.T) {
	var values []string
	for _, v := range hardValues {
		values = append(values, v)
	}
	m := maskerOf(append(values, "4711", "true-secret")...)
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "annotations": map[string]any{"copied": hardValues["long"]}},
		"data":     map[string]any{},
		"spec":     map[string]any{"port": int64(4711), "list": []any{"keep", hardValues["html"] + "-suffix", float64(4711)}},
	}
	for k, v := range hardValues {
		obj["data"].(map[string]any)[k] = "prefix " + v
		obj["data"].(map[string]any)[k+"-b64"] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	before, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	masked := m.MaskValue(obj)
	after, _ := json.Marshal(obj)
	if !bytes.Equal(before, after) {
		t.Fatal("MaskValue changed its argument")
	}
	y, err := yaml.Marshal(masked)
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(masked)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{string(y), string(j)} {
		for name, v := range hardValues {
			if got := secretstest.Leaks(out, v); len(got) > 0 {
				t.Errorf("%s: output holds %v:\n%s", name, got, out)
			}
		}
		for _, v := range []string{"4711", "true-secret"} {
			if strings.Contains(out, v) {
				t.Errorf("output holds %q:\n%s", v, out)
			}
		}
	}
	want := map[string]any{"port": "***", "list": []any{"keep", "***-suffix", "***"}}
	if d := cmp.Diff(want, masked.(map[string]any)["spec"]); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
}

// TestMaskLines: values are masked line by line; what is shorter than
// three characters (spaces aside) stays, and overlapping values are
// masked whole.
func TestMaskLines(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"short values stay", []string{"ab", " x "}, "ab x ab", "ab x ab"},
		{"each line", []string{"first-line\nok\n  indented-line  "}, "first-line ok indented-line", "*** ok ***"},
		{"lines in JSON", []string{"first-line\nsecond-line"}, `"first-line\nsecond-line"`, `"***"`},
		{"lines in Go %q", []string{"first-line\nsecond\"line"}, `"first-line\nsecond\"line"`, `"***\n***"`},
		{"overlapping values", []string{"abcdef", "defghi"}, "xabcdefghix", "x***x"},
		{"longest inside shorter", []string{"bcd", "abcdefg"}, "abcdefg bcd", "*** ***"},
		{"adjacent", []string{"abc", "def"}, "abcdef", "***"},
		{"dotenv line break", []string{"top\nbottom-line"}, base64.StdEncoding.EncodeToString([]byte(`top\nbottom-line`)), "***=="},
		{"decoded data", []string{base64.StdEncoding.EncodeToString([]byte("plain-password"))}, "was plain-password", "was ***"},
		{"binary data not decoded", []string{"abcd"}, "i\xb7\x1d", "i\xb7\x1d"},
		{"number", []string{"4711"}, "port: 4711", "port: ***"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, maskerOf(tc.values...).Mask(tc.in)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	var nilMasker *Masker
	if got := nilMasker.Mask("abc"); got != "abc" {
		t.Errorf("a nil masker masked: %q", got)
	}
	if got := NewMasker().MaskValue("abc"); got != "abc" {
		t.Errorf("a masker without values masked: %q", got)
	}
}

// TestMaskValuesDecryptedLater: values a watched decryptor decrypts after
// the first Mask are masked too.
func TestMaskValuesDecryptedLater(t *testing.T) {
	d := NewDecryptor(nil)
	m := NewMasker()
	m.Watch(d)
	if got := m.Mask("later-value"); got != "later-value" {
		t.Fatalf("masked before decryption: %q", got)
	}
	d.mu.Lock()
	d.values["later-value"] = struct{}{}
	d.mu.Unlock()
	if got := m.Mask("later-value"); got != "***" {
		t.Errorf("not masked after decryption: %q", got)
	}
}

type inner struct {
	Message string
	Raw     json.RawMessage
	Number  json.RawMessage
	Broken  json.RawMessage
}

type report struct {
	Name     string
	Lines    []string
	ByKey    map[string]string
	Inner    *inner
	Inners   []inner
	InnerMap map[string]inner
	Any      any
	AnyMap   any
	AnyNum   any
	Err      error
	At       time.Time
	Bytes    []byte
	secret   string
}

type errString string

func (e errString) Error() string { return string(e) }

// TestRedact: every string a typed report reaches is masked in place.
func TestRedact(t *testing.T) {
	const v = `s3cr<t"va\l`
	jv, _ := json.Marshal(v)
	r := &report{
		Name:     "name " + v,
		Lines:    []string{"a " + v, "b"},
		ByKey:    map[string]string{v: v},
		Inner:    &inner{Message: v, Raw: json.RawMessage(`{"a": ` + string(jv) + `, "n": 1.50}`), Number: json.RawMessage(`4711`), Broken: json.RawMessage(`"` + v)},
		Inners:   []inner{{Message: v}},
		InnerMap: map[string]inner{"k": {Message: v}},
		Any:      v,
		AnyMap:   map[string]any{"k": []any{v, int64(4711)}},
		AnyNum:   int64(4711),
		Err:      errString(v),
		At:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Bytes:    []byte(v),
		secret:   v,
	}
	maskerOf(v, "4711").Redact(r)
	want := &report{
		Name:     "name ***",
		Lines:    []string{"a ***", "b"},
		ByKey:    map[string]string{v: "***"},
		Inner:    &inner{Message: "***", Raw: json.RawMessage(`{"a":"***","n":1.50}`), Number: json.RawMessage(`"***"`), Broken: json.RawMessage(`"***"`)},
		Inners:   []inner{{Message: "***"}},
		InnerMap: map[string]inner{"k": {Message: "***"}},
		Any:      "***",
		AnyMap:   map[string]any{"k": []any{"***", "***"}},
		AnyNum:   "***",
		Err:      errString("***"),
		At:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Bytes:    []byte(v),
		secret:   v,
	}
	if d := cmp.Diff(want, r, cmp.AllowUnexported(report{}), cmp.Transformer("raw", func(m json.RawMessage) string { return string(m) })); d != "" {
		t.Errorf("redacted (-want +got):\n%s", d)
	}
	var nilMasker *Masker
	nilMasker.Redact(r)
	NewMasker().Redact(r)
	maskerOf(v).Redact(nil)
}

// FuzzMask: whatever the value and whatever surrounds it, no encoding of
// the value survives Mask on the encoded text.
func FuzzMask(f *testing.F) {
	for _, v := range hardValues {
		f.Add(v, uint8(0), "before ", " after")
	}
	f.Add("\xff\xfeinvalid", uint8(3), "", "")
	f.Add("abc", uint8(9), "x", "y")
	names := []string{"raw", "json", "json-indent-no-html", "json-twice", "yaml-v2", "yaml-v3", "yaml-v3-double-quoted", "yaml-v3-single-quoted",
		"go-q", "go-plus-q", "html", "base64", "base64-url", "base64-inside-1", "base64-inside-2", "base64-of-json-file", "base64-of-yaml-file"}
	f.Fuzz(func(t *testing.T, v string, enc uint8, before, after string) {
		name := names[int(enc)%len(names)]
		if strings.Contains(v+before+after, "*") || len(v) > 200 {
			return // "***" next to a value could spell it again
		}
		if strings.HasPrefix(name, "yaml") && (len(v) > 60 || !utf8.ValidString(v)) {
			return // folded (see TestMaskValueBeforeEncoding), or !!binary
		}
		out := maskerOf(v).Mask(before + encodings[name](t, v) + after)
		if got := secretstest.Leaks(out, v); len(got) > 0 {
			t.Errorf("%s: masked output still holds %v:\n%q", name, got, out)
		}
	})
}

// TestMaskBase64OfFiles: a Secret generated from a whole decrypted file
// holds the file in base64, each value as its file format escapes it; no
// part of the masked base64 decodes to the value.
func TestMaskBase64OfFiles(t *testing.T) {
	const v = "🔑 tab\tsecret-value-<&>\"x\""
	files := map[string]func() ([]byte, error){
		"json":   func() ([]byte, error) { return json.Marshal(map[string]string{"password": v, "user": "shop"}) },
		"yaml":   func() ([]byte, error) { return yamlv3.Marshal(map[string]string{"password": v, "user": "shop"}) },
		"dotenv": func() ([]byte, error) { return []byte("USER=shop\nPASSWORD=" + v + "\n"), nil },
	}
	m := maskerOf(v)
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			b, err := file()
			if err != nil {
				t.Fatal(err)
			}
			for pad := 0; pad < 3; pad++ {
				in := base64.StdEncoding.EncodeToString(append(bytes.Repeat([]byte("#"), pad), b...))
				out := m.Mask(in)
				if out == in {
					t.Fatalf("nothing masked in %q (%s)", in, b)
				}
				for _, piece := range strings.Split(out, hidden) {
					for off := 0; off < 4 && off < len(piece); off++ {
						p := strings.TrimRight(piece[off:], "=")
						dec, _ := base64.RawStdEncoding.DecodeString(p[:len(p)/4*4])
						if bytes.Contains(dec, []byte("secret-val")) {
							t.Errorf("pad %d: %q decodes to %q", pad, p, dec)
						}
					}
				}
			}
		})
	}
}
