// Package cosigntest signs artifacts in a test registry: with keys, by
// the real cosign command (make cosign builds it), in both of cosign's
// formats; keyless, with sigstore-go's virtual Sigstore (a Fulcio CA and
// a Rekor log of the test's own), whose trusted root the test hands to
// ferry as a user hands it the public one.
package cosigntest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-ci/ferry/internal/testbin"
)

// Password encrypts the keys KeyPair makes.
const Password = "cosigntest-password"

// Cosign runs the cosign command against one registry.
type Cosign struct {
	t      testing.TB
	bin    string
	dir    string
	config string
}

// New finds cosign (skipped or, in CI, failed without it, naming make
// cosign) and logs it in to host with the credentials.
func New(t testing.TB, host, username, password string) *Cosign {
	t.Helper()
	c := &Cosign{t: t, bin: testbin.Tool(t, "cosign", "cosign"), dir: t.TempDir()}
	c.config = filepath.Join(c.dir, "docker")
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
	if err := os.MkdirAll(c.config, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.config, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// KeyPair makes a key pair under name and returns the private key's
// path and the public key (PEM).
func (c *Cosign) KeyPair(name string) (string, []byte) {
	c.t.Helper()
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	c.run(dir, "generate-key-pair")
	pub, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
	if err != nil {
		c.t.Fatal(err)
	}
	return filepath.Join(dir, "cosign.key"), pub
}

// Sign signs ref (repository@sha256:…) with key and no transparency log:
// a Sigstore bundle referrer, or with legacy the simple-signing image
// under the .sig tag.
func (c *Cosign) Sign(ref, key string, legacy bool) {
	c.t.Helper()
	c.run(c.dir, "sign", "--yes", "--key", key, "--use-signing-config=false", "--tlog-upload=false",
		fmt.Sprintf("--new-bundle-format=%t", !legacy), "--allow-insecure-registry", "--allow-http-registry", ref)
}

// Attest attaches a signed attestation (not a signature) to ref.
func (c *Cosign) Attest(ref, key string) {
	c.t.Helper()
	pred := filepath.Join(c.dir, "predicate.json")
	if err := os.WriteFile(pred, []byte(`{"scanned":true}`), 0o600); err != nil {
		c.t.Fatal(err)
	}
	c.run(c.dir, "attest", "--yes", "--key", key, "--use-signing-config=false", "--tlog-upload=false",
		"--type", "https://example.com/scan/v1", "--predicate", pred, "--allow-insecure-registry", "--allow-http-registry", ref)
}

func (c *Cosign) run(dir string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+Password, "DOCKER_CONFIG="+c.config, "COSIGN_YES=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Sigstore is a Sigstore of the test's own: a Fulcio CA that certifies
// any identity and a Rekor log, both trusted by TrustedRoot.
type Sigstore struct {
	t  testing.TB
	vs *ca.VirtualSigstore
	// TrustedRoot is the trusted_root.json of its CA and log (without CT
	// logs: its certificates carry no SCT).
	TrustedRoot []byte
}

// NewSigstore makes a Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	// The virtual log's ID is its hex spelling; a trusted root holds the
	// bytes it stands for, as the log entries do.
	logs := vs.RekorLogs()
	for id, l := range logs {
		if l.ID, err = hex.DecodeString(id); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil, nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{t: t, vs: vs, TrustedRoot: b}
}

// SignLegacy signs ref keylessly as the identity subject of issuer, in
// cosign's simple-signing format (cosign v2's keyless default): the .sig
// tag's layer with the certificate and Rekor entry in its annotations.
func (s *Sigstore) SignLegacy(ref name.Digest, subject, issuer string, opts ...remote.Option) {
	s.t.Helper()
	payload := SimplePayload(ref)
	e, err := s.vs.Sign(subject, issuer, payload)
	if err != nil {
		s.t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		s.t.Fatal(err)
	}
	cert, err := cryptoutils.MarshalCertificateToPEM(vc.Certificate())
	if err != nil {
		s.t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		s.t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil || len(entries) == 0 {
		s.t.Fatal("no tlog entry", err)
	}
	tle := s.entry(entries[0])
	rb := map[string]any{
		"SignedEntryTimestamp": tle.GetInclusionPromise().GetSignedEntryTimestamp(),
		"Payload": map[string]any{
			"body":           base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()),
			"integratedTime": tle.GetIntegratedTime(),
			"logIndex":       tle.GetLogIndex(),
			"logID":          hex.EncodeToString(tle.GetLogId().GetKeyId()),
		},
	}
	rbJSON, err := json.Marshal(rb)
	if err != nil {
		s.t.Fatal(err)
	}
	PushSimple(s.t, ref, payload, map[string]string{
		"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sc.Signature()),
		"dev.sigstore.cosign/certificate":    string(cert),
		"dev.sigstore.cosign/bundle":         string(rbJSON),
	}, opts...)
}

// SignBundle signs ref keylessly as the identity subject of issuer, as a
// Sigstore bundle (v0.3, DSSE over cosign's in-toto statement) attached
// as a referrer: cosign v3's format.
func (s *Sigstore) SignBundle(ref name.Digest, subject, issuer string, opts ...remote.Option) {
	s.t.Helper()
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		s.t.Fatal(err)
	}
	statement := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":%q,"digest":{%q:%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`,
		ref.Context().String(), h.Algorithm, h.Hex)
	e, err := s.vs.AttestAtTime(subject, issuer, []byte(statement), time.Now(), true)
	if err != nil {
		s.t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		s.t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		s.t.Fatal(err)
	}
	env := sc.(*bundle.Envelope).RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		s.t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil {
		s.t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sc.Signature()}},
		}},
	}
	for _, entry := range entries {
		pb.VerificationMaterial.TlogEntries = append(pb.VerificationMaterial.TlogEntries, s.entry(entry))
	}
	b, err := protojson.Marshal(pb)
	if err != nil {
		s.t.Fatal(err)
	}
	PushBundle(s.t, ref, b, opts...)
}

