package config

import (
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// includes records, for the kustomization files of a repository, which
// namespace each sets and which local files and folders it lists, so that
// a Kustomization file no root reaches gets the namespace Flux would give
// it once the kustomization that includes it is built: that of the
// outermost including kustomization that sets one (kustomize applies the
// outer namespace last), or the file's own.
type includes struct {
	namespace map[string]string   // kustomization folder -> its namespace:
	parents   map[string][]string // file or folder -> kustomization folders listing it, sorted
}

// kustomizationFileNames are the names kustomize recognizes, in its order.
var kustomizationFileNames = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

func newIncludes() *includes {
	return &includes{namespace: map[string]string{}, parents: map[string][]string{}}
}

// add reads one kustomization file (rel, slash-separated). A file that
// does not parse is left to the render that reads it to report.
func (in *includes) add(rel string, data []byte) {
	var k struct {
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
		Bases      []string `json:"bases"`
		Components []string `json:"components"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return
	}
	dir := path.Dir(rel)
	if k.Namespace != "" {
		in.namespace[dir] = k.Namespace
	}
	for _, list := range [][]string{k.Resources, k.Bases, k.Components} {
		for _, entry := range list {
			if entry == "" || strings.Contains(entry, "://") || strings.HasPrefix(entry, "/") {
				continue
			}
			p := path.Clean(path.Join(dir, entry))
			if p == ".." || strings.HasPrefix(p, "../") {
				continue
			}
			in.parents[p] = append(in.parents[p], dir)
		}
	}
}

func (in *includes) sort() {
	for p := range in.parents {
		sort.Strings(in.parents[p])
	}
}

// namespaceOf is the namespace a kustomize build of the outermost
// kustomization including file gives the objects of that file, "" when no
// including kustomization sets one. The first parent (in path order) is
// followed where a file is listed twice; cycles end the walk.
func (in *includes) namespaceOf(file string) string {
	ns := ""
	seen := map[string]bool{}
	for p := file; ; {
		parents := in.parents[p]
		if len(parents) == 0 || seen[p] {
			return ns
		}
		seen[p] = true
		p = parents[0]
		if n := in.namespace[p]; n != "" {
			ns = n
		}
	}
}
