package images

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// MarkerKey is the key of a setter marker, a YAML line comment such as
//
//	image: ghcr.io/org/app:1.2.3 # {"$imagepolicy": "flux-system:app"}
const MarkerKey = "$imagepolicy"

// Field is the part of an image reference a marker sets.
type Field string

// The marker forms: "NS:NAME" sets the whole reference (name:tag),
// "NS:NAME:tag" the tag, "NS:NAME:name" the repository name and
// "NS:NAME:digest" the digest.
const (
	FieldImage  Field = ""
	FieldTag    Field = "tag"
	FieldName   Field = "name"
	FieldDigest Field = "digest"
)

// Marker is one setter marker found in a file.
type Marker struct {
	// File is the path relative to the repository root, slash-separated.
	File string
	// Line is 1-based.
	Line int
	// Policy is the policy reference, NAMESPACE:NAME.
	Policy string
	Field  Field
	// Value is the scalar's current value (unquoted).
	Value string

	// off and end delimit the scalar (with its quotes) in the file; quote
	// is its style: 0 for plain, '"' or '\''.
	off, end int
	quote    byte
}

// Where names the file and line of the marker.
func (m Marker) Where() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

// FindMarkers walks the repository for YAML files (.yaml, .yml; hidden
// folders such as .git are skipped) and returns their markers, ordered by
// file and line.
func FindMarkers(root string) ([]Marker, error) {
	var out []Marker
	err := manifest.WalkYAML(root, func(rel string, data []byte) error {
		ms, err := ParseMarkers(rel, data)
		out = append(out, ms...)
		return err
	})
	return out, err
}

// ParseMarkers returns the markers of one YAML file's content. file names
// it in errors. A line comment that mentions $imagepolicy but is not a
// marker ferry can apply (malformed JSON, a reference without a
// namespace, an unknown field, a value that is not a plain or quoted
// scalar) is an error naming file:line. Whole-line comments are ignored.
func ParseMarkers(file string, data []byte) ([]Marker, error) {
	if !bytes.Contains(data, []byte(MarkerKey)) {
		return nil, nil
	}
	var out []Marker
	off := 0
	for n := 1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := off + end + 1
		if end < 0 {
			end = len(data) - off
			next = len(data)
		}
		line := data[off : off+end]
		line = bytes.TrimSuffix(line, []byte("\r"))
		if bytes.Contains(line, []byte(MarkerKey)) {
			m, ok, err := parseLine(line)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			if ok {
				m.File, m.Line = file, n
				m.off += off
				m.end += off
				out = append(out, m)
			}
		}
		off = next
	}
	return out, nil
}

// parseLine reads one line as [indent] [- ]... [key:] value [# comment].
// ok is false when the line holds no marker.
func parseLine(line []byte) (m Marker, ok bool, err error) {
	s := string(line)
	i := skipBlank(s, 0)
	if i == len(s) || s[i] == '#' {
		return m, false, nil // blank or a whole-line comment
	}
	// Sequence indicators: "- ", possibly nested ("- - x").
	for i < len(s) && s[i] == '-' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
		i = skipBlank(s, i+1)
	}
	if i == len(s) || s[i] == '#' {
		return m, false, markerWithoutValue(s[i:], "an empty sequence item")
	}
	// A key, or a bare sequence item.
	tokOff, tokEnd, quote, err := scanScalar(s, i, true)
	if err != nil {
		return m, false, markerErrorIfMarked(s, err)
	}
	j := skipBlank(s, tokEnd)
	if j < len(s) && s[j] == ':' && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\t') {
		// It was a key: the value follows.
		i = skipBlank(s, j+1)
		if i == len(s) || s[i] == '#' {
			return m, false, markerWithoutValue(s[i:], "a key without a value")
		}
		if tokOff, tokEnd, quote, err = scanScalar(s, i, false); err != nil {
			return m, false, markerErrorIfMarked(s, err)
		}
		j = skipBlank(s, tokEnd)
	}
	if j == len(s) || s[j] != '#' {
		if j < len(s) {
			// Text after a quoted scalar that is not a comment: not
			// YAML we understand; complain only if a marker is on it.
			return m, false, markerErrorIfMarked(s, fmt.Errorf("unexpected %q after the value", s[j:]))
		}
		return m, false, nil
	}
	ref, isMarker, err := parseComment(s[j:])
	if !isMarker {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	pol, field, err := parseRef(ref)
	if err != nil {
		return m, false, err
	}
	raw := s[tokOff:tokEnd]
	value, err := unquote(raw, quote)
	if err != nil {
		return m, false, err
	}
	return Marker{Policy: pol, Field: field, Value: value, off: tokOff, end: tokEnd, quote: quote}, true, nil
}

