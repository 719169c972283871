package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Group is the API group of Flux's HelmRelease.
const Group = "helm.toolkit.fluxcd.io"

// releaseVersions are the HelmRelease API versions ParseRelease reads.
var releaseVersions = []string{"v2", "v2beta2"}

// CRDsPolicy says what happens to the CRDs of a chart's crds/ folder on
// install or upgrade (install.crds, upgrade.crds).
type CRDsPolicy string

const (
	// SkipCRDs neither creates nor replaces CRDs.
	SkipCRDs CRDsPolicy = "Skip"
	// CreateCRDs creates missing CRDs and leaves existing ones alone.
	CreateCRDs CRDsPolicy = "Create"
	// CreateReplaceCRDs creates missing CRDs and replaces existing ones.
	CreateReplaceCRDs CRDsPolicy = "CreateReplace"
)

// Flux's defaults: CRDs are created on install and left alone on upgrade.
const (
	DefaultInstallCRDs = CreateCRDs
	DefaultUpgradeCRDs = SkipCRDs
)

// PostRenderStrategy says whether post-renderers see a chart's hooks
// (spec.postRenderStrategy), as Helm 4's strategies of the same names.
type PostRenderStrategy string

const (
	// PostRenderNoHooks post-renders the chart's objects and leaves hooks
	// as the chart rendered them (Helm 3's behaviour). ferry's default.
	PostRenderNoHooks PostRenderStrategy = "nohooks"
	// PostRenderCombined post-renders objects and hooks in one stream.
	PostRenderCombined PostRenderStrategy = "combined"
	// PostRenderSeparate post-renders objects and hooks in two streams.
	PostRenderSeparate PostRenderStrategy = "separate"
)

// Release is what ferry reads of a Flux HelmRelease: where its chart comes
// from, its values, and how it is rendered.
type Release struct {
	// APIVersion, Name and Namespace of the HelmRelease object.
	APIVersion, Name, Namespace string
	// ReleaseName is spec.releaseName as written (see ReleaseName for the
	// name Helm gets).
	ReleaseName string
	// TargetNamespace and StorageNamespace as written in the spec.
	TargetNamespace, StorageNamespace string
	// Chart is spec.chart.spec; nil when the release uses ChartRef.
	Chart *ChartTemplate
	// ChartRef is spec.chartRef; nil when the release uses Chart.
	ChartRef *ChartRef
	// Values is spec.values (nil when absent); ValuesFrom its references
	// in order.
	Values     map[string]any
	ValuesFrom []ValuesReference
	// InstallCRDs and UpgradeCRDs are install.crds and upgrade.crds with
	// Flux's defaults filled in.
	InstallCRDs, UpgradeCRDs CRDsPolicy
	// DisableHooks is install.disableHooks: no hooks are rendered.
	DisableHooks bool
	// PostRenderers are the kustomize post-renderers in order, and
	// PostRenderStrategy whether they see hooks.
	PostRenderers      []Kustomize
	PostRenderStrategy PostRenderStrategy
}

// ChartTemplate is spec.chart.spec: a chart by name from a source.
type ChartTemplate struct {
	Chart   string
	Version string // "*" when the spec leaves it empty, as Flux does
	// SourceRef is a HelmRepository, GitRepository or Bucket; its
	// namespace defaults to the HelmRelease's.
	SourceRef ObjectRef
	// ValuesFiles replace the chart's values.yaml, merged in order (the
	// deprecated valuesFile of v2beta2 comes first); IgnoreMissing skips
	// files the chart does not have.
	ValuesFiles              []string
	IgnoreMissingValuesFiles bool
	// Verify is spec.chart.spec.verify (or a HelmChart's spec.verify):
	// the signatures an OCI chart must carry; nil when none are asked.
	// VerifyOwner names the HelmChart it came from, if one.
	Verify      *SourceVerify
	VerifyOwner string
}

// ChartRef is spec.chartRef: an OCIRepository or HelmChart holding the
// chart.
type ChartRef = ObjectRef

