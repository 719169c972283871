package ocisig

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Where cosign keeps a signature.
const (
	// signatureAnnotation holds a simple-signing layer's signature.
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// certificateAnnotation, chainAnnotation and rekorAnnotation hold a
	// keyless simple-signing signature's certificate, its chain and the
	// Rekor entry's signed timestamp.
	certificateAnnotation = "dev.sigstore.cosign/certificate"
	chainAnnotation       = "dev.sigstore.cosign/chain"
	rekorAnnotation       = "dev.sigstore.cosign/bundle"
	// bundleType starts the artifact type of a Sigstore bundle referrer
	// (application/vnd.dev.sigstore.bundle.v0.3+json).
	bundleType = "application/vnd.dev.sigstore.bundle"
	// signPredicate is the in-toto predicate of cosign's image
	// signatures in a bundle; an attestation has another.
	signPredicate = "https://sigstore.dev/cosign/sign/v1"
)

// Bounds on what an artifact's signatures may make ferry read.
const (
	maxSignatures = 16
	maxBlob       = 1 << 20
)

// Verified says which signature satisfied the policy.
type Verified struct {
	// By is the key's name, or the keyless signer's subject and issuer.
	By string
	// Where is the signature: the .sig tag or the bundle referrer.
	Where string
}

// Error is an artifact whose signatures do not satisfy the policy.
type Error struct {
	// Owner is Policy.Owner.
	Owner string
	// Artifact is repository@digest.
	Artifact string
	// Policy is Policy.Describe.
	Policy string
	// Reasons say why each signature found was refused; none when the
	// artifact has no signature at all.
	Reasons []string
}

func (e *Error) Error() string {
	prefix := ""
	if e.Owner != "" {
		prefix = e.Owner + ": "
	}
	if len(e.Reasons) == 0 {
		return fmt.Sprintf("%s%s has no cosign signature (it must be signed by %s)", prefix, e.Artifact, e.Policy)
	}
	return fmt.Sprintf("%s%s is not signed by %s: %s", prefix, e.Artifact, e.Policy, strings.Join(e.Reasons, "; "))
}

// found is one signature found for an artifact.
type found struct {
	where string
	// A simple-signing signature: the payload, its signature and, when
	// keyless, the certificate, chain and Rekor entry (PEM and JSON as
	// cosign writes them).
	payload, sig, cert, chain, rekor []byte
	// A Sigstore bundle's JSON.
	bundle []byte
}

// Verify checks that the artifact d has a signature that satisfies p,
// reading its signatures with opts (the same registry access the
// artifact was read with). A registry that cannot be read is an error
// of its own, not an *Error.
func (p *Policy) Verify(ctx context.Context, d name.Digest, opts ...remote.Option) (Verified, error) {
	if err := p.Check(); err != nil {
		return Verified{}, err
	}
	opts = append(opts, remote.WithContext(ctx))
	want, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return Verified{}, err
	}
	sigs, err := signatures(d, want, opts)
	if err != nil {
		return Verified{}, err
	}
	fail := &Error{Owner: p.Owner, Artifact: d.String(), Policy: p.Describe()}
	for _, s := range sigs {
		by, err := p.check(s, want)
		if err == nil {
			return Verified{By: by, Where: s.where}, nil
		}
		fail.Reasons = append(fail.Reasons, s.where+": "+err.Error())
	}
	return Verified{}, fail
}

// signatures reads the artifact's simple-signing signatures and its
// Sigstore bundle referrers, at most maxSignatures in all.
func signatures(d name.Digest, want v1.Hash, opts []remote.Option) ([]found, error) {
	repo := d.Context()
	var sigs []found
	tag := repo.Tag(want.Algorithm + "-" + want.Hex + ".sig")
	img, err := remote.Image(tag, opts...)
	switch {
	case notFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the signatures of %s (%s): %w", d, tag.TagStr(), err)
	default:
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", tag, err)
		}
		for i, l := range m.Layers {
			enc, ok := l.Annotations[signatureAnnotation]
			if !ok || len(sigs) == maxSignatures {
				continue
			}
			s := found{where: fmt.Sprintf("%s layer %d", tag.TagStr(), i)}
			if s.sig, err = base64.StdEncoding.DecodeString(enc); err != nil {
				return nil, fmt.Errorf("%s: the signature is not base64", s.where)
			}
			if s.payload, err = blob(repo, l, opts); err != nil {
				return nil, fmt.Errorf("%s: %w", s.where, err)
			}
			s.cert, s.chain = []byte(l.Annotations[certificateAnnotation]), []byte(l.Annotations[chainAnnotation])
			s.rekor = []byte(l.Annotations[rekorAnnotation])
			sigs = append(sigs, s)
		}
	}
	idx, err := remote.Referrers(d, opts...)
	if err != nil {
		if notFound(err) {
			return sigs, nil
		}
		return nil, fmt.Errorf("reading the referrers of %s: %w", d, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the referrers of %s: %w", d, err)
	}
	for _, desc := range im.Manifests {
		if !strings.HasPrefix(desc.ArtifactType, bundleType) || len(sigs) == maxSignatures {
			continue
		}
		s := found{where: "bundle " + desc.Digest.String()}
		img, err := remote.Image(repo.Digest(desc.Digest.String()), opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.where, err)
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.where, err)
		}
		for _, l := range m.Layers {
			if strings.HasPrefix(string(l.MediaType), bundleType) {
				if s.bundle, err = blob(repo, l, opts); err != nil {
					return nil, fmt.Errorf("%s: %w", s.where, err)
				}
				break
			}
		}
		if s.bundle != nil {
			sigs = append(sigs, s)
		}
	}
	return sigs, nil
}

