package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// FileName is the name of ferry's optional configuration file, at the
// repository root.
const FileName = "ferry.yaml"

// File is the content of ferry.yaml.
type File struct {
	// Targets, when present, replace discovery from Flux objects.
	Targets []TargetConfig `json:"targets,omitempty" yaml:"targets,omitempty"`
	// Sources maps a Flux source to the folder that holds its content: a
	// bare name is a GitRepository other than this repository, checked out
	// there; Kind/name (GitRepository, OCIRepository or Bucket) names any
	// source, such as the OCIRepository CI pushes from a folder of this
	// repository with flux push artifact.
	Sources map[string]string `json:"sources,omitempty" yaml:"sources,omitempty"`
	// Clusters maps a cluster name to how ferry reaches it.
	Clusters map[string]ClusterConfig `json:"clusters,omitempty" yaml:"clusters,omitempty"`
	// ImagePolicies, when present, replace discovery of Flux
	// ImageRepository and ImagePolicy objects for ferry bump.
	ImagePolicies []ImagePolicyConfig `json:"imagePolicies,omitempty" yaml:"imagePolicies,omitempty"`
	// Notifications declares Flux Providers and Alerts for every cluster,
	// beside those the clusters' renders hold.
	Notifications *NotificationsConfig `json:"notifications,omitempty" yaml:"notifications,omitempty"`
	// Network says which hosts a pull request's diff may contact beyond
	// the chart sources its base revision already has. Read from the
	// base revision only.
	Network *NetworkConfig `json:"network,omitempty" yaml:"network,omitempty"`
	// Limits are the budgets of untrusted work: chart renders, chart
	// archives, JSON patches. In diff and plan the base revision's hold.
	Limits *LimitsConfig `json:"limits,omitempty" yaml:"limits,omitempty"`
	// InputProviders gives, by namespace/name, the input sets of Flux
	// Operator ResourceSetInputProviders whose inputs come from an API
	// (pull requests, branches, tags, OCI artifact tags): a render uses
	// them in place of calling it.
	InputProviders map[string][]map[string]any `json:"inputProviders,omitempty" yaml:"inputProviders,omitempty"`
	// InputProviderAPIs lets a render call the APIs of the
	// ResourceSetInputProviders inputProviders gives no inputs for, as
	// the Flux Operator does in the cluster, read-only. Read from the
	// base revision only.
	InputProviderAPIs *InputProviderAPIsConfig `json:"inputProviderAPIs,omitempty" yaml:"inputProviderAPIs,omitempty"`
	// Verify has apply and drift --heal check the signatures of the
	// revision before anything reaches a cluster.
	Verify *VerifyConfig `json:"verify,omitempty" yaml:"verify,omitempty"`
	// Charts are the rules of ferry bump's chart versions: which
	// versions a chart may move to.
	Charts []ChartRuleConfig `json:"charts,omitempty" yaml:"charts,omitempty"`
}

// InputProviderAPIsConfig is ferry.yaml's inputProviderAPIs: block.
type InputProviderAPIsConfig struct {
	// Forge calls the forge the job runs on (GitHub or Gitea: the
	// GitHub* or Gitea* providers whose spec.url is on its server) with
	// the job's token, sent to its API's origin alone.
	Forge bool `json:"forge,omitempty" yaml:"forge,omitempty"`
	// AllowHosts are the host:port pairs (a host alone is its scheme's
	// default port) of other forges and of OCI registries
	// (OCIArtifactTag) that may be read, without credentials.
	AllowHosts []string `json:"allowHosts,omitempty" yaml:"allowHosts,omitempty"`
}

// NetworkConfig is ferry.yaml's network: block.
type NetworkConfig struct {
	// AllowHosts are the host:port pairs (a host alone is its scheme's
	// default port) that a chart source new in a pull request may be
	// fetched from, without credentials.
	AllowHosts []string `json:"allowHosts,omitempty" yaml:"allowHosts,omitempty"`
}

