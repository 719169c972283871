package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	yamlv3 "go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest file ferry reads from a repository. The
// largest manifests people commit (CRD bundles of an operator, an
// all-in-one install) are a few megabytes; a file past this is refused
// before it is read, so one committed file cannot exhaust the runner.
const MaxFileSize = 32 << 20

// MaxExpandedNodes bounds what YAML aliases may expand to: a document whose
// nodes, with every alias expanded, number more than this (and more than
// aliasRatio times its written nodes) is refused. Parsers that build values
// (kustomize, SOPS, sigs.k8s.io/yaml) expand aliases in full, so a few
// lines of nested aliases ("billion laughs") grow to gigabytes.
const MaxExpandedNodes = 1_000_000

const aliasRatio = 10

// saturated caps expanded counts, far above any limit, so they cannot overflow.
const saturated = 1 << 50

// LimitError is a file refused because of its size or its aliases.
type LimitError struct {
	File   string // relative to the repository
	Reason string
}

func (e *LimitError) Error() string { return e.File + ": " + e.Reason }

// ReadFile reads a repository file, refusing one larger than MaxFileSize
// before reading it. rel names the file in errors.
func ReadFile(path, rel string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileSize {
		return nil, tooLarge(rel, fi.Size())
	}
	// Read at most one byte past the limit: the file may grow after Stat.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(rel, int64(len(data)))
	}
	return data, nil
}

func tooLarge(rel string, size int64) error {
	return &LimitError{File: rel, Reason: fmt.Sprintf("file is %d bytes, more than the %d ferry reads", size, MaxFileSize)}
}

// CheckAliases refuses YAML whose aliases expand past MaxExpandedNodes.
// Text without an alias is not parsed. A document that does not parse is
// left to the parser that reads it next, which says what is wrong.
func CheckAliases(rel string, data []byte) error {
	if !bytes.Contains(data, []byte("*")) || !bytes.Contains(data, []byte("&")) {
		return nil // no alias, or no anchor for one to name
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil
		}
		written, expanded := countNodes(&doc)
		if expanded > MaxExpandedNodes && expanded > aliasRatio*written {
			return &LimitError{File: rel, Reason: fmt.Sprintf("YAML document %d: its aliases expand to more than %d nodes (%d written); refused as an alias bomb", i, MaxExpandedNodes, written)}
		}
	}
}

// countNodes returns the nodes of a document as written, and as many as
// they become with every alias expanded (memoized per node, so counting
// is linear in the written size; saturates past MaxExpandedNodes).
func countNodes(doc *yamlv3.Node) (written, expanded int) {
	memo := map[*yamlv3.Node]int{}
	seen := map[*yamlv3.Node]bool{}
	var size func(n *yamlv3.Node, depth int) int
	size = func(n *yamlv3.Node, depth int) int {
		if n == nil || depth > 10_000 {
			return saturated
		}
		if v, ok := memo[n]; ok {
			return v
		}
		if !seen[n] {
			seen[n] = true
			written++
		}
		total := 1
		if n.Kind == yamlv3.AliasNode {
			total = size(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			total += size(c, depth+1)
			if total > saturated {
				total = saturated
			}
		}
		memo[n] = total
		return total
	}
	expanded = size(doc, 0)
	return written, expanded
}