// blob reads the layer l of repo, at most maxBlob bytes, and checks its
// digest.
func blob(repo name.Repository, l v1.Descriptor, opts []remote.Option) ([]byte, error) {
	if l.Size > maxBlob {
		return nil, fmt.Errorf("the layer is %d bytes, more than %d", l.Size, maxBlob)
	}
	layer, err := remote.Layer(repo.Digest(l.Digest.String()), opts...)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxBlob+1))
	if err != nil {
		return nil, err
	}
	got, _, err := v1.SHA256(bytes.NewReader(b))
	if err != nil || got != l.Digest {
		return nil, fmt.Errorf("layer %s does not match its digest", l.Digest)
	}
	return b, nil
}

func notFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// check verifies one signature of the artifact want against p and
// returns who signed it.
func (p *Policy) check(s found, want v1.Hash) (string, error) {
	if s.bundle == nil && len(p.Keys) > 0 {
		return p.simpleWithKey(s, want)
	}
	var b bundle.Bundle
	var artifact verify.ArtifactPolicyOption
	if s.bundle != nil {
		if err := b.UnmarshalJSON(s.bundle); err != nil {
			return "", fmt.Errorf("not a Sigstore bundle: %w", err)
		}
		digest, err := hex.DecodeString(want.Hex)
		if err != nil {
			return "", err
		}
		artifact = verify.WithArtifactDigest(want.Algorithm, digest)
	} else {
		pb, err := simpleBundle(s)
		if err != nil {
			return "", err
		}
		b.Bundle = pb
		artifact = verify.WithArtifact(bytes.NewReader(s.payload))
	}
	if len(p.Keys) > 0 {
		var reasons []string
		for _, k := range p.Keys {
			v, err := verify.NewVerifier(keyMaterial(k), verify.WithNoObserverTimestamps())
			if err != nil {
				return "", err
			}
			res, err := v.Verify(&b, verify.NewPolicy(artifact, verify.WithKey()))
			if err != nil {
				reasons = append(reasons, "not by "+k.Name+" ("+short(err)+")")
				continue
			}
			if err := signedStatement(res); err != nil {
				return "", err
			}
			return k.Name, nil
		}
		return "", errors.New(strings.Join(reasons, ", "))
	}
	vopts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	if len(p.Root.CTLogs()) > 0 {
		vopts = append(vopts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(p.Root, vopts...)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.Root.Name, err)
	}
	popts := []verify.PolicyOption{}
	for _, id := range p.Identities {
		ci, err := verify.NewShortCertificateIdentity("", anchored(id.Issuer), "", anchored(id.Subject))
		if err != nil {
			return "", err
		}
		popts = append(popts, verify.WithCertificateIdentity(ci))
	}
	res, err := v.Verify(&b, verify.NewPolicy(artifact, popts...))
	if err != nil {
		return "", errors.New(short(err))
	}
	if s.bundle != nil {
		if err := signedStatement(res); err != nil {
			return "", err
		}
	} else if err := payloadNames(s.payload, want); err != nil {
		return "", err
	}
	signer := "a keyless signer"
	if c := res.Signature.Certificate; c != nil {
		signer = fmt.Sprintf("%s (issuer %s)", c.SubjectAlternativeName, c.Issuer)
	}
	return signer, nil
}

// anchored makes a matchOIDCIdentity expression match the whole value,
// as Flux's does.
func anchored(re string) string {
	if !strings.HasPrefix(re, "^") {
		re = "^" + re
	}
	if !strings.HasSuffix(re, "$") {
		re += "$"
	}
	return re
}

// short is the first line of a sigstore-go error.
func short(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// keyMaterial trusts only k, whatever key hint a bundle gives.
func keyMaterial(k Key) root.TrustedMaterial {
	key := root.NewExpiringKey(k.verifier, timeZero, timeZero)
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
}

// signedStatement checks that a verified bundle is a cosign signature of
// the image, not an attestation (another predicate over the same
// subject).
func signedStatement(res *verify.VerificationResult) error {
	if res.Statement == nil {
		return errors.New("the bundle signs no in-toto statement naming the artifact")
	}
	if res.Statement.PredicateType != signPredicate {
		return fmt.Errorf("the bundle is an attestation (%s), not a signature", res.Statement.PredicateType)
	}
	return nil
}

// simpleWithKey checks a simple-signing signature against p's keys.
func (p *Policy) simpleWithKey(s found, want v1.Hash) (string, error) {
	for _, k := range p.Keys {
		if k.verifier.VerifySignature(bytes.NewReader(s.sig), bytes.NewReader(s.payload)) == nil {
			if err := payloadNames(s.payload, want); err != nil {
				return "", err
			}
			return k.Name, nil
		}
	}
	return "", errors.New("signed by none of the trusted keys, or not over this payload")
}

// payloadNames checks that a simple-signing payload names want as the
// signed manifest.
func payloadNames(payload []byte, want v1.Hash) error {
	var p struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("the signed payload is not cosign's simple signing JSON: %w", err)
	}
	if p.Critical.Image.Digest != want.String() {
		return fmt.Errorf("the signature is of %s, not of this artifact", p.Critical.Image.Digest)
	}
	return nil
}
