package ocisig

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
)

var timeZero time.Time

// rekorBundle is the dev.sigstore.cosign/bundle annotation: Rekor's
// signed entry timestamp over the entry cosign uploaded.
type rekorBundle struct {
	SignedEntryTimestamp []byte
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	}
}

// simpleBundle is a keyless simple-signing signature as the Sigstore
// bundle (v0.1: an inclusion promise, no proof) it amounts to, so that
// sigstore-go checks its certificate chain, identity and log entry.
func simpleBundle(s found) (*protobundle.Bundle, error) {
	if len(s.cert) == 0 {
		return nil, errors.New("signed with a key, not keyless (no certificate)")
	}
	if len(s.rekor) == 0 {
		return nil, errors.New("no transparency log entry (dev.sigstore.cosign/bundle) beside the certificate")
	}
	certs := pemBlocks(s.cert)
	if len(certs) == 0 {
		return nil, errors.New("the certificate annotation holds no PEM certificate")
	}
	certs = append(certs, pemBlocks(s.chain)...)
	var rb rekorBundle
	if err := json.Unmarshal(s.rekor, &rb); err != nil {
		return nil, fmt.Errorf("the transparency log entry is not JSON: %w", err)
	}
	body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
	if err != nil {
		return nil, errors.New("the transparency log entry's body is not base64")
	}
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return nil, fmt.Errorf("the transparency log entry's body is not JSON: %w", err)
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil {
		return nil, errors.New("the transparency log entry's logID is not hex")
	}
	chain := &protocommon.X509CertificateChain{}
	for _, c := range certs {
		chain.Certificates = append(chain.Certificates, &protocommon.X509Certificate{RawBytes: c})
	}
	digest := sha256.Sum256(s.payload)
	return &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: chain},
			TlogEntries: []*protorekor.TransparencyLogEntry{{
				LogIndex:          rb.Payload.LogIndex,
				LogId:             &protocommon.LogId{KeyId: logID},
				KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
				IntegratedTime:    rb.Payload.IntegratedTime,
				InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
				CanonicalizedBody: body,
			}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     s.sig,
		}},
	}, nil
}

// pemBlocks are the DER bytes of the certificates in b.
func pemBlocks(b []byte) [][]byte {
	var out [][]byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type == "CERTIFICATE" {
			out = append(out, blk.Bytes)
		}
	}
}
