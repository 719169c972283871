package ocisig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/ocisig"
	"github.com/ferry-ci/ferry/internal/ocisig/cosigntest"
)

// push pushes a new artifact to repo:tag and returns its digest reference.
func push(t *testing.T, reg *registrytest.Registry, repo, tag string) name.Digest {
	t.Helper()
	d := reg.MustPush(t, repo, tag)[tag]
	ref, err := name.NewDigest(reg.Image(repo) + "@" + d)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func key(t *testing.T, name string, pem []byte) ocisig.Key {
	t.Helper()
	k, err := ocisig.ParseKey(name, pem)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeys signs artifacts with the real cosign, in both of its formats,
// and checks that only a signature by a trusted key over that very
// artifact is taken.
func TestKeys(t *testing.T) {
	reg := registrytest.Start(t)
	auth := cosigntest.Auth(reg.Username, reg.Password)
	c := cosigntest.New(t, reg.Host, reg.Username, reg.Password)
	trustedKey, trustedPub := c.KeyPair("trusted")
	otherKey, _ := c.KeyPair("other")

	bundled := push(t, reg, "charts/app", "1.0.0")
	c.Sign(bundled.String(), trustedKey, false)
	legacy := push(t, reg, "charts/app", "1.1.0")
	c.Sign(legacy.String(), trustedKey, true)
	unsigned := push(t, reg, "charts/app", "1.2.0")
	byOther := push(t, reg, "charts/app", "1.3.0")
	c.Sign(byOther.String(), otherKey, false)
	c.Sign(byOther.String(), otherKey, true)
	attested := push(t, reg, "charts/app", "1.4.0")
	c.Attest(attested.String(), trustedKey)
	// A signature of another artifact, copied beside this one: the
	// signature checks, but it names the other digest.
	copied := push(t, reg, "charts/app", "1.5.0")
	cosigntest.PushSimple(t, copied, cosigntest.SimplePayload(legacy), signatureOf(t, legacy, auth), auth)

	p := &ocisig.Policy{Keys: []ocisig.Key{key(t, "Secret/flux-system/cosign-pub key cosign.pub", trustedPub)}}
	for _, tc := range []struct {
		name    string
		ref     name.Digest
		where   string
		refused []string
	}{
		{name: "bundle", ref: bundled, where: "bundle sha256:"},
		{name: "simple signing", ref: legacy, where: ".sig layer 0"},
		{name: "unsigned", ref: unsigned, refused: []string{"has no cosign signature", "it must be signed by the keys Secret/flux-system/cosign-pub key cosign.pub"}},
		{name: "another key", ref: byOther, refused: []string{"is not signed by", "not by Secret/flux-system/cosign-pub key cosign.pub", "signed by none of the trusted keys"}},
		{name: "attestation", ref: attested, refused: []string{"the bundle is an attestation (https://example.com/scan/v1), not a signature"}},
		{name: "copied signature", ref: copied, refused: []string{"the signature is of " + legacy.DigestStr() + ", not of this artifact"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Verify(t.Context(), tc.ref, auth)
			if tc.refused == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got.By != p.Keys[0].Name || !strings.Contains(got.Where, tc.where) {
					t.Errorf("verified %+v, want by %s in %s", got, p.Keys[0].Name, tc.where)
				}
				return
			}
			var ve *ocisig.Error
			if !errors.As(err, &ve) {
				t.Fatalf("got %v (%v), want an *ocisig.Error", err, got)
			}
			if ve.Artifact != tc.ref.String() {
				t.Errorf("artifact %s, want %s", ve.Artifact, tc.ref)
			}
			for _, want := range tc.refused {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}

	t.Run("either key", func(t *testing.T) {
		_, otherPub := c.KeyPair("third")
		two := &ocisig.Policy{Keys: []ocisig.Key{key(t, "other.pub", otherPub), p.Keys[0]}}
		if got, err := two.Verify(t.Context(), bundled, auth); err != nil || got.By != p.Keys[0].Name {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("registry refuses", func(t *testing.T) {
		_, err := p.Verify(t.Context(), bundled, cosigntest.Auth(reg.Username, "wrong"))
		var ve *ocisig.Error
		if err == nil || errors.As(err, &ve) {
			t.Fatalf("got %v, want a registry error (not a refused signature)", err)
		}
	})
}

// signatureOf is the annotations of ref's simple-signing signature.
func signatureOf(t *testing.T, ref name.Digest, opts ...remote.Option) map[string]string {
	t.Helper()
	tag := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	img, err := remote.Image(tag, opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m.Layers[0].Annotations
}

// TestKeyless signs artifacts as CI identities of a Sigstore of the
// test's own, in both formats, and checks the identity, the trusted root
// and the artifact.
func TestKeyless(t *testing.T) {
	reg := registrytest.Start(t)
	auth := cosigntest.Auth(reg.Username, reg.Password)
	ss := cosigntest.NewSigstore(t)
	tr, err := ocisig.LoadRoot(string(ss.TrustedRoot), nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		issuer  = "https://token.actions.githubusercontent.com"
		release = "https://github.com/acme/charts/.github/workflows/release.yaml@refs/heads/main"
		fork    = "https://github.com/mallory/charts/.github/workflows/release.yaml@refs/heads/main"
	)
	legacy := push(t, reg, "charts/app", "2.0.0")
	ss.SignLegacy(legacy, release, issuer, auth)
	bundled := push(t, reg, "charts/app", "2.1.0")
	ss.SignBundle(bundled, release, issuer, auth)
	forked := push(t, reg, "charts/app", "2.2.0")
	ss.SignBundle(forked, fork, issuer, auth)
	ss.SignLegacy(forked, fork, issuer, auth)
	// Another Sigstore's signature (a CA the root does not hold).
	stranger := push(t, reg, "charts/app", "2.3.0")
	cosigntest.NewSigstore(t).SignBundle(stranger, release, issuer, auth)

	p := &ocisig.Policy{
		Identities: []ocisig.Identity{{Issuer: `https://token\.actions\.githubusercontent\.com`, Subject: `https://github\.com/acme/charts/.*`}},
		Root:       tr,
	}
	for _, tc := range []struct {
		name    string
		ref     name.Digest
		refused string
	}{
		{name: "simple signing", ref: legacy},
		{name: "bundle", ref: bundled},
		{name: "another identity", ref: forked, refused: "is not signed by keyless signers subject"},
		{name: "another Sigstore", ref: stranger, refused: "not enough verified log entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Verify(t.Context(), tc.ref, auth)
			if tc.refused == "" {
				if err != nil {
					t.Fatal(err)
				}
				if want := release + " (issuer " + issuer + ")"; got.By != want {
					t.Errorf("verified by %q, want %q", got.By, want)
				}
				return
			}
			var ve *ocisig.Error
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("got %v, want an *ocisig.Error saying %q", err, tc.refused)
			}
			if tc.ref == forked && len(ve.Reasons) != 2 {
				t.Errorf("want both signatures' reasons: %v", ve.Reasons)
			}
		})
	}
	t.Run("a subject matched only in part", func(t *testing.T) {
		part := &ocisig.Policy{Identities: []ocisig.Identity{{Issuer: p.Identities[0].Issuer, Subject: `acme/charts`}}, Root: tr}
		if _, err := part.Verify(t.Context(), bundled, auth); err == nil {
			t.Fatal("a subject expression is matched whole, as Flux's are")
		}
	})
	t.Run("no trusted root", func(t *testing.T) {
		none := &ocisig.Policy{Identities: p.Identities}
		_, err := none.Verify(t.Context(), bundled, auth)
		if err == nil || !strings.Contains(err.Error(), "FERRY_SIGSTORE_TRUSTED_ROOT") {
			t.Fatalf("got %v, want the trusted root named", err)
		}
	})
	t.Run("bad expression", func(t *testing.T) {
		bad := &ocisig.Policy{Identities: []ocisig.Identity{{Issuer: "(", Subject: ".*"}}, Root: tr}
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "matchOIDCIdentity[0]") {
			t.Fatalf("got %v", err)
		}
	})
}