// ObjectRef names a Flux source object.
type ObjectRef struct {
	Kind, Name, Namespace string
}

// ValuesReference is one entry of spec.valuesFrom.
type ValuesReference struct {
	Kind string // ConfigMap or Secret
	Name string
	// ValuesKey is the data key holding the values, values.yaml by
	// default.
	ValuesKey string
	// TargetPath, when set, puts the key's whole value at this path (Helm
	// --set syntax) instead of merging it as YAML.
	TargetPath string
	Optional   bool
}

// Kustomize is one postRenderers[].kustomize entry.
type Kustomize struct {
	Patches []Patch
	Images  []Image
}

// Patch is a kustomize patch (strategic merge or JSON 6902) with an
// optional target selector.
type Patch struct {
	Patch  string
	Target *Selector
}

// Selector picks the objects a patch applies to.
type Selector struct {
	Group, Version, Kind, Name, Namespace string
	LabelSelector, AnnotationSelector     string
}

// Image is a kustomize image override.
type Image struct {
	Name, NewName, NewTag, Digest string
}

// ID is the HelmRelease's Kind/namespace/name, the prefix of errors
// about it.
func (r *Release) ID() string {
	return "HelmRelease/" + r.Namespace + "/" + r.Name
}

// ReleaseNamespace is the namespace the release installs into:
// spec.targetNamespace, else the HelmRelease's.
func (r *Release) ReleaseNamespace() string {
	if r.TargetNamespace != "" {
		return r.TargetNamespace
	}
	return r.Namespace
}

// ReleaseName is the name Helm gets for r, as helm-controller computes
// it: spec.releaseName, else [<targetNamespace>-]<name>; a name longer
// than Helm's 53 characters becomes its first 40, a dash and the first
// 12 hex digits of the SHA-256 of the whole name.
func ReleaseName(r *Release) string {
	name := r.ReleaseName
	if name == "" {
		name = r.Name
		if r.TargetNamespace != "" {
			name = r.TargetNamespace + "-" + r.Name
		}
	}
	return shortenName(name)
}

const (
	maxReleaseName = 53
	shortHash      = 12
)

func shortenName(name string) string {
	if len(name) <= maxReleaseName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxReleaseName-shortHash-1] + "-" + hex.EncodeToString(sum[:])[:shortHash]
}

// IsRelease reports whether u is a HelmRelease ParseRelease reads.
func IsRelease(u *unstructured.Unstructured) bool {
	gv := strings.SplitN(u.GetAPIVersion(), "/", 2)
	if u.GetKind() != "HelmRelease" || len(gv) != 2 || gv[0] != Group {
		return false
	}
	for _, v := range releaseVersions {
		if gv[1] == v {
			return true
		}
	}
	return false
}

// ParseRelease reads a helm.toolkit.fluxcd.io/v2 or v2beta2 HelmRelease.
// Errors name the object as HelmRelease/namespace/name.
func ParseRelease(u *unstructured.Unstructured) (*Release, error) {
	r := &Release{APIVersion: u.GetAPIVersion(), Name: u.GetName(), Namespace: u.GetNamespace()}
	if !IsRelease(u) {
		return nil, fmt.Errorf("%s/%s/%s: not a HelmRelease of %s/%s", u.GetKind(), r.Namespace, r.Name, Group, strings.Join(releaseVersions, " or "))
	}
	if err := r.parse(u.Object["spec"]); err != nil {
		return nil, fmt.Errorf("%s: %w", r.ID(), err)
	}
	return r, nil
}