func skipBlank(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// markerErrorIfMarked returns err when the line mentions the marker key,
// else nil: only marked lines must parse.
func markerErrorIfMarked(s string, err error) error {
	if strings.Contains(s, `"`+MarkerKey+`"`) {
		return fmt.Errorf("cannot read the marked value: %w", err)
	}
	return nil
}

// scanScalar reads the scalar starting at s[i]: double-quoted,
// single-quoted or plain. In key position a plain scalar ends before ": ";
// in value position it ends before " #". The returned span excludes
// trailing blanks.
func scanScalar(s string, i int, keyPos bool) (off, end int, quote byte, err error) {
	if i >= len(s) {
		return i, i, 0, fmt.Errorf("no value")
	}
	switch c := s[i]; c {
	case '"':
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '"':
				return i, j + 1, '"', nil
			}
		}
		return 0, 0, 0, fmt.Errorf("unterminated double-quoted string")
	case '\'':
		for j := i + 1; j < len(s); j++ {
			if s[j] == '\'' {
				if j+1 < len(s) && s[j+1] == '\'' {
					j++
					continue
				}
				return i, j + 1, '\'', nil
			}
		}
		return 0, 0, 0, fmt.Errorf("unterminated single-quoted string")
	case '[', '{', '|', '>', '&', '*', '!', '%', '@', '`':
		if !keyPos || c != '[' && c != '{' {
			return 0, 0, 0, fmt.Errorf("the value is not a plain or quoted scalar (starts with %q)", c)
		}
		return 0, 0, 0, fmt.Errorf("flow collections are not supported")
	case '#':
		return i, i, 0, nil
	}
	j := i
	for j < len(s) {
		if (s[j] == ' ' || s[j] == '\t') && j+1 < len(s) && s[j+1] == '#' {
			break
		}
		if keyPos && s[j] == ':' && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\t') {
			break
		}
		j++
	}
	k := j
	for k > i && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	return i, k, 0, nil
}

// markerWithoutValue is the error of a marker in comment, the rest of a
// line that has no value for it to set (on what: "an empty sequence
// item"), or why the marker is malformed; nil when comment holds none.
func markerWithoutValue(comment, on string) error {
	ref, isMarker, err := parseComment(comment)
	switch {
	case !isMarker:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("marker %q is on %s", ref, on)
}

// parseComment reads a line comment ("# ...") as a marker. isMarker is
// true when the comment holds a JSON object with the $imagepolicy key, or
// mentions the key but is malformed (then err says why).
func parseComment(c string) (ref string, isMarker bool, err error) {
	c = strings.TrimPrefix(c, "#")
	if !strings.Contains(c, MarkerKey) {
		return "", false, nil
	}
	k := strings.IndexByte(c, '{')
	if k < 0 {
		return "", true, fmt.Errorf("malformed marker %q: want # {%q: \"NAMESPACE:NAME\"}", strings.TrimSpace(c), MarkerKey)
	}
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(c[k:]))
	if err := dec.Decode(&obj); err != nil {
		return "", true, fmt.Errorf("malformed marker %q: %v", strings.TrimSpace(c), err)
	}
	v, found := obj[MarkerKey]
	if !found {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", true, fmt.Errorf("malformed marker %q: the policy reference must be a string", strings.TrimSpace(c))
	}
	return s, true, nil
}

