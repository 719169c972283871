package render

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// kustomize gives no way to hand it a loader: its file loader fetches any
// location with an http(s) scheme (resources, generator files and envs,
// patches, replacements, crds, openapi, ...) and clones any location that
// parses as a git URL by running the git program, before the filesystem
// ferry hands it is asked for anything. So remote locations are refused at
// the last point ferry sees them: the files that name locations
// (kustomization files and the configs of generators, transformers and
// validators), as the filesystem serves them.
//
// The check is default-deny: every string of such a file is a location
// unless it sits under a key known to hold values only (labels, literals,
// inline patches, ...). A field kustomize adds later is checked without
// anyone listing it.

// valueKeys are the keys of kustomization files and builtin plugin configs
// whose subtrees hold values, never locations kustomize loads.
var valueKeys = map[string]bool{
	"apiVersion": true, "kind": true, "metadata": true,
	"namePrefix": true, "nameSuffix": true, "namespace": true, "name": true,
	"commonLabels": true, "labels": true, "pairs": true, "commonAnnotations": true, "annotations": true,
	"literals": true, "options": true, "generatorOptions": true, "behavior": true, "type": true,
	"patch": true, "target": true, "images": true, "imageTags": true, "imageTag": true, "replicas": true,
	"vars": true, "sortOptions": true, "buildMetadata": true, "fieldSpecs": true,
	"source": true, "targets": true, "value": true, "version": true,
}

// remoteRefs returns the strings of one YAML document of a kustomization
// file or plugin config that kustomize would read as remote locations,
// sorted. A file= form ("key=location", as in generator files) is checked
// after the '='. Multi-line strings are inline content, not locations.
func remoteRefs(doc *yamlv3.Node) []string {
	found := map[string]bool{}
	var walk func(n *yamlv3.Node)
	walk = func(n *yamlv3.Node) {
		switch n.Kind {
		case yamlv3.DocumentNode, yamlv3.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if valueKeys[n.Content[i].Value] {
					continue
				}
				walk(n.Content[i+1])
			}
		case yamlv3.ScalarNode:
			s := strings.TrimSpace(n.Value)
			for _, cfg := range inlineConfigs(s) {
				walk(cfg)
			}
			if strings.Contains(s, "\n") {
				return
			}
			if isRemote(s) {
				found[s] = true
			} else if _, loc, ok := strings.Cut(s, "="); ok && isRemote(strings.TrimSpace(loc)) {
				found[s] = true
			}
		case yamlv3.AliasNode:
			// An alias repeats a node checked where it is anchored.
		}
	}
	walk(doc)
	out := make([]string, 0, len(found))
	for s := range found {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// inlineConfigs returns the builtin plugin configs written inline in a
// string (kustomize reads a generators: or transformers: entry that parses
// as YAML as the config itself, on one line or several).
func inlineConfigs(s string) []*yamlv3.Node {
	if !strings.Contains(s, "builtin") {
		return nil
	}
	docs, err := yamlDocs([]byte(s))
	if err != nil {
		return nil
	}
	return builtinConfigs(docs)
}

// builtinConfigs returns the documents that are configs of kustomize's
// builtin plugins (apiVersion: builtin): the only plugins ferry lets run,
// and the ones that load files of their own.
func builtinConfigs(docs []*yamlv3.Node) []*yamlv3.Node {
	var out []*yamlv3.Node
	for _, d := range docs {
		m := d
		if m.Kind == yamlv3.DocumentNode && len(m.Content) == 1 {
			m = m.Content[0]
		}
		if m.Kind != yamlv3.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "apiVersion" && strings.TrimSpace(m.Content[i+1].Value) == "builtin" {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// isRemote reports whether a location points outside the local filesystem:
// a URL kustomize's loader fetches over HTTP (http or https scheme, as its
// IsRemoteFile), or a form its git repo parser clones.
func isRemote(ref string) bool {
	if u, err := url.Parse(ref); err == nil && u.Scheme != "" && !isWindowsDrive(u.Scheme) {
		return true // http(s) is fetched, ssh/git/file cloned; nothing else is local
	}
	l := strings.ToLower(ref)
	for _, p := range []string{"git::", "gh:", "git@", "github.com:", "github.com/", "gitlab.com/", "bitbucket.org/", "dev.azure.com/", "ssh:", "file:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.Contains(l, "?ref=") || strings.Contains(l, "?version=") || strings.Contains(l, ".git//") || strings.Contains(l, "/_git/")
}

func isWindowsDrive(scheme string) bool { return len(scheme) == 1 }

// RemoteError reports a remote location while remote bases are off.
type RemoteError struct {
	File string // kustomization file or plugin config, relative to the repository
	Ref  string
}

// FilePath is the file the error is about, relative to the repository.
func (e *RemoteError) FilePath() string { return e.File }

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: remote location %q is not allowed (remote bases are off; pass --allow-remote-bases to fetch it)", e.File, e.Ref)
}