// releaseSpec is the part of a HelmRelease spec ferry reads, in both API
// versions (v2beta2's deprecated fields included).
type releaseSpec struct {
	ReleaseName      string `json:"releaseName"`
	TargetNamespace  string `json:"targetNamespace"`
	StorageNamespace string `json:"storageNamespace"`
	Chart            *struct {
		Spec struct {
			Chart                    string        `json:"chart"`
			Version                  string        `json:"version"`
			SourceRef                objectRef     `json:"sourceRef"`
			ValuesFiles              []string      `json:"valuesFiles"`
			ValuesFile               string        `json:"valuesFile"`
			IgnoreMissingValuesFiles bool          `json:"ignoreMissingValuesFiles"`
			Verify                   *SourceVerify `json:"verify"`
		} `json:"spec"`
	} `json:"chart"`
	ChartRef   *objectRef       `json:"chartRef"`
	Values     map[string]any   `json:"values"`
	ValuesFrom []valuesFromSpec `json:"valuesFrom"`
	Install    struct {
		CRDs         CRDsPolicy `json:"crds"`
		SkipCRDs     bool       `json:"skipCRDs"`
		DisableHooks bool       `json:"disableHooks"`
	} `json:"install"`
	Upgrade struct {
		CRDs CRDsPolicy `json:"crds"`
	} `json:"upgrade"`
	PostRenderers []struct {
		Kustomize *struct {
			Patches               []patchSpec       `json:"patches"`
			PatchesStrategicMerge []json.RawMessage `json:"patchesStrategicMerge"`
			PatchesJSON6902       []struct {
				Patch  json.RawMessage `json:"patch"`
				Target selectorSpec    `json:"target"`
			} `json:"patchesJson6902"`
			Images []struct {
				Name    string `json:"name"`
				NewName string `json:"newName"`
				NewTag  string `json:"newTag"`
				Digest  string `json:"digest"`
			} `json:"images"`
		} `json:"kustomize"`
	} `json:"postRenderers"`
	PostRenderStrategy PostRenderStrategy `json:"postRenderStrategy"`
}

type objectRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

type valuesFromSpec struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	ValuesKey  string `json:"valuesKey"`
	TargetPath string `json:"targetPath"`
	Optional   bool   `json:"optional"`
}

type patchSpec struct {
	Patch  string        `json:"patch"`
	Target *selectorSpec `json:"target"`
}