// ImagePolicyConfig declares one image policy with the field names of a
// Flux ImageRepository (image, exclusionList, secretRef, insecure) and
// ImagePolicy (filterTags, policy, digestReflectionPolicy) together.
type ImagePolicyConfig struct {
	Name string `json:"name" yaml:"name"`
	// Namespace is the first part of the markers' NAMESPACE:NAME;
	// DefaultNamespace when empty.
	Namespace     string           `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Image         string           `json:"image" yaml:"image"`
	ExclusionList []string         `json:"exclusionList,omitempty" yaml:"exclusionList,omitempty"`
	SecretRef     *LocalRef        `json:"secretRef,omitempty" yaml:"secretRef,omitempty"`
	Insecure      bool             `json:"insecure,omitempty" yaml:"insecure,omitempty"`
	FilterTags    *TagFilterConfig `json:"filterTags,omitempty" yaml:"filterTags,omitempty"`
	Policy        PolicyChoice     `json:"policy" yaml:"policy"`
	// DigestReflectionPolicy is Never (the default), IfNotPresent or
	// Always: whether full-image markers get the tag's digest.
	DigestReflectionPolicy string `json:"digestReflectionPolicy,omitempty" yaml:"digestReflectionPolicy,omitempty"`
}

// LocalRef names an object in the same namespace.
type LocalRef struct {
	Name string `json:"name" yaml:"name"`
}

// TagFilterConfig is an ImagePolicy's filterTags.
type TagFilterConfig struct {
	Pattern string `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	Extract string `json:"extract,omitempty" yaml:"extract,omitempty"`
}

// PolicyChoice is an ImagePolicy's policy: one of semver, numerical,
// alphabetical.
type PolicyChoice struct {
	SemVer       *SemVerConfig `json:"semver,omitempty" yaml:"semver,omitempty"`
	Numerical    *OrderConfig  `json:"numerical,omitempty" yaml:"numerical,omitempty"`
	Alphabetical *OrderConfig  `json:"alphabetical,omitempty" yaml:"alphabetical,omitempty"`
}

// SemVerConfig is policy.semver.
type SemVerConfig struct {
	Range string `json:"range" yaml:"range"`
}

// OrderConfig is policy.numerical or policy.alphabetical.
type OrderConfig struct {
	Order string `json:"order,omitempty" yaml:"order,omitempty"`
}

// ClusterConfig says how to reach one cluster.
type ClusterConfig struct {
	// Path, when set, is the cluster's root: the folder of this
	// repository its Flux sync renders (what a FluxInstance's
	// spec.sync.path or a flux-system Kustomization's spec.path says), for
	// a layout ferry cannot infer. It replaces an inferred root of the
	// same folder, which then takes this cluster's name.
	Path string `json:"path,omitempty" yaml:"path,omitempty"`
	// Kubeconfig is a path to a kubeconfig file.
	Kubeconfig string `json:"kubeconfig,omitempty" yaml:"kubeconfig,omitempty"`
	// KubeconfigEnv names an environment variable holding kubeconfig content.
	KubeconfigEnv string `json:"kubeconfigEnv,omitempty" yaml:"kubeconfigEnv,omitempty"`
	// Context is the kubeconfig context to use.
	Context string `json:"context,omitempty" yaml:"context,omitempty"`
	// Auth reaches the cluster without a kubeconfig, as the CI job's own
	// identity (see ClusterAuth), at Server with the CA of
	// CertificateAuthority (a PEM file of the repository) or
	// CertificateAuthorityData (PEM); a managed cluster's (eks, gke, aks)
	// are looked up when Server is not given.
	Server                   string       `json:"server,omitempty" yaml:"server,omitempty"`
	CertificateAuthority     string       `json:"certificateAuthority,omitempty" yaml:"certificateAuthority,omitempty"`
	CertificateAuthorityData string       `json:"certificateAuthorityData,omitempty" yaml:"certificateAuthorityData,omitempty"`
	Auth                     *ClusterAuth `json:"auth,omitempty" yaml:"auth,omitempty"`
	// HelmReleases says who installs the cluster's Flux HelmReleases:
	// HelmRender (the default) has ferry render each into the objects of
	// its chart, as part of its target; HelmController leaves them, and
	// their sources, to a helm-controller running in the cluster, applied
	// as objects.
	HelmReleases HelmMode `json:"helmReleases,omitempty" yaml:"helmReleases,omitempty"`
	// KubeVersion is the Kubernetes version the cluster's HelmReleases
	// are rendered for (a chart's .Capabilities.KubeVersion); empty is
	// helm.DefaultKubeVersion, the version of ferry's Kubernetes client.
	KubeVersion string `json:"kubeVersion,omitempty" yaml:"kubeVersion,omitempty"`
	// APIVersions are the API versions (group/version or
	// group/version/Kind) charts see as served beside Kubernetes' own and
	// those of the CRDs the cluster's renders define: APIs the cluster
	// serves from elsewhere (an aggregated API, CRDs installed by hand).
	APIVersions []string `json:"apiVersions,omitempty" yaml:"apiVersions,omitempty"`
}

