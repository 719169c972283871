package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/ferry-ci/ferry/internal/verify"
	"github.com/ferry-ci/ferry/internal/verify/verifytest"
)

func keys(t *testing.T, signers ...verifytest.Signer) verify.Keys {
	t.Helper()
	var all verify.Keys
	for _, s := range signers {
		k, err := verify.ParseKeys("trusted-keys", []byte(s.Public))
		if err != nil {
			t.Fatal(err)
		}
		all.Add(k)
	}
	return all
}

func open(t *testing.T, r *verifytest.Repo) *git.Repository {
	t.Helper()
	repo, err := git.PlainOpen(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// refused checks that err is a verify.Error for object with reason.
func refused(t *testing.T, err error, object, reason string) {
	t.Helper()
	var ve *verify.Error
	if !errors.As(err, &ve) {
		t.Fatalf("want a refusal of %s (%s), got %v", object, reason, err)
	}
	if !strings.HasPrefix(ve.Object, object) || ve.Reason != reason {
		t.Errorf("refused %q for %q, want %s for %q", ve.Object, ve.Reason, object, reason)
	}
	if ve.Author == "" {
		t.Error("the refusal names no author")
	}
}

// Commits signed by real git with real gpg and ssh-keygen keys: those of
// trusted keys verify, naming the signer; unsigned, untrusted, rewritten
// and expired are refused, naming the commit and why.
func TestCommits(t *testing.T) {
	sshKey := verifytest.SSHKey(t, "alice@example.com")
	pgpKey := verifytest.GPGKey(t, "Alice", "alice@example.com", false)
	strangerSSH := verifytest.SSHKey(t, "mallory@example.com")
	strangerPGP := verifytest.GPGKey(t, "Mallory", "mallory@example.com", false)
	expired := verifytest.GPGKey(t, "Old", "old@example.com", true)
	trusted := keys(t, sshKey, pgpKey, expired)
	allowed, err := verify.ParseKeys("allowed_signers", []byte("# the team\n"+sshKey.AllowedSigners+"\n"))
	if err != nil {
		t.Fatal(err)
	}

	r := verifytest.NewRepo(t)
	bySSH := r.Commit(&sshKey, "a.yaml", "a: 1\n")
	byPGP := r.Commit(&pgpKey, "b.yaml", "b: 1\n")
	unsigned := r.Commit(nil, "c.yaml", "c: 1\n")
	byStrangerSSH := r.Commit(&strangerSSH, "d.yaml", "d: 1\n")
	byStrangerPGP := r.Commit(&strangerPGP, "e.yaml", "e: 1\n")
	byExpired := r.Commit(&expired, "f.yaml", "f: 1\n")
	rewrittenSSH := r.Rewrite(bySSH, "not what was signed")
	rewrittenPGP := r.Rewrite(byPGP, "not what was signed")
	repo := open(t, r)

	check := func(rev string, k verify.Keys) (verify.Signed, error) {
		c, err := repo.CommitObject(plumbing.NewHash(rev))
		if err != nil {
			t.Fatal(err)
		}
		return verify.Commit(c, k)
	}
	for _, c := range []struct {
		name, rev, signer string
		keys              verify.Keys
	}{
		{name: "ssh key", rev: bySSH, keys: trusted, signer: "SSH key SHA256:"},
		{name: "ssh key in allowed_signers", rev: bySSH, keys: allowed, signer: "alice@example.com (SSH key SHA256:"},
		{name: "openpgp key", rev: byPGP, keys: trusted, signer: "Alice <alice@example.com> (OpenPGP key "},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := check(c.rev, c.keys)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(s.Signer, c.signer) || s.Object != "commit "+c.rev[:7] || s.Author != "Alice <alice@example.com>" {
				t.Errorf("got %+v, want signer %q", s, c.signer)
			}
		})
	}
	for _, c := range []struct {
		name, rev, reason, signer string
	}{
		{name: "unsigned", rev: unsigned, reason: verify.ReasonUnsigned},
		{name: "untrusted ssh key", rev: byStrangerSSH, reason: verify.ReasonUnknownKey, signer: "SSH key SHA256:"},
		{name: "untrusted openpgp key", rev: byStrangerPGP, reason: verify.ReasonUnknownKey, signer: "OpenPGP key "},
		{name: "expired openpgp key", rev: byExpired, reason: verify.ReasonExpiredKey, signer: "Old <old@example.com>"},
		{name: "ssh signature over other content", rev: rewrittenSSH, reason: verify.ReasonBadSignature},
		{name: "openpgp signature over other content", rev: rewrittenPGP, reason: verify.ReasonBadSignature},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := check(c.rev, trusted)
			refused(t, err, "commit "+c.rev[:7], c.reason)
			t.Log(err)
			var ve *verify.Error
			if errors.As(err, &ve) && !strings.HasPrefix(ve.Signer, c.signer) {
				t.Errorf("signer %q, want %q…", ve.Signer, c.signer)
			}
		})
	}
}