// entry is the log entry as a bundle holds it: the virtual log's entry
// with its kind and its signed entry timestamp, which sigstore-go's entry
// keeps to itself, signed again.
func (s *Sigstore) entry(e *tlog.Entry) *protorekor.TransparencyLogEntry {
	s.t.Helper()
	tle := proto.Clone(e.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(tle.CanonicalizedBody, &kind); err != nil {
		s.t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion}
	set, err := s.vs.RekorSignPayload(tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
		IntegratedTime: tle.IntegratedTime,
		LogIndex:       tle.LogIndex,
		LogID:          hex.EncodeToString(tle.LogId.KeyId),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

// SimplePayload is cosign's simple-signing payload for ref.
func SimplePayload(ref name.Digest) []byte {
	return fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		ref.Context().String(), ref.DigestStr())
}

// PushSimple pushes a simple-signing signature image for ref, one layer
// holding payload with the annotations.
func PushSimple(t testing.TB, ref name.Digest, payload []byte, annotations map[string]string, opts ...remote.Option) {
	t.Helper()
	layer := static.NewLayer(payload, "application/vnd.dev.cosign.simplesigning.v1+json")
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: layer, Annotations: annotations})
	if err != nil {
		t.Fatal(err)
	}
	tag := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	if err := remote.Write(tag, img, opts...); err != nil {
		t.Fatal(err)
	}
}

// PushBundle attaches a Sigstore bundle to ref as a referrer, as cosign
// v3 does (the registry's referrers tag when it has no referrers API).
func PushBundle(t testing.TB, ref name.Digest, b []byte, opts ...remote.Option) {
	t.Helper()
	const typ = "application/vnd.dev.sigstore.bundle.v0.3+json"
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	config := static.NewLayer([]byte("{}"), "application/vnd.oci.empty.v1+json")
	layer := static.NewLayer(b, typ)
	var descs []v1.Descriptor
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(ref.Context(), l, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ := l.Digest()
		size, _ := l.Size()
		mt, _ := l.MediaType()
		descs = append(descs, v1.Descriptor{MediaType: mt, Digest: d, Size: size})
	}
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     types.OCIManifestSchema1,
		"artifactType":  typ,
		"config":        descs[0],
		"layers":        []v1.Descriptor{descs[1]},
		"subject":       v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size},
		"annotations":   map[string]string{"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": "https://sigstore.dev/cosign/sign/v1"},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(ref.Context().Digest(d.String()), rawManifest(raw), opts...); err != nil {
		t.Fatal(err)
	}
}

// rawManifest is an OCI image manifest as bytes.
type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error)        { return r, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// Auth is the remote option of basic credentials.
func Auth(username, password string) remote.Option {
	return remote.WithAuth(&authn.Basic{Username: username, Password: password})
}
