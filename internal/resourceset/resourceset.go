package resourceset

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Flux Operator's API group, version and kinds this package reads.
const (
	Group        = "fluxcd.controlplane.io"
	APIVersion   = Group + "/v1"
	Kind         = "ResourceSet"
	ProviderKind = "ResourceSetInputProvider"
)

// Annotations the operator reads on a ResourceSet or on the objects it
// generates.
const (
	// ReconcileAnnotation set to ReconcileDisabled on a ResourceSet pauses
	// it; on a generated object, leaves that object out.
	ReconcileAnnotation = Group + "/reconcile"
	ReconcileDisabled   = "disabled"
	// CopyFromAnnotation on a generated ConfigMap or Secret names the
	// namespace/name whose data the operator copies into it.
	CopyFromAnnotation = Group + "/copyFrom"
	// ConvertKubeConfigFromAnnotation on a generated ConfigMap names the
	// Secret whose kubeconfig gives it an address and a CA certificate.
	ConvertKubeConfigFromAnnotation = Group + "/convertKubeConfigFrom"
	// ChecksumFromAnnotation names ConfigMaps and Secrets whose data the
	// operator digests into a sibling checksum annotation.
	ChecksumFromAnnotation = Group + "/checksumFrom"
)

// DefaultMaxInputs is the documented cap on a ResourceSet's input sets
// (the Permute strategy's permutations): past it the operator stalls.
const DefaultMaxInputs = 10000

// Input strategies of spec.inputStrategy.name.
const (
	Flatten = "Flatten"
	Permute = "Permute"
)

// Options for Expand.
type Options struct {
	// Providers are the ResourceSetInputProvider objects visible to the
	// ResourceSet (same render, same cluster). spec.inputsFrom selects
	// among those in the ResourceSet's namespace, by name or by label
	// selector; others are ignored.
	Providers []*unstructured.Unstructured
	// Dynamic resolves the inputs of a provider that is not of type
	// Static (GitHubPullRequest, GitLabBranch, OCIArtifactTag, ...): the
	// input sets the operator would export for it, each with its id.
	// When nil, such a provider makes Expand return a *SkipError; an
	// error Dynamic returns is wrapped, so it may be a *SkipError too.
	Dynamic func(ctx context.Context, provider *unstructured.Unstructured) ([]map[string]any, error)
	// MaxInputs caps the number of input sets; 0 means DefaultMaxInputs.
	MaxInputs int
}

// Result is what a ResourceSet generates.
type Result struct {
	// Objects are the generated objects after de-duplication, in the
	// order generated: step by step; within one list of templates
	// (spec.resources, then spec.resourcesTemplate), input set by input
	// set, each template in its order.
	Objects []Object
	// Inputs are the input sets the templates were executed with, with
	// their built-in fields (id, provider), in order.
	Inputs []map[string]any
	// Excluded are generated objects left out by their own
	// fluxcd.controlplane.io/reconcile: disabled annotation.
	Excluded []Object
	// FromCluster lists what the operator fills in from the cluster at
	// apply time and a render cannot: the objects are in Objects as their
	// templates give them.
	FromCluster []ClusterData
}

// Object is one generated object and where it comes from.
type Object struct {
	Object *unstructured.Unstructured
	// Input is the index in Result.Inputs of the input set that
	// generated the object (the first, when several generated it), -1
	// when the ResourceSet has no inputs.
	Input int
	// Step is the name of the spec.steps entry holding the template, ""
	// outside steps.
	Step string
	// Template is the field holding the template, as
	// spec.resources[1], spec.resourcesTemplate or
	// spec.steps[0].resources[2].
	Template string
}

// ClusterData is one annotation of a generated object that makes the
// operator read the cluster when it applies the object.
type ClusterData struct {
	// Object is the generated object as Kind/namespace/name.
	Object string
	// Annotation is the annotation's name, Value what it refers to.
	Annotation, Value string
}

// Unstructured returns the generated objects alone, in order.
func (r *Result) Unstructured() []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, len(r.Objects))
	for i, o := range r.Objects {
		objs[i] = o.Object
	}
	return objs
}

// IsResourceSet reports whether u is a Flux Operator ResourceSet.
func IsResourceSet(u *unstructured.Unstructured) bool {
	return u.GroupVersionKind().GroupKind() == schema.GroupKind{Group: Group, Kind: Kind}
}

// IsProvider reports whether u is a ResourceSetInputProvider.
func IsProvider(u *unstructured.Unstructured) bool {
	return u.GroupVersionKind().GroupKind() == schema.GroupKind{Group: Group, Kind: ProviderKind}
}

// Expand renders the objects a ResourceSet generates: its input sets (from
// spec.inputs and the providers spec.inputsFrom selects, flattened or
// permuted), each template executed with each input set, de-duplicated,
// with spec.commonMetadata merged in. A paused ResourceSet (reconcile:
// disabled) or one with a provider ferry cannot resolve gives a
// *SkipError; every other failure is an error prefixed
// ResourceSet/namespace/name.
func Expand(ctx context.Context, rset *unstructured.Unstructured, opts Options) (*Result, error) {
	if !IsResourceSet(rset) {
		return nil, fmt.Errorf("%s: not a %s", ref(rset), Kind)
	}
	e := &expansion{rset: rset, opts: opts, ref: ref(rset)}
	if e.opts.MaxInputs <= 0 {
		e.opts.MaxInputs = DefaultMaxInputs
	}
	if rset.GetAnnotations()[ReconcileAnnotation] == ReconcileDisabled {
		return nil, &SkipError{ResourceSet: e.ref, Reason: "reconciliation is disabled (" + ReconcileAnnotation + ": " + ReconcileDisabled + "): the operator applies nothing for it and leaves what it applied before"}
	}
	spec, err := parseSpec(rset.Object)
	if err != nil {
		return nil, e.wrap(err)
	}
	inputs, err := e.inputs(ctx, spec)
	if skip := (*SkipError)(nil); errors.As(err, &skip) && skip.ResourceSet == e.ref {
		return nil, skip // names the ResourceSet already
	}
	if err != nil {
		return nil, e.wrap(err)
	}
	res, err := e.generate(ctx, spec, inputs)
	if err != nil {
		return nil, e.wrap(err)
	}
	return res, nil
}

// expansion is the state of one Expand call.
type expansion struct {
	rset *unstructured.Unstructured
	opts Options
	ref  string // Kind/namespace/name of the ResourceSet
}

func (e *expansion) wrap(err error) error { return fmt.Errorf("%s: %w", e.ref, err) }

// ref renders an object as Kind/namespace/name, or Kind/name without a
// namespace.
func ref(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}