// HelmMode is a cluster's helmReleases setting.
type HelmMode string

const (
	// HelmRender renders HelmReleases into their charts' objects.
	HelmRender HelmMode = "render"
	// HelmController leaves HelmReleases to an in-cluster helm-controller.
	HelmController HelmMode = "controller"
)

// TargetConfig declares one target, with the field names of a Flux
// Kustomization's spec plus what a push runner needs.
type TargetConfig struct {
	Name      string `json:"name" yaml:"name"`
	Cluster   string `json:"cluster,omitempty" yaml:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Kubeconfig and KubeconfigEnv override the cluster's.
	Kubeconfig    string `json:"kubeconfig,omitempty" yaml:"kubeconfig,omitempty"`
	KubeconfigEnv string `json:"kubeconfigEnv,omitempty" yaml:"kubeconfigEnv,omitempty"`

	Path            string       `json:"path" yaml:"path"`
	Prune           bool         `json:"prune,omitempty" yaml:"prune,omitempty"`
	TargetNamespace string       `json:"targetNamespace,omitempty" yaml:"targetNamespace,omitempty"`
	DependsOn       []Dependency `json:"dependsOn,omitempty" yaml:"dependsOn,omitempty"`
	Decryption      any          `json:"decryption,omitempty" yaml:"decryption,omitempty"`
	Patches         any          `json:"patches,omitempty" yaml:"patches,omitempty"`
	Images          any          `json:"images,omitempty" yaml:"images,omitempty"`
	Components      []string     `json:"components,omitempty" yaml:"components,omitempty"`
	NamePrefix      string       `json:"namePrefix,omitempty" yaml:"namePrefix,omitempty"`
	NameSuffix      string       `json:"nameSuffix,omitempty" yaml:"nameSuffix,omitempty"`
	CommonMetadata  any          `json:"commonMetadata,omitempty" yaml:"commonMetadata,omitempty"`
	PostBuild       any          `json:"postBuild,omitempty" yaml:"postBuild,omitempty"`
}

// Dependency names a target this one depends on. In ferry.yaml it is a
// plain name or, as in Flux, {name, namespace}.
type Dependency struct {
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
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

// UnmarshalYAML accepts both "name" and {name: ..., namespace: ...}.
func (d *Dependency) UnmarshalYAML(n *yamlv3.Node) error {
	switch {
	case n.Kind == yamlv3.ScalarNode && n.Tag == "!!str":
		d.Name = n.Value
		return nil
	case n.Kind == yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind != yamlv3.ScalarNode {
				return fmt.Errorf("line %d: dependsOn entry: %q must be a string", v.Line, k.Value)
			}
			switch k.Value {
			case "name":
				d.Name = v.Value
			case "namespace":
				d.Namespace = v.Value
			default:
				return fmt.Errorf("line %d: dependsOn entry: unknown field %q (want name, namespace)", k.Line, k.Value)
			}
		}
		return nil
	}
	return fmt.Errorf("line %d: dependsOn entry: want a target name or {name: ..., namespace: ...}", n.Line)
}

// ReadFile reads ferry.yaml from the repository root. It returns nil, nil
// when there is none.
func ReadFile(root string) (*File, error) {
	return readFile(root, true)
}

// readFile reads ferry.yaml, checking its sources: when checkSrc is set.
func readFile(root string, checkSrc bool) (*File, error) {
	data, err := manifest.ReadFile(filepath.Join(root, FileName), FileName)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := manifest.CheckAliases(FileName, data); err != nil {
		return nil, err
	}
	f, err := ParseFile(data)
	if err != nil {
		return nil, err
	}
	if !checkSrc {
		return f, nil
	}
	if err := checkSources(root, f.Sources); err != nil {
		return nil, err
	}
	return f, nil
}

// ParseFile parses ferry.yaml content. Unknown fields are errors, so a
// typo does not silently change what is deployed.
func ParseFile(data []byte) (*File, error) {
	// YAML 1.2 decoding straight into the typed fields: keys match exactly
	// (no case folding), unknown keys are errors with their line, and a
	// scalar such as no, on or 010 stays the string it reads as.
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", FileName, yamlMessage(err))
	}
	if err := checkBools(&doc, reflect.TypeFor[File](), ""); err != nil {
		return nil, fmt.Errorf("%s: %w", FileName, err)
	}
	var f File
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", FileName, yamlMessage(err))
	}
	// One document only: a second one would be silently ignored.
	var extra yamlv3.Node
	if err := dec.Decode(&extra); err == nil && !(extra.Kind == yamlv3.DocumentNode && len(extra.Content) == 0) {
		return nil, fmt.Errorf("%s: line %d: a second YAML document; ferry.yaml is one document", FileName, extra.Line)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", FileName, yamlMessage(err))
	}
	for _, name := range slices.Sorted(maps.Keys(f.Sources)) {
		if strings.TrimSpace(f.Sources[name]) == "" {
			return nil, fmt.Errorf("%s: sources: %q has no path", FileName, name)
		}
		if err := checkSourceKey(name); err != nil {
			return nil, fmt.Errorf("%s: sources: %q: %w", FileName, name, err)
		}
	}
	if f.Network != nil {
		for i, h := range f.Network.AllowHosts {
			if err := checkHostPort(h); err != nil {
				return nil, fmt.Errorf("%s: network.allowHosts[%d] %q: %w", FileName, i, h, err)
			}
		}
	}
	if f.InputProviderAPIs != nil {
		for i, h := range f.InputProviderAPIs.AllowHosts {
			if err := checkHostPort(h); err != nil {
				return nil, fmt.Errorf("%s: inputProviderAPIs.allowHosts[%d] %q: %w", FileName, i, h, err)
			}
		}
	}
	if f.Verify != nil {
		if err := f.Verify.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", FileName, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Clusters)) {
		if err := checkNamePart(name); err != nil {
			return nil, fmt.Errorf("%s: clusters: cluster name %q: %w", FileName, name, err)
		}
		if err := f.Clusters[name].check(); err != nil {
			return nil, fmt.Errorf("%s: cluster %q: %w", FileName, name, err)
		}
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
		if err := checkTargetName(t.Name); err != nil {
			return nil, fmt.Errorf("%s: targets[%d]: name %q: %w", FileName, i, t.Name, err)
		}
		for _, f := range [][2]string{{"cluster", t.Cluster}, {"namespace", t.Namespace}} {
			if f[1] == "" {
				continue
			}
			if err := checkNamePart(f[1]); err != nil {
				return nil, fmt.Errorf("%s: target %q: %s %q: %w", FileName, t.Name, f[0], f[1], err)
			}
		}
		seen[t.Name] = true
	}
	policies := map[string]bool{}
	for i, p := range f.ImagePolicies {
		ns := p.Namespace
		if ns == "" {
			ns = DefaultNamespace
		}
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("%s: imagePolicies[%d]: name is required", FileName, i)
		case checkNamePart(p.Name) != nil || checkNamePart(ns) != nil:
			return nil, fmt.Errorf("%s: image policy %q: name and namespace cannot contain ':', '/' or blanks: they are %s", FileName, ns+"/"+p.Name, nameRule)
		case strings.TrimSpace(p.Image) == "":
			return nil, fmt.Errorf("%s: image policy %q: image is required", FileName, p.Name)
		case policies[ns+"/"+p.Name]:
			return nil, fmt.Errorf("%s: image policy %q is declared twice", FileName, ns+"/"+p.Name)
		}
		policies[ns+"/"+p.Name] = true
	}
	for i, c := range f.Charts {
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: charts[%d]: %w", FileName, i, err)
		}
	}
	if err := f.Notifications.check(); err != nil {
		return nil, err
	}
	return &f, nil
}

// checkBools walks the document along the Go type it decodes into and
// refuses a boolean field whose value is not a YAML 1.2 boolean: only an
// unquoted true or false (True, TRUE, ...) is one. The decoder would take
// the YAML 1.1 words on, yes, off, no (even quoted) for booleans while
// refusing a quoted "true"; in ferry.yaml all of them are strings, so all
// of them are errors, with the field and its line.
func checkBools(n *yamlv3.Node, t reflect.Type, at string) error {
	return boolChecker{}.check(n, t, at)
}

// boolChecker remembers the nodes it checked against a type, so that a
// node reached through many aliases is walked once.
type boolChecker map[boolVisit]bool

type boolVisit struct {
	n *yamlv3.Node
	t reflect.Type
}

func (seen boolChecker) check(n *yamlv3.Node, t reflect.Type, at string) error {
	for n != nil && n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || seen[boolVisit{n, t}] {
		return nil
	}
	seen[boolVisit{n, t}] = true
	switch {
	case n.Kind == yamlv3.DocumentNode:
		for _, c := range n.Content {
			if err := seen.check(c, t, at); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Bool:
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() == "!!bool" || n.ShortTag() == "!!null" {
			return nil // the decoder reports a mapping or a list itself
		}
		got := strconv.Quote(n.Value)
		if n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle) != 0 {
			got += " (quoted)"
		}
		return fmt.Errorf("line %d: %s: want true or false, got %s: ferry.yaml is YAML 1.2, where only an unquoted true or false is a boolean", n.Line, at, got)
	case t.Kind() == reflect.Struct && n.Kind == yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			f, ok := yamlField(t, n.Content[i].Value)
			if !ok {
				continue // the decoder reports unknown fields
			}
			if err := seen.check(n.Content[i+1], f.Type, joinField(at, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := seen.check(n.Content[i+1], t.Elem(), joinField(at, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yamlv3.SequenceNode:
		for i, c := range n.Content {
			if err := seen.check(c, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlField finds the struct field a YAML key decodes into.
func yamlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func joinField(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// checkHostPort accepts host or host:port: an exact name, no scheme,
// path, user or wildcard.
func checkHostPort(h string) error {
	u, err := url.Parse("//" + h)
	if err != nil || u.Host != h || u.Hostname() == "" || strings.ContainsAny(h, "*/@?# ") {
		return errors.New("want host or host:port (no scheme, path or wildcard)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not a port number", p)
		}
	}
	return nil
}

// sourceKinds are the Flux source kinds a sources: key may name.
var sourceKinds = []string{"GitRepository", "OCIRepository", "Bucket"}

// checkSourceKey accepts a bare source name or Kind/name.
func checkSourceKey(key string) error {
	kind, name, qualified := strings.Cut(key, "/")
	if !qualified {
		name = key
	} else if !slices.Contains(sourceKinds, kind) {
		return fmt.Errorf("source kind %q: want one of %s", kind, strings.Join(sourceKinds, ", "))
	}
	return checkNamePart(name)
}

// checkSources refuses a source that holds the repository (after
// following symlinks): with sources: {x: ..} a pull request could render
// any file of the runner's workspace. A bare name (another GitRepository)
// must not be this repository either; an artifact source named with its
// kind (OCIRepository/flux-system) may be built from this repository or
// one of its folders.
func checkSources(root string, sources map[string]string) error {
	repo, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("repository %s: %w", root, err)
	}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		p := sources[name]
		dir, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			continue // not there: reported as skipped when a target uses it
		}
		rel, err := filepath.Rel(dir, repo)
		if err != nil {
			continue
		}
		if rel == "." && strings.Contains(name, "/") {
			continue // an artifact built from the whole repository
		}
		if rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: sources: %q: %q is this repository or a folder that holds it; a source is another repository, checked out beside this one", FileName, name, p)
		}
	}
	return nil
}

var notFound = regexp.MustCompile(`field (\S+) not found in type \S+`)

// yamlMessage words a YAML decoding error for ferry.yaml's readers: each
// problem with its line, unknown keys as `unknown field "x"`.
func yamlMessage(err error) string {
	var te *yamlv3.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, 0, len(te.Errors))
		for _, m := range te.Errors {
			msgs = append(msgs, notFound.ReplaceAllString(m, `unknown field "$1"`))
		}
		return strings.Join(msgs, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
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

// check validates the cluster's Helm settings.
func (c ClusterConfig) check() error {
	if err := c.checkAccess(); err != nil {
		return err
	}
	if err := c.HelmReleases.Check(); err != nil {
		return fmt.Errorf("helmReleases: %w", err)
	}
	if c.KubeVersion != "" {
		if _, err := semver.NewVersion(c.KubeVersion); err != nil {
			return fmt.Errorf("kubeVersion %q is not a version (v1.31.2, 1.31)", c.KubeVersion)
		}
	}
	for _, v := range c.APIVersions {
		if n := strings.Count(v, "/"); v == "" || n > 2 || strings.HasPrefix(v, "/") || strings.HasSuffix(v, "/") {
			return fmt.Errorf("apiVersions: %q is not group/version, group/version/Kind or a core version", v)
		}
	}
	return nil
}

// Check reports whether m is a helmReleases setting ("" is HelmRender).
func (m HelmMode) Check() error {
	switch m {
	case "", HelmRender, HelmController:
		return nil
	}
	return fmt.Errorf("%q is not %s or %s", string(m), HelmRender, HelmController)
}
