package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// minBase64Run is the shortest run of base64 masked for a value that sits
// inside longer base64 text (a generated Secret of a whole file): six
// bytes of the value. Shorter runs would blank out unrelated base64.
const minBase64Run = 8

// patterns returns every string Mask looks for: the forms of each value
// and of what the value also stands for (see variants).
func patterns(values []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if len(strings.TrimSpace(p)) >= minMaskLen && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, v := range values {
		for _, w := range variants(v) {
			for _, f := range forms(w) {
				add(f)
			}
		}
	}
	return out
}

// variants returns v and what else a decryption of v puts in front of
// kustomize: the dotenv store writes a line break in a value as the two
// characters \n, which kustomize keeps; a value from a Secret's data is
// base64, and its decoded text (when it is text) is a secret as well.
// Of a URL, its secret parts are secrets too (URLParts).
func variants(v string) []string {
	out := append([]string{v}, URLParts(v)...)
	if strings.Contains(v, "\n") {
		out = append(out, strings.ReplaceAll(v, "\n", `\n`))
	}
	if len(v) >= 4 {
		if b, err := base64.StdEncoding.Strict().DecodeString(v); err == nil && len(b) >= minMaskLen && isText(b) {
			out = append(append(out, string(b)), URLParts(string(b))...)
		}
	}
	return out
}

// isText reports whether b is UTF-8 text of printable characters, tabs and
// line breaks: what a person would have base64-encoded into a Secret.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// forms returns how v reads in each encoding ferry writes or quotes from
// its libraries. Per line of v (see lines): the line as it is and
// trimmed; JSON-escaped as encoding/json writes it, with and without its
// HTML escapes (\u003c \u003e \u0026), and twice (JSON text quoted in a
// JSON string); Go-quoted as %q and %+q write it (errors); inside a YAML
// double-quoted scalar as yaml.v2 and yaml.v3 write it (\t, \", \\,
// \U0001F511, ...) and inside a single-quoted one (a quote doubled);
// HTML-escaped; URL query- and path-escaped. Of the whole value, of its
// JSON- and YAML-escaped forms, and of each line of a value of several (a
// Secret generated from a whole decrypted JSON or YAML file): its standard
// and URL-safe base64 (with or without padding), and the base64 runs that
// encode it wherever it sits inside longer base64 text (each of the three
// alignments).
//
// What an encoder does to a value's context (YAML folding a long string
// at a space, a renderer truncating, markdown replacing a backtick) is
// out of reach here: mask the data before it is encoded.
func forms(v string) []string {
	var out []string
	for _, l := range lines(v) {
		if len(strings.TrimSpace(l)) < minMaskLen {
			continue
		}
		out = append(out, l, strings.TrimSpace(l),
			jsonEscaped(l, true), jsonEscaped(l, false), jsonEscaped(jsonEscaped(l, true), true),
			unquote(strconv.Quote(l)), unquote(strconv.QuoteToASCII(l)),
			yamlDoubleQuoted(l), strings.ReplaceAll(l, "'", "''"),
			html.EscapeString(l), url.QueryEscape(l), url.PathEscape(l))
		if l != v {
			// A YAML block scalar writes each line apart, indented.
			out = append(out, base64Forms([]byte(l))...)
		}
	}
	if len(v) >= minMaskLen {
		seen := map[string]bool{}
		for _, w := range []string{v, jsonEscaped(v, true), jsonEscaped(v, false), yamlDoubleQuoted(v)} {
			if !seen[w] {
				seen[w] = true
				out = append(out, base64Forms([]byte(w))...)
			}
		}
	}
	return out
}

// lines returns the lines of v, and the pieces of those at YAML's other
// line breaks (\r, U+0085, U+2028, U+2029), which an emitter may write
// as a break followed by indentation.
func lines(v string) []string {
	out := strings.Split(v, "\n")
	for _, l := range out {
		pieces := strings.FieldsFunc(l, func(r rune) bool { return r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029 })
		if len(pieces) > 1 || len(pieces) == 1 && pieces[0] != l {
			out = append(out, pieces...)
		}
	}
	return out
}

// jsonEscaped is s as encoding/json writes it inside a JSON string.
func jsonEscaped(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		return s
	}
	return unquote(strings.TrimSuffix(b.String(), "\n"))
}

func unquote(q string) string {
	if len(q) >= 2 {
		return q[1 : len(q)-1]
	}
	return q
}

// base64Forms returns the base64 of b, standard and URL-safe (a prefix of
// the padded form), and for each alignment of b inside longer data the
// run of whole groups that encode bytes of b only.
func base64Forms(b []byte) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString(b))
		for before := 0; before < 3; before++ {
			// With before bytes of other data in b's first group, that
			// group holds (3-before)%3 bytes of b and depends on the
			// data; so does the group b's end shares.
			skip := (3 - before) % 3
			if skip > len(b) {
				continue
			}
			n := (len(b) - skip) / 3 * 3
			if n/3*4 >= minBase64Run {
				out = append(out, enc.EncodeToString(b[skip:skip+n]))
			}
		}
	}
	return out
}

// yamlDoubleQuoted is s inside a double-quoted YAML scalar, escaped as the
// yaml.v2 and yaml.v3 emitters escape it (without their folding of long
// lines): what is not printable to YAML, line breaks, the byte order
// mark, '"' and '\'.
func yamlDoubleQuoted(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			fmt.Fprintf(&b, `\x%02X`, s[i])
			i++
			continue
		}
		i += w
		if yamlPrintable(r) && r != '\n' && r != 0x2028 && r != 0x2029 && r != '"' && r != '\\' {
			b.WriteRune(r)
			continue
		}
		switch r {
		case 0x00:
			b.WriteString(`\0`)
		case 0x07:
			b.WriteString(`\a`)
		case 0x08:
			b.WriteString(`\b`)
		case 0x09:
			b.WriteString(`\t`)
		case 0x0A:
			b.WriteString(`\n`)
		case 0x0B:
			b.WriteString(`\v`)
		case 0x0C:
			b.WriteString(`\f`)
		case 0x0D:
			b.WriteString(`\r`)
		case 0x1B:
			b.WriteString(`\e`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case 0x85:
			b.WriteString(`\N`)
		case 0xA0:
			b.WriteString(`\_`)
		case 0x2028:
			b.WriteString(`\L`)
		case 0x2029:
			b.WriteString(`\P`)
		default:
			switch {
			case r <= 0xFF:
				fmt.Fprintf(&b, `\x%02X`, r)
			case r <= 0xFFFF:
				fmt.Fprintf(&b, `\u%04X`, r)
			default:
				fmt.Fprintf(&b, `\U%08X`, r)
			}
		}
	}
	return b.String()
}

// yamlPrintable is the emitters' is_printable: line feed, printable ASCII,
// and U+00A0 to U+FFFD but for the surrogates, U+FEFF, U+FFFE and U+FFFF.
// Characters beyond U+FFFF are not printable to them.
func yamlPrintable(r rune) bool {
	return r == 0x0A || r >= 0x20 && r <= 0x7E ||
		r >= 0xA0 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF
}
