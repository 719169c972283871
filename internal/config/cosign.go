package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/ocisig"
	"github.com/ferry-ci/ferry/internal/render"
)

// sourceVerify is the spec.verify of a source object (an OCIRepository
// or HelmChart), nil when it has none. In a proposed revision, the
// trusted revision's object decides when it has a spec.verify: a pull
// request cannot drop or loosen what its base asks of a chart.
func (r *Repo) sourceVerify(ctx context.Context, t *Target, source *unstructured.Unstructured) *helm.SourceVerify {
	spec, _, _ := unstructured.NestedMap(source.Object, "spec", "verify")
	if r.trusted != nil {
		if b := r.trustedSourceObject(ctx, t.Cluster, t.Name, source); b != nil {
			if base, _, _ := unstructured.NestedMap(b.Object, "spec", "verify"); base != nil && !reflect.DeepEqual(base, spec) {
				spec = base
			}
		}
	}
	if spec == nil {
		return nil
	}
	var v helm.SourceVerify
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &v); err != nil {
		// A spec.verify that does not parse still asks for a
		// verification: it fails with the provider's error.
		v.Provider = fmt.Sprintf("(unreadable: %v)", err)
	}
	return &v
}

// chartVerification is the cosign policy of v, the verify field owner
// names ("Kind/namespace/name spec.verify"), whose secretRef is in
// namespace; nil when v is nil. Keys come from the Secret among the cluster's renders (every
// *.pub key), else from FERRY_SECRET_<NAME>_COSIGN_PUB; keyless
// identities are checked against the run's Sigstore trusted root.
func (r *Repo) chartVerification(ctx context.Context, t *Target, res *render.Result, owner, namespace string, v *helm.SourceVerify) (*ocisig.Policy, error) {
	if v == nil {
		return nil, nil
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", owner, err) }
	switch v.Provider {
	case "", "cosign":
	case "notation":
		return nil, fail(errors.New("ferry does not verify notation signatures: only provider cosign is supported"))
	default:
		return nil, fail(fmt.Errorf("unknown provider %q (cosign or notation)", v.Provider))
	}
	p := &ocisig.Policy{Owner: owner, Root: r.opts.SigstoreRoot}
	for _, id := range v.MatchOIDCIdentity {
		p.Identities = append(p.Identities, ocisig.Identity{Issuer: id.Issuer, Subject: id.Subject})
	}
	if v.SecretRef != nil && v.SecretRef.Name != "" {
		keys, err := r.verifyKeys(ctx, t, res, namespace, v.SecretRef.Name)
		if err != nil {
			return nil, fail(err)
		}
		p.Keys = keys
	}
	if err := p.Check(); err != nil {
		return nil, fail(err)
	}
	return p, nil
}

// verifyKeys are the cosign public keys of the Secret namespace/name.
func (r *Repo) verifyKeys(ctx context.Context, t *Target, res *render.Result, namespace, name string) ([]ocisig.Key, error) {
	secretID := "Secret/" + namespace + "/" + name
	if s := r.clusterObject(ctx, t, res, "", "Secret", namespace, name); s != nil {
		data, err := secretStrings(s, secretID)
		if err != nil {
			return nil, err
		}
		var keys []ocisig.Key
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if !strings.HasSuffix(k, ".pub") {
				continue
			}
			key, err := ocisig.ParseKey(secretID+" key "+k, []byte(data[k]))
			if err != nil {
				return nil, err
			}
			keys = append(keys, key)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("secretRef %s holds no *.pub key", secretID)
		}
		return keys, nil
	}
	variable, _ := images.SecretKeyEnv(name, "cosign.pub")
	if env := r.opts.ChartCredentials; env != nil {
		if v, ok := env.SecretValue(name, "cosign.pub"); ok {
			key, err := ocisig.ParseKey("$"+variable, []byte(v))
			if err != nil {
				return nil, err
			}
			return []ocisig.Key{key}, nil
		}
	}
	return nil, fmt.Errorf("its secretRef %s is not in the renders of its cluster, and %s is not set", secretID, variable)
}
