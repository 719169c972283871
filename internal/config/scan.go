package config

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// Flux API groups ferry reads.
const (
	KustomizeGroup = "kustomize.toolkit.fluxcd.io"
	SourceGroup    = "source.toolkit.fluxcd.io"
	ImageGroup     = "image.toolkit.fluxcd.io"
	// SourceExtensionsGroup holds Flux 2.7's ArtifactGenerator and
	// ExternalArtifact.
	SourceExtensionsGroup = "source.extensions.fluxcd.io"
	// OperatorGroup is the Flux Operator's: FluxInstance, ResourceSet,
	// ResourceSetInputProvider.
	OperatorGroup = "fluxcd.controlplane.io"
	// NotificationGroup holds Flux's Provider, Alert and Receiver.
	NotificationGroup = "notification.toolkit.fluxcd.io"
)

// isFluxGroup reports an API group of Flux's controllers or of the Flux
// Operator.
func isFluxGroup(g string) bool {
	return strings.HasSuffix(g, ".toolkit.fluxcd.io") || g == SourceExtensionsGroup || g == OperatorGroup
}

// FluxObject is a Flux object found in a file of the repository.
type FluxObject struct {
	Object *unstructured.Unstructured
	File   string // relative to the repository, slash-separated
	Line   int    // first line of the document, 1-based
}

// Where names the file and line the object was found at.
func (o FluxObject) Where() string { return fmt.Sprintf("%s:%d", o.File, o.Line) }

var yamlLine = regexp.MustCompile(`^line (\d+): `)

var docSeparator = regexp.MustCompile(`^---\s*(#.*)?$`)

// scanFluxObjects walks the repository for YAML files and returns the Flux
// objects in them, in file order. Hidden folders (.git and the like) are
// not walked. A file that mentions a Flux API group but does not parse is
// an error naming the file and line.
func scanFluxObjects(root string) ([]FluxObject, error) {
	objs, _, err := scanRepo(root)
	return objs, err
}

// scanRepo is scanFluxObjects that also reads what the kustomization files
// include, in the same walk.
func scanRepo(root string) ([]FluxObject, *includes, error) {
	var out []FluxObject
	inc := newIncludes()
	err := manifest.WalkYAML(root, func(rel string, data []byte) error {
		if kustomizationFileNames[path.Base(rel)] {
			inc.add(rel, data)
		}
		if !bytes.Contains(data, []byte("fluxcd.")) {
			return nil
		}
		objs, err := parseFluxDocs(rel, data)
		out = append(out, objs...)
		return err
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	inc.sort()
	return out, inc, err
}

// parseFluxDocs splits a YAML stream into documents, remembering where
// each starts, and keeps those of a Flux API group.
func parseFluxDocs(file string, data []byte) ([]FluxObject, error) {
	type doc struct {
		line int
		buf  bytes.Buffer
	}
	var docs []*doc
	cur := &doc{line: 1}
	sc := bufio.NewScanner(bytes.NewReader(data))
	// The buffer grows with the longest line, up to 16 MiB: allocating
	// 1 MiB up front for every file cost more than scanning most files.
	sc.Buffer(nil, 16*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(line, "---") && docSeparator.MatchString(line) {
			docs = append(docs, cur)
			cur = &doc{line: n + 1}
			continue
		}
		cur.buf.WriteString(line)
		cur.buf.WriteByte('\n')
	}
	docs = append(docs, cur)
	var out []FluxObject
	for _, d := range docs {
		if !bytes.Contains(d.buf.Bytes(), []byte("fluxcd.")) {
			continue
		}
		var doc any
		if err := yaml.Unmarshal(d.buf.Bytes(), &doc); err != nil {
			msg := cleanYAMLError(err)
			line := d.line
			if sub := yamlLine.FindStringSubmatch(msg); sub != nil {
				n, _ := strconv.Atoi(sub[1])
				line += n - 1
				msg = strings.TrimPrefix(msg, sub[0])
			}
			return nil, fmt.Errorf("%s:%d: invalid YAML: %s", file, line, msg)
		}
		m, ok := doc.(map[string]any)
		if !ok {
			continue // a list or scalar that merely mentions Flux
		}
		u := &unstructured.Unstructured{Object: m}
		if !isFluxGroup(u.GroupVersionKind().Group) {
			continue
		}
		out = append(out, FluxObject{Object: u, File: file, Line: d.line})
	}
	return out, nil
}

func isKustomization(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == KustomizeGroup && gvk.Kind == "Kustomization"
}
