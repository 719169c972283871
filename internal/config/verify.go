package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// VerifyConfig is ferry.yaml's verify: block: only revisions signed by a
// trusted key reach a cluster (apply, drift --heal).
type VerifyConfig struct {
	// Mode is HEAD, Tag or TagAndHEAD, as in Flux's GitRepository
	// spec.verify.
	Mode string `json:"mode" yaml:"mode"`
	// Keys are files (or folders of files) of the repository holding
	// trusted public keys: read as of the last applied revision, never
	// the one being verified.
	Keys []string `json:"keys,omitempty" yaml:"keys,omitempty"`
	// SecretRef names a Secret of trusted keys (as spec.verify.secretRef):
	// FERRY_SECRET_<NAME>_<KEY> variables, else the cluster's Secret.
	SecretRef *SecretRef `json:"secretRef,omitempty" yaml:"secretRef,omitempty"`
	// Range has every commit since the last applied revision verify, not
	// only the one applied.
	Range bool `json:"range,omitempty" yaml:"range,omitempty"`
}

// SecretRef names a Secret, in namespace (default flux-system).
type SecretRef struct {
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
}

// VerifyModes are the modes a verify block may name.
var VerifyModes = []string{"HEAD", "Tag", "TagAndHEAD"}

func (v *VerifyConfig) check() error {
	if !slices.Contains(VerifyModes, v.Mode) {
		return fmt.Errorf("verify.mode %q: want %s", v.Mode, strings.Join(VerifyModes, ", "))
	}
	for i, k := range v.Keys {
		if k == "" || filepath.IsAbs(k) || !filepath.IsLocal(filepath.FromSlash(k)) {
			return fmt.Errorf("verify.keys[%d] %q: a path inside the repository", i, k)
		}
	}
	if v.SecretRef != nil && (v.SecretRef.Name == "" || checkNamePart(v.SecretRef.Name) != nil) {
		return fmt.Errorf("verify.secretRef.name %q: a Secret name", v.SecretRef.Name)
	}
	return nil
}

// Verification is what a revision of the repository asks to be verified:
// ferry.yaml's verify block and the spec.verify of the GitRepositories
// that stand for this checkout, each named where it comes from.
type Verification struct {
	Modes      []string // one per source, in Sources' order
	Sources    []string
	KeyFiles   []string
	SecretRefs []SecretRef
	Range      bool
}

// Verification is what r asks; zero when nothing asks.
func (r *Repo) Verification() Verification {
	var v Verification
	if r.File != nil && r.File.Verify != nil {
		f := r.File.Verify
		v.Modes, v.Sources = append(v.Modes, f.Mode), append(v.Sources, FileName+" verify")
		v.KeyFiles, v.Range = f.Keys, f.Range
		if f.SecretRef != nil {
			v.SecretRefs = append(v.SecretRefs, *f.SecretRef)
		}
	}
	for _, g := range r.syncVerify {
		v.Modes, v.Sources = append(v.Modes, g.mode), append(v.Sources, g.source)
		if g.secret != "" {
			v.SecretRefs = append(v.SecretRefs, SecretRef{Name: g.secret, Namespace: g.namespace})
		}
	}
	return v
}

// gitVerify is a GitRepository's spec.verify.
type gitVerify struct {
	mode, secret, namespace, source string
}

// syncVerifyOf is the spec.verify of the GitRepositories of objs that
// stand for the checkout (self).
func syncVerifyOf(objs []FluxObject, self map[string]bool) []gitVerify {
	var out []gitVerify
	for _, o := range objs {
		if !isGitRepository(o.Object) || !self[o.Object.GetName()] {
			continue
		}
		mode, ok, _ := unstructured.NestedString(o.Object.Object, "spec", "verify", "mode")
		if !ok {
			continue
		}
		if mode == "" {
			mode = "HEAD"
		}
		secret, _, _ := unstructured.NestedString(o.Object.Object, "spec", "verify", "secretRef", "name")
		ns := o.Object.GetNamespace()
		if ns == "" {
			ns = DefaultNamespace
		}
		out = append(out, gitVerify{mode: mode, secret: secret, namespace: ns, source: "GitRepository/" + ns + "/" + o.Object.GetName() + " spec.verify"})
	}
	return out
}
