// Package verifytest makes signing keys with the real gpg and ssh-keygen
// and commits and tags signed by the real git, for the tests of commit
// verification.
package verifytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Signer is a key git can sign with.
type Signer struct {
	// Public is the public key as a trusted-keys input holds it: an
	// armored OpenPGP block, or an authorized_keys line.
	Public string
	// AllowedSigners is the SSH key as an allowed_signers line ("" for
	// OpenPGP).
	AllowedSigners string
	config         []string // git -c settings that sign with the key
	env            []string
}

// SSHKey makes an ed25519 key with ssh-keygen, for email.
func SSHKey(t *testing.T, email string) Signer {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	run(t, "", nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", email, "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(pub))
	return Signer{Public: line, AllowedSigners: email + " " + line,
		config: []string{"gpg.format=ssh", "user.signingkey=" + key + ".pub"}}
}

// GPGKey makes an OpenPGP key with gpg for "name <email>". An expired
// key was made three days ago to live one day (gpg's faked system time),
// and signs at that time too, as it could have then.
func GPGKey(t *testing.T, name, email string, expired bool) Signer {
	t.Helper()
	// gpg-agent's socket path must be short: not under t.TempDir().
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	gpg := []string{"gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}
	expire := "1y"
	wrapper := filepath.Join(home, "gpg-sign")
	script := "#!/bin/sh\nexec gpg \"$@\"\n"
	if expired {
		faked := time.Now().Add(-72*time.Hour).UTC().Format("20060102T150405") + "!"
		gpg = append(gpg, "--faked-system-time", faked)
		expire = "1d"
		script = "#!/bin/sh\nexec gpg --faked-system-time " + faked + " \"$@\"\n"
	}
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "", env, gpg[0], append(gpg[1:], "--quick-gen-key", name+" <"+email+">", "ed25519", "sign", expire)...)
	pub := run(t, "", env, "gpg", "--batch", "--armor", "--export", email)
	return Signer{Public: pub, config: []string{"gpg.program=" + wrapper, "user.signingkey=" + email}, env: env}
}

// Repo is a git repository made with the real git.
type Repo struct {
	t   *testing.T
	Dir string
}

// NewRepo makes an empty repository on branch main.
func NewRepo(t *testing.T) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	r.Git(nil, "init", "-q", "-b", "main")
	return r
}

// Git runs git in the repository as signer (nil: unsigned) and returns
// its trimmed output.
func (r *Repo) Git(signer *Signer, args ...string) string {
	r.t.Helper()
	base := []string{"-c", "user.name=Alice", "-c", "user.email=alice@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}
	var env []string
	if signer != nil {
		for _, c := range signer.config {
			base = append(base, "-c", c)
		}
		env = signer.env
	}
	return run(r.t, r.Dir, env, "git", append(base, args...)...)
}

// Commit writes file with content and commits it, signed by signer (nil:
// unsigned), and returns the commit's hash.
func (r *Repo) Commit(signer *Signer, file, content string) string {
	r.t.Helper()
	p := filepath.Join(r.Dir, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.Git(nil, "add", "-A")
	args := []string{"commit", "-q", "-m", "change " + file}
	if signer != nil {
		args = append(args, "-S")
	}
	r.Git(signer, args...)
	return r.Git(nil, "rev-parse", "HEAD")
}

// Tag tags HEAD with an annotated tag, signed by signer (nil: unsigned).
func (r *Repo) Tag(signer *Signer, name string) {
	r.t.Helper()
	args := []string{"tag", "-a", "-m", "release " + name, name}
	if signer != nil {
		args = []string{"tag", "-s", "-m", "release " + name, name}
	}
	r.Git(signer, args...)
}

// Rewrite makes a commit like rev, signature kept, with another message:
// content the signature does not cover. It returns the new hash.
func (r *Repo) Rewrite(rev, message string) string {
	r.t.Helper()
	raw := r.Git(nil, "cat-file", "commit", rev)
	head, _, ok := strings.Cut(raw, "\n\n")
	if !ok {
		r.t.Fatalf("commit %s has no message", rev)
	}
	file := filepath.Join(r.t.TempDir(), "commit")
	if err := os.WriteFile(file, []byte(head+"\n\n"+message+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return r.Git(nil, "hash-object", "-w", "-t", "commit", file)
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