// Tag mode: a signed tag at the commit verifies; an unsigned or
// lightweight one, or none, is refused; TagAndHEAD needs both.
func TestTags(t *testing.T) {
	sshKey := verifytest.SSHKey(t, "alice@example.com")
	trusted := keys(t, sshKey)
	r := verifytest.NewRepo(t)
	signedHead := r.Commit(&sshKey, "a.yaml", "a: 1\n")
	r.Tag(&sshKey, "v1.0.0")
	unsignedTag := r.Commit(&sshKey, "b.yaml", "b: 1\n")
	r.Tag(nil, "v1.1.0")
	lightweight := r.Commit(&sshKey, "c.yaml", "c: 1\n")
	r.Git(nil, "tag", "v1.2.0")
	untagged := r.Commit(&sshKey, "d.yaml", "d: 1\n")
	unsignedHead := r.Commit(nil, "e.yaml", "e: 1\n")
	r.Tag(&sshKey, "v2.0.0")
	repo := open(t, r)

	rev := func(s string) plumbing.Hash { return plumbing.NewHash(s) }
	got, err := verify.Revision(repo, rev(signedHead), verify.Options{Mode: verify.TagAndHEAD, Keys: trusted})
	if err != nil || len(got) != 2 || got[1].Object != "tag v1.0.0" {
		t.Errorf("signed tag and commit: %+v, %v", got, err)
	}
	_, err = verify.Revision(repo, rev(unsignedTag), verify.Options{Mode: verify.Tag, Keys: trusted})
	refused(t, err, "tag v1.1.0", verify.ReasonUnsigned)
	_, err = verify.Revision(repo, rev(lightweight), verify.Options{Mode: verify.Tag, Keys: trusted})
	if err == nil || !strings.Contains(err.Error(), "tag v1.2.0") || !strings.Contains(err.Error(), "lightweight") {
		t.Errorf("lightweight tag: %v", err)
	}
	_, err = verify.Revision(repo, rev(untagged), verify.Options{Mode: verify.Tag, Keys: trusted})
	if err == nil || !strings.Contains(err.Error(), "no tag points at it") {
		t.Errorf("untagged: %v", err)
	}
	if _, err := verify.Revision(repo, rev(unsignedHead), verify.Options{Mode: verify.Tag, Keys: trusted}); err != nil {
		t.Errorf("Tag mode takes a signed tag on an unsigned commit: %v", err)
	}
	_, err = verify.Revision(repo, rev(unsignedHead), verify.Options{Mode: verify.TagAndHEAD, Keys: trusted})
	refused(t, err, "commit "+unsignedHead[:7], verify.ReasonUnsigned)
}

