package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// FileName is the name of ferry's optional configuration file, at the
// repository root.
const FileName = "ferry.yaml"

// File is the content of ferry.yaml.
type File struct {
	// Targets, when present, replace discovery from Flux objects.
	Targets []TargetConfig `json:"targets,omitempty"`
	// Sources maps a Flux source name (a GitRepository other than this
	// repository) to a path where that repository is checked out.
	Sources map[string]string `json:"sources,omitempty"`
	// Clusters maps a cluster name to how ferry reaches it.
	Clusters map[string]ClusterConfig `json:"clusters,omitempty"`
}

// ClusterConfig says how to reach one cluster.
type ClusterConfig struct {
	// Kubeconfig is a path to a kubeconfig file.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// KubeconfigEnv names an environment variable holding kubeconfig content.
	KubeconfigEnv string `json:"kubeconfigEnv,omitempty"`
	// Context is the kubeconfig context to use.
	Context string `json:"context,omitempty"`
}

// TargetConfig declares one target, with the field names of a Flux
// Kustomization's spec plus what a push runner needs.
type TargetConfig struct {
	Name      string `json:"name"`
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Kubeconfig and KubeconfigEnv override the cluster's.
	Kubeconfig    string `json:"kubeconfig,omitempty"`
	KubeconfigEnv string `json:"kubeconfigEnv,omitempty"`

	Path            string       `json:"path"`
	Prune           bool         `json:"prune,omitempty"`
	TargetNamespace string       `json:"targetNamespace,omitempty"`
	DependsOn       []Dependency `json:"dependsOn,omitempty"`
	Decryption      any          `json:"decryption,omitempty"`
	Patches         any          `json:"patches,omitempty"`
	Images          any          `json:"images,omitempty"`
	Components      []string     `json:"components,omitempty"`
	NamePrefix      string       `json:"namePrefix,omitempty"`
	NameSuffix      string       `json:"nameSuffix,omitempty"`
	CommonMetadata  any          `json:"commonMetadata,omitempty"`
	PostBuild       any          `json:"postBuild,omitempty"`
}

// Dependency names a target this one depends on. In ferry.yaml it is a
// plain name or, as in Flux, {name, namespace}.
type Dependency struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// UnmarshalJSON accepts both "name" and {name: ..., namespace: ...}.
func (d *Dependency) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		d.Name = s
		return nil
	}
	type plain Dependency
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("dependsOn entry: %w", err)
	}
	*d = Dependency(p)
	return nil
}

// ReadFile reads ferry.yaml from the repository root. It returns nil, nil
// when there is none.
func ReadFile(root string) (*File, error) {
	data, err := os.ReadFile(filepath.Join(root, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseFile(data)
}

// ParseFile parses ferry.yaml content. Unknown fields are errors, so a
// typo does not silently change what is deployed.
func ParseFile(data []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %s", FileName, cleanYAMLError(err))
	}
	seen := map[string]bool{}
	for i, t := range f.Targets {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("%s: targets[%d]: name is required", FileName, i)
		case t.Path == "":
			return nil, fmt.Errorf("%s: target %q: path is required", FileName, t.Name)
		case seen[t.Name]:
			return nil, fmt.Errorf("%s: target %q is declared twice", FileName, t.Name)
		}
		seen[t.Name] = true
	}
	return &f, nil
}

// cleanYAMLError drops the conversion layers sigs.k8s.io/yaml puts in
// front of a message ("error unmarshaling JSON: while decoding JSON: json:").
func cleanYAMLError(err error) string {
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: ", "error converting YAML to JSON: ", "yaml: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}