// parseRef splits NAMESPACE:NAME[:FIELD].
func parseRef(ref string) (policy string, field Field, err error) {
	parts := strings.Split(ref, ":")
	for _, p := range parts {
		if strings.TrimSpace(p) == "" || strings.TrimSpace(p) != p {
			return "", "", fmt.Errorf("marker %q: want NAMESPACE:NAME, NAMESPACE:NAME:tag or NAMESPACE:NAME:name", ref)
		}
	}
	switch len(parts) {
	case 2:
		return ref, FieldImage, nil
	case 3:
		switch f := Field(parts[2]); f {
		case FieldTag, FieldName, FieldDigest:
			return parts[0] + ":" + parts[1], f, nil
		}
		return "", "", fmt.Errorf("marker %q: unknown field %q (want tag, name or digest)", ref, parts[2])
	}
	return "", "", fmt.Errorf("marker %q: want NAMESPACE:NAME, NAMESPACE:NAME:tag or NAMESPACE:NAME:name", ref)
}

// unquote returns a scalar's value.
func unquote(raw string, quote byte) (string, error) {
	switch quote {
	case '\'':
		return strings.ReplaceAll(raw[1:len(raw)-1], "''", "'"), nil
	case '"':
		var v string
		if err := yamlv3.Unmarshal([]byte(raw), &v); err != nil {
			return "", fmt.Errorf("cannot read the marked value %s: %v", raw, err)
		}
		return v, nil
	}
	return raw, nil
}

// quoteAs writes value in the style of the scalar it replaces. A plain
// scalar stays plain unless the new value would then read as something
// other than that string (03300208 reads as a number): it is
// double-quoted instead, as Flux's setters do.
func quoteAs(value string, quote byte) string {
	switch quote {
	case '\'':
		return "'" + strings.ReplaceAll(value, "'", "''") + "'"
	case '"':
		// A JSON string is a valid YAML double-quoted scalar.
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(value)
		return strings.TrimSuffix(b.String(), "\n")
	}
	if plainSafe(value) {
		return value
	}
	return quoteAs(value, '"')
}

// plainSafe says whether value written as a plain scalar reads back as
// the same string, in YAML 1.2 (kustomize, Flux) and YAML 1.1
// (sigs.k8s.io/yaml), and ends before a comment.
func plainSafe(value string) bool {
	if value == "" || strings.TrimSpace(value) != value || strings.ContainsAny(value, "\n\r\t\"'#") || strings.Contains(value, ": ") || strings.HasSuffix(value, ":") {
		return false
	}
	if strings.ContainsRune("-?:,[]{}&*!|>%@`", rune(value[0])) {
		return false
	}
	var v3 any
	if err := yamlv3.Unmarshal([]byte("v: "+value), &struct{ V *any }{&v3}); err != nil {
		return false
	}
	if s, ok := v3.(string); !ok || s != value {
		return false
	}
	var v1 map[string]any
	if err := yaml.Unmarshal([]byte("v: "+value), &v1); err != nil {
		return false
	}
	s, ok := v1["v"].(string)
	return ok && s == value
}

// Change is one rewritten value.
type Change struct {
	File   string
	Line   int
	Policy *Policy
	Field  Field
	Old    string
	New    string
}

// FileChange is the new content of one file.
type FileChange struct {
	// Path is relative to the repository root, slash-separated.
	Path     string
	Old, New []byte
	Changes  []Change
}

// ChangeSet is every file a bump rewrites, ordered by path.
type ChangeSet struct {
	Root  string
	Files []FileChange
}

// Changes lists every rewritten value, by file and line.
func (cs *ChangeSet) Changes() []Change { return changesOf(cs.Files) }

// changesOf lists the rewritten values of files, by file and line.
func changesOf(files []FileChange) []Change {
	var out []Change
	for _, f := range files {
		out = append(out, f.Changes...)
	}
	return out
}

