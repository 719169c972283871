// Package verify checks that a revision was signed by a trusted key
// before it reaches a cluster: the OpenPGP or SSH signatures of a commit,
// of the tags that point at it, and of every commit since the last
// applied revision, as git and Flux's GitRepository spec.verify check
// them. The keys always come from the caller, never from the revision.
package verify

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Mode is what must be signed, as in Flux's GitRepository spec.verify.
type Mode string

const (
	// HEAD: the commit applied.
	HEAD Mode = "HEAD"
	// Tag: a tag that points at the commit applied.
	Tag Mode = "Tag"
	// TagAndHEAD: both.
	TagAndHEAD Mode = "TagAndHEAD"
)

// ParseMode reads a mode, case as Flux spells it ("head" is taken too).
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{HEAD, Tag, TagAndHEAD} {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("verify mode %q: want HEAD, Tag or TagAndHEAD", s)
}

// Signed is an object whose signature verified: which, and by whom.
type Signed struct {
	// Object is "commit a1b2c3d" or "tag v1.2.0".
	Object string
	// Author is the commit's author or the tag's tagger.
	Author string
	// Signer is the trusted key that signed: an OpenPGP user ID and key
	// ID, or an SSH key's principals and fingerprint.
	Signer string
}

// Error is an object that does not verify: which, its author, the key
// that signed it (if any) and why it is refused.
type Error struct {
	Object string `json:"object"`
	Author string `json:"author"`
	Signer string `json:"signer,omitempty"`
	Reason string `json:"reason"`
}

func (e *Error) Error() string {
	by := ""
	if e.Signer != "" {
		by = ", signed by " + e.Signer
	}
	return fmt.Sprintf("%s (author %s%s): %s", e.Object, e.Author, by, e.Reason)
}

// The reasons an object is refused.
const (
	ReasonUnsigned     = "unsigned"
	ReasonUnknownKey   = "signed by a key that is not trusted"
	ReasonBadSignature = "the signature does not match the content (changed after signing?)"
	ReasonExpiredKey   = "signed by an expired key"
	ReasonRevokedKey   = "signed by a revoked key"
)

// Commit verifies c's signature with keys.
func Commit(c *object.Commit, keys Keys) (Signed, error) {
	what := "commit " + short(c.Hash)
	author := c.Author.Name + " <" + c.Author.Email + ">"
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		return Signed{}, fmt.Errorf("%s: %w", what, err)
	}
	return check(what, author, c.PGPSignature, payload, keys)
}

// Tag verifies t's signature with keys.
func TagObject(t *object.Tag, keys Keys) (Signed, error) {
	what := "tag " + t.Name
	author := t.Tagger.Name + " <" + t.Tagger.Email + ">"
	payload := &plumbing.MemoryObject{}
	if err := t.EncodeWithoutSignature(payload); err != nil {
		return Signed{}, fmt.Errorf("%s: %w", what, err)
	}
	return check(what, author, t.PGPSignature, payload, keys)
}

func check(what, author, signature string, payload *plumbing.MemoryObject, keys Keys) (Signed, error) {
	refuse := func(signer, reason string) (Signed, error) {
		return Signed{}, &Error{Object: what, Author: author, Signer: signer, Reason: reason}
	}
	r, err := payload.Reader()
	if err != nil {
		return Signed{}, err
	}
	defer r.Close()
	var content bytes.Buffer
	if _, err := content.ReadFrom(r); err != nil {
		return Signed{}, err
	}
	sig := strings.TrimSpace(signature)
	switch {
	case sig == "":
		return refuse("", ReasonUnsigned)
	case strings.HasPrefix(sig, "-----BEGIN SSH SIGNATURE-----"):
		signer, reason := checkSSH(content.Bytes(), sig, keys)
		if reason != "" {
			return refuse(signer, reason)
		}
		return Signed{Object: what, Author: author, Signer: signer}, nil
	case strings.HasPrefix(sig, "-----BEGIN PGP SIGNATURE-----"):
		if strings.Count(sig, "-----BEGIN PGP SIGNATURE-----") > 1 {
			return refuse("", "more than one signature")
		}
		signer, reason := checkPGP(content.Bytes(), sig, keys)
		if reason != "" {
			return refuse(signer, reason)
		}
		return Signed{Object: what, Author: author, Signer: signer}, nil
	}
	return refuse("", "signed in a format ferry does not verify (only OpenPGP and SSH)")
}

// checkPGP verifies an armored OpenPGP signature: the signer, or why not.
func checkPGP(content []byte, sig string, keys Keys) (signer, reason string) {
	issuer := pgpIssuer(sig)
	entity, err := openpgp.CheckArmoredDetachedSignature(keys.pgp, bytes.NewReader(content), strings.NewReader(sig), nil)
	switch {
	case err == nil:
		return pgpName(entity, issuer), ""
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return issuer, ReasonUnknownKey
	case errors.Is(err, pgperrors.ErrKeyExpired), errors.Is(err, pgperrors.ErrSignatureExpired):
		return pgpName(entity, issuer), ReasonExpiredKey
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return pgpName(entity, issuer), ReasonRevokedKey
	}
	var se pgperrors.SignatureError
	if errors.As(err, &se) {
		return pgpName(entity, issuer), ReasonBadSignature
	}
	return pgpName(entity, issuer), "the OpenPGP signature: " + err.Error()
}

// pgpIssuer is the key ID an armored signature names, "" if unreadable.
func pgpIssuer(sig string) string {
	block, err := armor.Decode(strings.NewReader(sig))
	if err != nil {
		return ""
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		return ""
	}
	s, ok := p.(*packet.Signature)
	if !ok || s.IssuerKeyId == nil {
		return ""
	}
	return fmt.Sprintf("OpenPGP key %016X", *s.IssuerKeyId)
}

func pgpName(e *openpgp.Entity, issuer string) string {
	if e == nil {
		return issuer
	}
	for name := range e.Identities {
		return name + " (" + issuer + ")"
	}
	return issuer
}

// checkSSH verifies an armored SSH signature in git's namespace.
func checkSSH(content []byte, armored string, keys Keys) (signer, reason string) {
	sig, err := sshsig.Unarmor([]byte(armored))
	if err != nil {
		return "", "the SSH signature cannot be read: " + err.Error()
	}
	fp := "SSH key " + ssh.FingerprintSHA256(sig.PublicKey)
	for _, k := range keys.ssh {
		if !bytes.Equal(k.key.Marshal(), sig.PublicKey.Marshal()) {
			continue
		}
		if len(k.principals) > 0 {
			fp = strings.Join(k.principals, ",") + " (" + fp + ")"
		}
		if err := sshsig.Verify(bytes.NewReader(content), sig, k.key, sig.HashAlgorithm, "git"); err != nil {
			return fp, ReasonBadSignature
		}
		return fp, ""
	}
	return fp, ReasonUnknownKey
}

func short(h plumbing.Hash) string { return h.String()[:7] }