type selectorSpec struct {
	Group              string `json:"group"`
	Version            string `json:"version"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	Namespace          string `json:"namespace"`
	LabelSelector      string `json:"labelSelector"`
	AnnotationSelector string `json:"annotationSelector"`
}

func (s *selectorSpec) selector() *Selector {
	if s == nil {
		return nil
	}
	return &Selector{Group: s.Group, Version: s.Version, Kind: s.Kind, Name: s.Name, Namespace: s.Namespace,
		LabelSelector: s.LabelSelector, AnnotationSelector: s.AnnotationSelector}
}

func (r *Release) parse(spec any) error {
	if spec == nil {
		return fmt.Errorf("no spec")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("reading spec: %w", err)
	}
	var s releaseSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("reading spec: %w", err)
	}
	r.ReleaseName, r.TargetNamespace, r.StorageNamespace = s.ReleaseName, s.TargetNamespace, s.StorageNamespace

	switch {
	case s.Chart != nil && s.ChartRef != nil:
		return fmt.Errorf("spec.chart and spec.chartRef are mutually exclusive")
	case s.Chart != nil:
		c := s.Chart.Spec
		if c.Chart == "" {
			return fmt.Errorf("spec.chart.spec.chart is empty")
		}
		if err := r.checkRef("spec.chart.spec.sourceRef", c.SourceRef, "HelmRepository", "GitRepository", "Bucket"); err != nil {
			return err
		}
		t := &ChartTemplate{Chart: c.Chart, Version: c.Version, SourceRef: r.ref(c.SourceRef),
			IgnoreMissingValuesFiles: c.IgnoreMissingValuesFiles, Verify: c.Verify}
		if t.Version == "" {
			t.Version = "*"
		}
		if c.ValuesFile != "" {
			t.ValuesFiles = append(t.ValuesFiles, c.ValuesFile)
		}
		t.ValuesFiles = append(t.ValuesFiles, c.ValuesFiles...)
		r.Chart = t
	case s.ChartRef != nil:
		if err := r.checkRef("spec.chartRef", *s.ChartRef, "OCIRepository", "HelmChart"); err != nil {
			return err
		}
		ref := r.ref(*s.ChartRef)
		r.ChartRef = &ref
	default:
		return fmt.Errorf("neither spec.chart nor spec.chartRef is set")
	}

	r.Values = s.Values
	for i, v := range s.ValuesFrom {
		if v.Kind != "ConfigMap" && v.Kind != "Secret" {
			return fmt.Errorf("spec.valuesFrom[%d]: kind %q is not ConfigMap or Secret", i, v.Kind)
		}
		if v.Name == "" {
			return fmt.Errorf("spec.valuesFrom[%d]: name is empty", i)
		}
		if v.ValuesKey == "" {
			v.ValuesKey = "values.yaml"
		}
		r.ValuesFrom = append(r.ValuesFrom, ValuesReference{Kind: v.Kind, Name: v.Name, ValuesKey: v.ValuesKey,
			TargetPath: v.TargetPath, Optional: v.Optional})
	}

	if r.InstallCRDs, err = crdsPolicy("spec.install.crds", s.Install.CRDs, DefaultInstallCRDs); err != nil {
		return err
	}
	if s.Install.CRDs == "" && s.Install.SkipCRDs {
		r.InstallCRDs = SkipCRDs
	}
	if r.UpgradeCRDs, err = crdsPolicy("spec.upgrade.crds", s.Upgrade.CRDs, DefaultUpgradeCRDs); err != nil {
		return err
	}
	r.DisableHooks = s.Install.DisableHooks

	switch s.PostRenderStrategy {
	case "":
		r.PostRenderStrategy = PostRenderNoHooks
	case PostRenderNoHooks, PostRenderCombined, PostRenderSeparate:
		r.PostRenderStrategy = s.PostRenderStrategy
	default:
		return fmt.Errorf("spec.postRenderStrategy %q is not %s, %s or %s", s.PostRenderStrategy, PostRenderNoHooks, PostRenderCombined, PostRenderSeparate)
	}
	for i, p := range s.PostRenderers {
		if p.Kustomize == nil {
			continue
		}
		k := Kustomize{}
		for _, pt := range p.Kustomize.Patches {
			k.Patches = append(k.Patches, Patch{Patch: pt.Patch, Target: pt.Target.selector()})
		}
		for j, raw := range p.Kustomize.PatchesStrategicMerge {
			y, err := yaml.JSONToYAML(raw)
			if err != nil {
				return fmt.Errorf("spec.postRenderers[%d].kustomize.patchesStrategicMerge[%d]: %w", i, j, err)
			}
			k.Patches = append(k.Patches, Patch{Patch: string(y)})
		}
		for _, pt := range p.Kustomize.PatchesJSON6902 {
			k.Patches = append(k.Patches, Patch{Patch: string(pt.Patch), Target: pt.Target.selector()})
		}
		for _, im := range p.Kustomize.Images {
			k.Images = append(k.Images, Image(im))
		}
		r.PostRenderers = append(r.PostRenderers, k)
	}
	return nil
}

// ref fills in a source reference's namespace, the HelmRelease's by
// default.
func (r *Release) ref(o objectRef) ObjectRef {
	ns := o.Namespace
	if ns == "" {
		ns = r.Namespace
	}
	return ObjectRef{Kind: o.Kind, Name: o.Name, Namespace: ns}
}

func (r *Release) checkRef(field string, o objectRef, kinds ...string) error {
	if o.Name == "" {
		return fmt.Errorf("%s.name is empty", field)
	}
	for _, k := range kinds {
		if o.Kind == k {
			return nil
		}
	}
	return fmt.Errorf("%s.kind %q is not %s", field, o.Kind, strings.Join(kinds, ", "))
}

func crdsPolicy(field string, p, def CRDsPolicy) (CRDsPolicy, error) {
	switch p {
	case "":
		return def, nil
	case SkipCRDs, CreateCRDs, CreateReplaceCRDs:
		return p, nil
	}
	return "", fmt.Errorf("%s %q is not %s, %s or %s", field, p, SkipCRDs, CreateCRDs, CreateReplaceCRDs)
}