// With the last applied revision given, an unsigned commit under a signed
// merge is refused, naming it; without, the merge alone verifies.
func TestRange(t *testing.T) {
	sshKey := verifytest.SSHKey(t, "alice@example.com")
	trusted := keys(t, sshKey)
	r := verifytest.NewRepo(t)
	applied := r.Commit(&sshKey, "a.yaml", "a: 1\n")
	r.Git(nil, "checkout", "-q", "-b", "topic")
	sneaky := r.Commit(nil, "b.yaml", "b: sneaky\n")
	signedToo := r.Commit(&sshKey, "c.yaml", "c: 1\n")
	r.Git(nil, "checkout", "-q", "main")
	r.Commit(&sshKey, "d.yaml", "d: 1\n")
	r.Git(&sshKey, "merge", "-q", "--no-ff", "-S", "-m", "merge topic", "topic")
	merge := r.Git(nil, "rev-parse", "HEAD")
	repo := open(t, r)

	if _, err := verify.Revision(repo, plumbing.NewHash(merge), verify.Options{Mode: verify.HEAD, Keys: trusted}); err != nil {
		t.Fatalf("the signed merge alone: %v", err)
	}
	_, err := verify.Revision(repo, plumbing.NewHash(merge), verify.Options{Mode: verify.HEAD, Keys: trusted, Since: plumbing.NewHash(applied)})
	refused(t, err, "commit "+sneaky[:7], verify.ReasonUnsigned)
	got, err := verify.Revision(repo, plumbing.NewHash(signedToo), verify.Options{Mode: verify.HEAD, Keys: trusted, Since: plumbing.NewHash(sneaky)})
	if err != nil || len(got) != 1 {
		t.Errorf("from the unsigned commit on, only signed ones: %+v, %v", got, err)
	}
	if got, err := verify.Revision(repo, plumbing.NewHash(applied), verify.Options{Keys: trusted, Since: plumbing.NewHash(applied)}); err != nil || len(got) != 1 {
		t.Errorf("the applied revision again: %+v, %v", got, err)
	}
}

// Keys that cannot be read are errors naming where they came from.
func TestParseKeys(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "trusted-keys: no OpenPGP or SSH public key",
		"# only a comment\n":       "trusted-keys: no OpenPGP or SSH public key",
		"ssh-ed25519 AAAAnope x\n": "trusted-keys: line 1: not an SSH public key",
		"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n": "trusted-keys: an OpenPGP key block without its END line",
	} {
		_, err := verify.ParseKeys("trusted-keys", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if _, err := verify.Revision(nil, plumbing.ZeroHash, verify.Options{}); err == nil || !strings.Contains(err.Error(), "no trusted keys") {
		t.Errorf("no keys: %v", err)
	}
}

// FuzzParseKeys: any input is read as keys or refused with an error
// naming the source, never a panic.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte("alice@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOfxHh8V2xo3vY9Jg9eRkUSSq3nWxXUhbqHXaP+5MAv1 alice\n"))
	f.Add([]byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ\n-----END PGP PUBLIC KEY BLOCK-----\n"))
	f.Add([]byte("# comment\n\nssh-rsa AAAA\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := verify.ParseKeys("fuzz", data)
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz") {
			t.Errorf("error does not name the source: %v", err)
		}
		if err == nil && k.Empty() {
			t.Error("no error and no keys")
		}
	})
}

// A pull request's summary from inside the repository (--repo .), and
// none when no key is known and none is required.
func TestPullRequestFromTheWorkTree(t *testing.T) {
	alice := verifytest.SSHKey(t, "alice@example.com")
	r := verifytest.NewRepo(t)
	base := r.Commit(&alice, "a.yaml", "a: 1\n")
	head := r.Commit(nil, "b.yaml", "b: 1\n")
	t.Chdir(r.Dir)
	got, err := verify.PullRequest(context.Background(), ".", base, head, verify.Sources{}, false)
	if err != nil || got != nil {
		t.Errorf("without keys: %+v, %v; want nothing", got, err)
	}
	got, err = verify.PullRequest(context.Background(), ".", base, head, verify.Sources{TrustedKeys: alice.Public}, false)
	if err != nil || got == nil || got.Line() != "1 commit, 0 signed by trusted keys, 1 unsigned: "+head[:7] {
		t.Errorf("with a key: %+v, %v", got, err)
	}
}
