package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ID identifies an object the way the API server does: group, kind,
// namespace and name. The version is not part of the identity.
type ID struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the ID as Kind/namespace/name (Kind/name when cluster
// scoped), with the group appended to the kind when there is one.
func (id ID) String() string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace == "" {
		return kind + "/" + id.Name
	}
	return kind + "/" + id.Namespace + "/" + id.Name
}

// IDOf returns the identity of an object.
func IDOf(u *unstructured.Unstructured) ID {
	gvk := u.GroupVersionKind()
	return ID{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// Set is an ordered list of objects with unique identities.
type Set struct {
	Objects []*unstructured.Unstructured
}

// IDs returns the identities of the set's objects, in order.
func (s *Set) IDs() []ID {
	ids := make([]ID, 0, len(s.Objects))
	for _, o := range s.Objects {
		ids = append(ids, IDOf(o))
	}
	return ids
}

// Get returns the object with the given identity, or nil.
func (s *Set) Get(id ID) *unstructured.Unstructured {
	for _, o := range s.Objects {
		if IDOf(o) == id {
			return o
		}
	}
	return nil
}

// YAML encodes the set as one YAML stream, documents separated by "---".
// The objects are encoded on every core, each into its own document.
func (s *Set) YAML() ([]byte, error) {
	docs := make([][]byte, len(s.Objects))
	errs := make([]error, len(s.Objects))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(s.Objects)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(s.Objects); i = int(next.Add(1)) - 1 {
				docs[i], errs[i] = YAML(s.Objects[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	size := 0
	for _, b := range docs {
		size += len(b) + 4
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	for i, b := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// YAML encodes one object as a YAML document.
func YAML(u *unstructured.Unstructured) ([]byte, error) {
	b, err := encodeYAML(u.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding YAML: %w", IDOf(u), err)
	}
	return b, nil
}

// FileName returns a file name for an object that is unique within one
// target: kind[.group]_[namespace_]name.yaml, lowercased. Kubernetes names
// cannot hold "_", so the parts cannot run into each other.
func FileName(u *unstructured.Unstructured) string {
	id := IDOf(u)
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	parts := []string{kind}
	if id.Namespace != "" {
		parts = append(parts, id.Namespace)
	}
	parts = append(parts, id.Name)
	name := strings.ToLower(strings.Join(parts, "_"))
	return strings.NewReplacer("/", "-", "\\", "-", "..", "-").Replace(name) + ".yaml"
}

// HelmHookAnnotation marks the hook objects of a rendered HelmRelease
// with their phases, HookPre, HookPost or HookPrePost: they are applied
// in waves of their own (see Wave).
const HelmHookAnnotation = "ferry.dev/helm-hook"

// The values of HelmHookAnnotation. A hook on both pre and post events
// (helm.sh/hook: pre-install,post-install) is one object, HookPrePost,
// that runs in both phases as Helm runs it: before the release's other
// objects, and again after them.
const (
	HookPre     = "pre"
	HookPost    = "post"
	HookPrePost = "pre,post"
)

// HookPhases reports the phases the hook u runs in, from its
// HelmHookAnnotation: neither for an object that is not a hook.
func HookPhases(u *unstructured.Unstructured) (pre, post bool) {
	switch u.GetAnnotations()[HelmHookAnnotation] {
	case HookPre:
		return true, false
	case HookPost:
		return false, true
	case HookPrePost:
		return true, true
	}
	return false, false
}

// The apply waves, in the order they are applied. Pre hooks come after
// the CRDs and Namespaces they may need and before every other object of
// the target; post hooks come after all of them.
const (
	WaveCRDs = iota
	WaveNamespaces
	WavePreHooks
	WaveClusterScoped
	WaveNamespaced
	WavePostHooks
	// Waves counts the waves.
	Waves
)

// Sort orders objects for applying: by Wave, ties broken by identity so
// the order is the same for the same input.
func Sort(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool {
		wi, wj := Wave(objs[i]), Wave(objs[j])
		if wi != wj {
			return wi < wj
		}
		return Less(IDOf(objs[i]), IDOf(objs[j]))
	})
}

// Wave is the apply wave of an object: a hook's first phase decides it
// (WavePreHooks, WavePostHooks), whatever its kind; other objects go by
// KindWave. A hook of both phases is in WavePreHooks, and is applied
// again after the other waves.
func Wave(u *unstructured.Unstructured) int {
	switch pre, post := HookPhases(u); {
	case pre:
		return WavePreHooks
	case post:
		return WavePostHooks
	}
	return KindWave(u)
}

// KindWave is the wave an object's kind alone gives it: WaveCRDs,
// WaveNamespaces, WaveClusterScoped (no namespace) or WaveNamespaced.
func KindWave(u *unstructured.Unstructured) int {
	gvk := u.GroupVersionKind()
	switch {
	case IsCRD(u):
		return WaveCRDs
	case gvk.Group == "" && gvk.Kind == "Namespace":
		return WaveNamespaces
	case u.GetNamespace() == "":
		return WaveClusterScoped
	default:
		return WaveNamespaced
	}
}

// Less orders identities by namespace, group, kind and name.
func Less(a, b ID) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Name < b.Name
}
