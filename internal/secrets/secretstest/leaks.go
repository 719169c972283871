package secretstest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Leaks lists, by encoding, the forms of the secret value v found in out.
// Each line of v (three characters or more, spaces aside: shorter ones
// are not masked; lines also end at YAML's other line breaks) as it is; JSON-escaped with and without HTML escapes,
// and twice; Go-quoted; HTML-escaped; in a YAML double- and single-quoted
// scalar. The whole value in standard and URL-safe base64, and the middle
// of its base64 where v sits inside longer data. The forms come from the
// encoders themselves, not from the masker under test.
func Leaks(out, v string) []string {
	var found []string
	check := func(name, form string) {
		if len(strings.TrimSpace(form)) >= 3 && strings.Contains(out, form) {
			found = append(found, fmt.Sprintf("%s %q", name, form))
		}
	}
	lines := strings.Split(v, "\n")
	for _, l := range lines {
		if pieces := strings.FieldsFunc(l, isOtherBreak); len(pieces) > 1 {
			lines = append(lines, pieces...)
		}
	}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if len(l) < 3 {
			continue
		}
		check("raw", l)
		j, _ := json.Marshal(l)
		check("json", string(j[1:len(j)-1]))
		jj, _ := json.Marshal(string(j))
		check("json-twice", string(jj[3:len(jj)-3]))
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(l)
		nh := strings.TrimSuffix(b.String(), "\n")
		check("json-no-html", nh[1:len(nh)-1])
		q := fmt.Sprintf("%q", l)
		check("go", q[1:len(q)-1])
		check("html", html.EscapeString(l))
		if utf8.ValidString(l) {
			if dq, ok := yamlScalar(l, yamlv3.DoubleQuotedStyle); ok {
				check("yaml-double-quoted", dq)
			}
			// A single-quoted scalar breaks the line at U+2028 and the
			// like, and indents what follows: the pieces are checked.
			if sq, ok := yamlScalar(l, yamlv3.SingleQuotedStyle); ok && !strings.ContainsFunc(l, isOtherBreak) {
				check("yaml-single-quoted", sq)
			}
		}
	}
	if len(v) >= 3 {
		check("base64", base64.RawStdEncoding.EncodeToString([]byte(v)))
		check("base64-url", base64.RawURLEncoding.EncodeToString([]byte(v)))
	}
	// Inside longer base64: the characters that encode v's bytes only,
	// less three at each end (the groups v shares with its neighbours).
	for before := 1; before <= 2 && len(v) >= 12; before++ {
		blob := base64.StdEncoding.EncodeToString(append(bytes.Repeat([]byte{'x'}, before), v+"tail"...))
		from, to := (8*before+5)/6+3, 8*(before+len(v))/6-3
		check(fmt.Sprintf("base64 inside, after %d byte(s)", before), blob[from:to])
	}
	return found
}

// isOtherBreak reports whether r is one of YAML's line breaks other than
// the line feed.
func isOtherBreak(r rune) bool { return r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029 }

// yamlScalar is s as yaml.v3 writes it in a scalar of the style, without
// the quotes.
func yamlScalar(s string, style yamlv3.Style) (string, bool) {
	n := &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: s, Style: style}
	b, err := yamlv3.Marshal(n)
	if err != nil {
		return "", false
	}
	out := strings.TrimSuffix(string(b), "\n")
	if len(out) < 2 || strings.Contains(out, "\n") {
		return "", false // folded
	}
	return out[1 : len(out)-1], true
}
