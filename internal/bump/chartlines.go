package bump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	yaml "go.yaml.in/yaml/v3"

	"github.com/ferry-ci/ferry/internal/config"
)

// MarkerKey is the key of the marker comment that gives one chart
// version its range: `version: 1.2.0 # {"$chartpolicy": "^1.0.0"}`.
const MarkerKey = "$chartpolicy"

// pinLine is the line of a file that writes a chart version.
type pinLine struct {
	file string
	line int
	// marker is the range the line's marker comment gives, "" for none.
	marker string
}

func (l pinLine) where() string { return fmt.Sprintf("%s:%d", l.file, l.line) }

// docLines is what one YAML document of a file says of a chart version:
// its object's kind, name and namespace (as written: "" when the file
// leaves it to kustomize), and the version fields it writes.
type docLines struct {
	kind, name, namespace string
	fields                map[string]fieldLine
}

// fieldLine is a version field's value and line, and the line's
// marker, or why the marker cannot be read.
type fieldLine struct {
	value     string
	line      int
	marker    string
	markerErr error
}

// lineIndex reads the repository's files once each, on demand.
type lineIndex struct {
	root  string
	files map[string][]docLines
}

// find is the lines that write p's version: in the files its target's
// build read, a document of its kind and name (and namespace, when the
// document names one) whose field holds the version as built.
func (x *lineIndex) find(p config.ChartPin) ([]pinLine, error) {
	var out []pinLine
	for _, f := range p.Files {
		docs, err := x.read(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if d.kind != p.Kind || d.name != p.Name || d.namespace != "" && d.namespace != p.Namespace {
				continue
			}
			fl, ok := d.fields[p.Field]
			if !ok || fl.value != p.Version {
				continue
			}
			if fl.markerErr != nil {
				return nil, &lineError{where: fmt.Sprintf("%s:%d", f, fl.line), err: fl.markerErr}
			}
			out = append(out, pinLine{file: f, line: fl.line, marker: fl.marker})
		}
	}
	return out, nil
}

// lineError is an error of one line of a file.
type lineError struct {
	where string
	err   error
}

func (e *lineError) Error() string { return e.where + ": " + e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

var versionKinds = map[string]bool{"HelmRelease": true, "HelmChart": true, "OCIRepository": true}

// read parses file's documents for the version fields of the kinds
// that pin charts; a file that is no YAML has none.
func (x *lineIndex) read(file string) ([]docLines, error) {
	if docs, ok := x.files[file]; ok {
		return docs, nil
	}
	data, err := readFile(x.root, file)
	if err != nil {
		return nil, err
	}
	var docs []docLines
	if bytes.Contains(data, []byte("fluxcd.io")) {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				if !errors.Is(err, io.EOF) {
					docs = nil // not YAML ferry reads; its builds would have failed
				}
				break
			}
			if d, ok := readDoc(&n); ok {
				docs = append(docs, d)
			}
		}
	}
	x.files[file] = docs
	return docs, nil
}

// readDoc reads one document's object and its version fields.
func readDoc(n *yaml.Node) (docLines, bool) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return docLines{}, false
	}
	d := docLines{fields: map[string]fieldLine{}}
	api := scalar(n, "apiVersion")
	d.kind = scalar(n, "kind")
	if !strings.Contains(api, "fluxcd.io/") || !versionKinds[d.kind] {
		return d, false
	}
	if md := child(n, "metadata"); md != nil {
		d.name, d.namespace = scalar(md, "name"), scalar(md, "namespace")
	}
	for _, field := range []string{config.FieldReleaseVersion, config.FieldChartVersion, config.FieldRefTag, config.FieldRefSemver} {
		parts := strings.Split(field, ".")
		at := n
		for _, k := range parts[:len(parts)-1] {
			if at = child(at, k); at == nil {
				break
			}
		}
		if at == nil {
			continue
		}
		v := child(at, parts[len(parts)-1])
		if v == nil || v.Kind != yaml.ScalarNode {
			continue
		}
		fl := fieldLine{value: v.Value, line: v.Line}
		fl.marker, fl.markerErr = readMarker(v.LineComment)
		d.fields[field] = fl
	}
	return d, true
}

// readMarker reads a line comment as a $chartpolicy marker: "" for a
// comment that names none, an error for one that names it but is not
// {"$chartpolicy": "<range>"} with a valid range.
func readMarker(comment string) (string, error) {
	if !strings.Contains(comment, MarkerKey) {
		return "", nil
	}
	body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	var m map[string]string
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return "", fmt.Errorf("marker %s: want {%q: \"<range>\"}: %v", body, MarkerKey, err)
	}
	rng, ok := m[MarkerKey]
	if !ok || len(m) != 1 {
		return "", fmt.Errorf("marker %s: want {%q: \"<range>\"}", body, MarkerKey)
	}
	if _, err := semver.NewConstraint(rng); err != nil {
		return "", fmt.Errorf("marker %s: range %q: %v", body, rng, err)
	}
	return rng, nil
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node, key string) string {
	if c := child(n, key); c != nil && c.Kind == yaml.ScalarNode {
		return c.Value
	}
	return ""
}

// rewritable checks that m's line can be rewritten in the work tree.
func (x *lineIndex) rewritable(m ChartMove) error {
	data, err := readFile(x.root, m.File)
	if err != nil {
		return err
	}
	_, err = rewriteLine(data, m.Line, m.Field, m.Old, m.New)
	return err
}

// rewriteLine sets the version on line (1-based) of data from old to
// new: the value after the field's key ("version:" or "tag:"), its
// quotes, the comment and the line ending kept byte for byte.
func rewriteLine(data []byte, line int, field, old, new string) ([]byte, error) {
	start := 0
	for i := 1; i < line; i++ {
		j := bytes.IndexByte(data[start:], '\n')
		if j < 0 {
			return nil, fmt.Errorf("line %d: the file has %d lines", line, i)
		}
		start += j + 1
	}
	end := len(data)
	if j := bytes.IndexByte(data[start:], '\n'); j >= 0 {
		end = start + j
	}
	key := field[strings.LastIndex(field, ".")+1:]
	re := regexp.MustCompile(`^(\s*(?:-\s+)?` + regexp.QuoteMeta(key) + `\s*:\s*)(["']?)` + regexp.QuoteMeta(old) + `(["']?)(\s*(?:#.*)?\r?)$`)
	m := re.FindSubmatchIndex(data[start:end])
	if m == nil || string(data[start+m[4]:start+m[5]]) != string(data[start+m[6]:start+m[7]]) {
		return nil, fmt.Errorf("line %d: no %s: %s to rewrite (ferry bump rewrites a block-style %s: line)", line, key, old, key)
	}
	valueStart, valueEnd := start+m[5], start+m[6]
	out := make([]byte, 0, len(data)+len(new))
	out = append(out, data[:valueStart]...)
	out = append(out, new...)
	out = append(out, data[valueEnd:]...)
	return out, nil
}

// readFile reads a file of root by its slash path.
func readFile(root, rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
}