// Value returns what a marker of the given field is set to for a policy
// whose latest tag is tag (with digest): the name:tag reference (with
// @digest when the policy reflects digests), the tag, the name or the
// digest.
func Value(p *Policy, field Field, tag, digest string) string {
	switch field {
	case FieldTag:
		return tag
	case FieldName:
		return p.Image
	case FieldDigest:
		return digest
	}
	ref := p.Image + ":" + tag
	if digest != "" && (p.DigestReflectionPolicy == ReflectAlways || p.DigestReflectionPolicy == ReflectIfNotPresent) {
		ref += "@" + digest
	}
	return ref
}

// Rewrite computes the files that change when every marker of a selected
// policy is set to the policy's latest tag. latest maps a policy
// reference (NAMESPACE:NAME) to its result; markers of other policies are
// left alone. Only the marked scalars change: comments, quoting style,
// indentation and line endings stay byte for byte. Files are read from
// root and checked against the markers; nothing is written.
func Rewrite(root string, markers []Marker, latest map[string]*PolicyResult) (*ChangeSet, error) {
	byFile := map[string]bool{}
	var files []string
	for _, m := range markers {
		if r, ok := latest[m.Policy]; ok && r.Tag != "" && !byFile[m.File] {
			byFile[m.File] = true
			files = append(files, m.File)
		}
	}
	sort.Strings(files)
	cs := &ChangeSet{Root: root}
	for _, file := range files {
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		// The markers of the content as read now, so a file edited since
		// FindMarkers is not cut at stale offsets.
		ms, err := ParseMarkers(file, old)
		if err != nil {
			return nil, err
		}
		out, changes, err := rewrite(old, ms, latest)
		if err != nil {
			return nil, err
		}
		if len(changes) > 0 {
			cs.Files = append(cs.Files, FileChange{Path: file, Old: old, New: out, Changes: changes})
		}
	}
	return cs, nil
}

// rewrite sets the markers of one file's content (found by ParseMarkers
// on that content) to their policies' values.
func rewrite(old []byte, ms []Marker, latest map[string]*PolicyResult) ([]byte, []Change, error) {
	for _, m := range ms {
		if m.off < 0 || m.end > len(old) || m.off > m.end {
			return nil, nil, fmt.Errorf("%s: marker outside the file", m.Where())
		}
	}
	ms = append([]Marker(nil), ms...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].off < ms[j].off })
	var buf bytes.Buffer
	prev := 0
	var changes []Change
	for _, m := range ms {
		r := latest[m.Policy]
		if r == nil || r.Tag == "" || m.Field == FieldDigest && r.Digest == "" {
			continue
		}
		want := Value(r.Policy, m.Field, r.Tag, r.Digest)
		if want == m.Value {
			continue
		}
		buf.Write(old[prev:m.off])
		buf.WriteString(quoteAs(want, m.quote))
		prev = m.end
		changes = append(changes, Change{File: m.File, Line: m.Line, Policy: r.Policy, Field: m.Field, Old: m.Value, New: want})
	}
	if len(changes) == 0 {
		return old, nil, nil
	}
	buf.Write(old[prev:])
	return buf.Bytes(), changes, nil
}

// UnknownPolicies returns an error naming the file and line of every
// marker whose policy is not among policies, nil when there is none.
func UnknownPolicies(markers []Marker, policies []*Policy) error {
	known := map[string]bool{}
	for _, p := range policies {
		known[p.Ref()] = true
	}
	var errs []error
	for _, m := range markers {
		if !known[m.Policy] {
			ns, n, _ := strings.Cut(m.Policy, ":")
			errs = append(errs, fmt.Errorf("%s: marker names ImagePolicy/%s/%s, which the repository does not declare", m.Where(), ns, n))
		}
	}
	return errors.Join(errs...)
}

// Write writes the changed files in place, keeping their permissions.
func (cs *ChangeSet) Write() error {
	for _, f := range cs.Files {
		path := filepath.Join(cs.Root, filepath.FromSlash(f.Path))
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(path, f.New, fi.Mode().Perm()); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return nil
}

// writeFileAtomic replaces path through a temporary file in the same
// folder, so a failed write leaves the original.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".ferry-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
