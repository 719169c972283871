package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Cosign signs with the cosign command: with a key (COSIGN_KEY, its
// password in COSIGN_PASSWORD, which cosign reads itself), writing no
// transparency-log entry so that a signature can be made and verified
// offline; or keyless, with the CI job's OIDC identity (Fulcio and Rekor),
// as the hosted release workflow does.
type Cosign struct {
	// Path is the cosign command.
	Path string
	// Key is a key file's path or "env://VAR" (the PEM in a variable).
	// Empty with Keyless.
	Key string
	// Keyless signs with the job's identity instead of a key.
	Keyless bool
	// AllowHTTP lets cosign speak plain HTTP to the registry (a registry
	// on the loopback address, or --insecure-registry).
	AllowHTTP bool
}

// offline are the flags of a signature with a key and no transparency
// log: cosign v3 refuses --tlog-upload=false with its public signing
// configuration.
func (c Cosign) offline() []string {
	if c.Keyless {
		return nil
	}
	return []string{"--key", c.Key, "--use-signing-config=false", "--tlog-upload=false"}
}

func (c Cosign) registryFlags() []string {
	if !c.AllowHTTP {
		return nil
	}
	return []string{"--allow-insecure-registry", "--allow-http-registry"}
}

// PublicKey returns the key's public half. It decrypts the key, so a
// wrong COSIGN_PASSWORD fails here, before anything is built or pushed.
func (c Cosign) PublicKey(ctx context.Context) ([]byte, error) {
	if c.Keyless {
		return nil, nil
	}
	out, err := c.run(ctx, "public-key", "--key", c.Key)
	if err != nil {
		return nil, fmt.Errorf("the signing key %s (is COSIGN_PASSWORD right?): %w", c.keyName(), err)
	}
	return out, nil
}

func (c Cosign) keyName() string {
	if strings.HasPrefix(c.Key, "env://") {
		return "in $" + strings.TrimPrefix(c.Key, "env://")
	}
	return c.Key
}

// SignImage signs an image or index by digest (ref is name@sha256:…).
func (c Cosign) SignImage(ctx context.Context, ref string) error {
	args := append([]string{"sign", "--yes"}, c.offline()...)
	args = append(args, c.registryFlags()...)
	_, err := c.run(ctx, append(args, ref)...)
	return wrap("signing "+ref, err)
}

// Attest attaches a signed in-toto attestation of the predicate file
// (predicateType: cyclonedx, slsaprovenance1, …) to ref.
func (c Cosign) Attest(ctx context.Context, ref, predicateType, predicate string) error {
	args := append([]string{"attest", "--yes", "--type", predicateType, "--predicate", predicate}, c.offline()...)
	args = append(args, c.registryFlags()...)
	_, err := c.run(ctx, append(args, ref)...)
	return wrap("attesting "+predicateType+" of "+ref, err)
}

// SignBlob signs a file, writing the signature, certificate (keyless)
// and log entry (keyless) into one bundle file.
func (c Cosign) SignBlob(ctx context.Context, file, bundle string) error {
	args := append([]string{"sign-blob", "--yes", "--bundle", bundle}, c.offline()...)
	_, err := c.run(ctx, append(args, file)...)
	return wrap("signing "+file, err)
}

// AttestBlob writes a bundle of a signed in-toto statement whose subject
// is the file and whose predicate is the predicate file.
func (c Cosign) AttestBlob(ctx context.Context, file, predicateType, predicate, bundle string) error {
	args := append([]string{"attest-blob", "--yes", "--type", predicateType, "--predicate", predicate, "--bundle", bundle}, c.offline()...)
	_, err := c.run(ctx, append(args, file)...)
	return wrap("attesting "+predicateType+" of "+file, err)
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// run runs cosign; its error carries cosign's last lines of output.
func (c Cosign) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, fmt.Errorf("cosign: %w", err)
		}
		return nil, fmt.Errorf("cosign %s: %s", args[0], lastLines(stderr.String(), 5))
	}
	return stdout.Bytes(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
