package main

import (
	"io"
	"os"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// ownSecretVars are the variables whose values ferry hides whenever they
// are set: the forge tokens it may use (the token input among them) and
// the runner's own tokens, which nothing ferry writes ever needs.
var ownSecretVars = []string{
	actions.InputVar(actions.InputToken), "FERRY_TOKEN", "GITHUB_TOKEN", "GITEA_TOKEN",
	"ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
}

// hide has every writer ferry hands a command mask values from now on
// (both maskers: see env), and registers them with the runner.
func (e *env) hide(values ...string) {
	e.masker.Add(values...)
	e.credentials.Add(values...)
	if e.gha != nil {
		_ = e.gha.Mask(values...) // best effort: the maskers keep them out of what ferry writes
	}
}

// learnSecrets hides ferry's own secrets before anything is written:
// the tokens of ownSecretVars, the age identities of SOPS_AGE_KEY, every
// FERRY_SECRET_* value but usernames, every FERRY_REGISTRY_*_PASSWORD,
// and the passwords and tokens of the Docker config.json. A value that is
// a URL (a webhook's address) is hidden with its path, query and userinfo
// (secrets.URLParts). Secrets found later are hidden where they are
// read: an age key file (decryptor), a kubeconfig (clusterFlags), the
// values of a Provider's Secret (notify), a chart source's password.
func (e *env) learnSecrets() {
	values := secrets.FromEnvironment(e.getenv, e.environ, ownSecretVars...)
	if s, err := images.DockerConfigSecrets(e.getenv); err == nil {
		values = append(values, s...) // a config that does not parse fails where it is used
	}
	e.hide(values...)
}

// hideKubeconfig hides the tokens, keys and passwords of kubeconfig
// content, or of the file at path when data is nil (a file that cannot
// be read fails where the client reads it).
func (e *env) hideKubeconfig(data []byte, path string) {
	if data == nil && path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		data = b
	}
	if len(data) > 0 {
		e.hide(actions.KubeconfigSecrets(string(data))...)
	}
}

// maskStreams makes stdout and stderr the only streams a command gets,
// masking every secret hidden so far or later; manifests is stdout
// masking ferry's own credentials only.
func (e *env) maskStreams() {
	e.manifests = e.credentials.Writer(e.stdout)
	e.stdout = e.masker.Writer(e.stdout)
	e.stderr = e.masker.Writer(e.stderr)
}

// flushStreams writes out what the streams hold back: the end of a line
// not ended yet.
func (e *env) flushStreams() {
	for _, w := range []io.Writer{e.manifests, e.stdout, e.stderr} {
		if f, ok := w.(interface{ Flush() error }); ok {
			_ = f.Flush()
		}
	}
}

// print writes res in format to stdout (output.Result), masked as a
// whole, so a secret that spans lines is caught too, before the stream
// masks it again line by line.
func (e *env) print(res output.Result, format string) error {
	var b strings.Builder
	if err := res.Write(&b, output.Format(format)); err != nil {
		return err
	}
	_, err := io.WriteString(e.stdout, e.masker.Mask(b.String()))
	return err
}

// maskedRuntime is an Actions runtime whose writes are masked, for
// writing a step summary outside a step.
func (e *env) maskedRuntime() *actions.Runtime {
	return actions.New(e.getenv, io.Discard, actions.WithMask(e.masker.Mask))
}
