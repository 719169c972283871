// Package ocisig verifies the cosign signatures of an OCI artifact, as
// source-controller does for an OCIRepository with spec.verify
// (provider: cosign) before it hands the artifact on: with public keys,
// or keyless against a Sigstore trusted root with the signer's OIDC
// identity.
//
// Both places cosign stores a signature are read: the simple-signing
// image under the sha256-<hex>.sig tag (cosign v2, and v3 with
// --new-bundle-format=false) and Sigstore bundles attached as OCI
// referrers (cosign v3's default; go-containerregistry falls back to the
// sha256-<hex> referrers tag on a registry without the referrers API).
// Bundles and keyless signatures are checked by sigstore-go; a
// simple-signing signature with a key is one signature check and the
// digest it names.
package ocisig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Policy is what an artifact's signatures must satisfy: one signature
// by one of Keys, or, keyless, one whose certificate the trusted root
// vouches for and whose identity matches one of Identities.
type Policy struct {
	// Owner is the object and field asking, for messages:
	// "OCIRepository/flux-system/app spec.verify".
	Owner string
	// Keys are the trusted public keys. With keys, Identities are not
	// used, as in Flux.
	Keys []Key
	// Identities are the OIDC issuers and subjects (regular
	// expressions) a keyless signature may come from.
	Identities []Identity
	// Root is the Sigstore trusted root keyless signatures are checked
	// against; nil when the run has none.
	Root *Root
}

// Root is a Sigstore trusted root (trusted_root.json: the Fulcio CAs,
// the Rekor and CT log keys) and where it came from.
type Root struct {
	Name string
	*root.TrustedRoot
	json []byte
}

// RootVar names the trusted root of a run: a trusted_root.json's path,
// or its JSON.
const RootVar = "FERRY_SIGSTORE_TRUSTED_ROOT"

// LoadRoot reads the trusted root value names (RootVar's value): JSON
// when it starts with "{", else a file's path.
func LoadRoot(value string, readFile func(string) ([]byte, error)) (*Root, error) {
	name, b := "$"+RootVar, []byte(value)
	if !strings.HasPrefix(strings.TrimSpace(value), "{") {
		name = value + " ($" + RootVar + ")"
		var err error
		if b, err = readFile(value); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	tr, err := root.NewTrustedRootFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s is not a Sigstore trusted root: %w", name, err)
	}
	return &Root{Name: name, TrustedRoot: tr, json: b}, nil
}

// Key is a trusted public key and where it came from.
type Key struct {
	// Name says where the key came from: "Secret/ns/name key cosign.pub".
	Name     string
	verifier signature.Verifier
	der      []byte
}

// Identity is one matchOIDCIdentity entry: regular expressions the
// certificate's OIDC issuer and subject (its SAN) must match, whole.
type Identity struct {
	Issuer, Subject string
}

// ParseKey reads a PEM public key (cosign.pub: ECDSA, RSA or Ed25519).
func ParseKey(name string, pemBytes []byte) (Key, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return Key{}, fmt.Errorf("%s: not a PEM public key: %w", name, err)
	}
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", name, err)
	}
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", name, err)
	}
	return Key{Name: name, verifier: v, der: der}, nil
}

// Check says what is wrong with p before any signature is read: no key
// and no identity, an identity that does not compile, or identities
// without a trusted root.
func (p *Policy) Check() error {
	if len(p.Keys) == 0 && len(p.Identities) == 0 {
		return errors.New("spec.verify names no key (secretRef) and no matchOIDCIdentity")
	}
	if len(p.Keys) > 0 {
		return nil
	}
	for i, id := range p.Identities {
		if id.Issuer == "" || id.Subject == "" {
			return fmt.Errorf("spec.verify.matchOIDCIdentity[%d]: issuer and subject are both required", i)
		}
		for _, re := range []string{id.Issuer, id.Subject} {
			if _, err := regexp.Compile(re); err != nil {
				return fmt.Errorf("spec.verify.matchOIDCIdentity[%d]: %q is not a regular expression: %w", i, re, err)
			}
		}
	}
	if p.Root == nil {
		return errors.New("keyless verification (matchOIDCIdentity) needs the Sigstore trusted root, which ferry does not fetch: " +
			"set " + RootVar + " to a trusted_root.json (cosign trusted-root create, or the public one from `cosign initialize` / tuf-repo-cdn.sigstore.dev)")
	}
	return nil
}

// Key tells policies apart in cache keys: what one verified is not taken
// as verified by another.
func (p *Policy) Key() string {
	h := sha256.New()
	for _, k := range p.Keys {
		h.Write(k.der)
		h.Write([]byte{0})
	}
	for _, id := range p.Identities {
		fmt.Fprintf(h, "%s\x00%s\x00", id.Issuer, id.Subject)
	}
	if p.Root != nil {
		h.Write(p.Root.json)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Describe says what p trusts, for messages: "keys Secret/…" or
// "identities <subject> from <issuer>".
func (p *Policy) Describe() string {
	if len(p.Keys) > 0 {
		var names []string
		for _, k := range p.Keys {
			names = append(names, k.Name)
		}
		return "the keys " + strings.Join(slices.Compact(names), ", ")
	}
	var ids []string
	for _, id := range p.Identities {
		ids = append(ids, fmt.Sprintf("subject %q from issuer %q", id.Subject, id.Issuer))
	}
	return "keyless signers " + strings.Join(ids, " or ")
}
