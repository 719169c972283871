// Package runenv is what one run of ferry reads from outside its flags,
// read once and passed down, since libraries never read the environment:
// the variables, the secrets hidden from everything the run writes, the
// Actions step it runs as, and what they lead to (the forge and its token,
// the revision checked out, the age identities, the chart sources'
// credentials, a target's kubeconfig). cmd/ferry makes one Env per run.
package runenv

import (
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// ownSecretVars are the variables whose values ferry hides whenever they
// are set: the forge tokens it may use (the token input among them) and
// the runner's own tokens, which nothing ferry writes ever needs.
var ownSecretVars = []string{
	actions.InputVar(actions.InputToken), "FERRY_TOKEN", "GITHUB_TOKEN", "GITEA_TOKEN",
	"ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
}

// Env is one run's environment.
type Env struct {
	getenv  func(string) string
	environ func() []string
	// Masker hides every secret: decrypted values and ferry's own
	// credentials. Credentials hides the latter only, for the one output
	// that shows decrypted values by design (render's manifests).
	Masker      *secrets.Masker
	Credentials *secrets.Masker
	// Step is the Actions step ferry runs as (GITHUB_ACTIONS=true), nil
	// outside one: see step.go.
	Step *actions.Runtime
	// Sandbox renders the run's charts in a child process; nil renders
	// them in this process (tests that run the commands in-process).
	Sandbox *helm.Sandbox

	// stepErr is the first failure to write a step output or summary.
	stepErr error
	// ev and evErr are the event payload as Event read it, once.
	ev        *actions.Event
	evErr     error
	eventRead bool
	// creds are the chart sources' credentials, one for every repository
	// a run loads (see ChartCredentials).
	creds *images.EnvCredentials
	// keylessOpts are the client options of each cluster reached by the
	// job's identity, set up once per run (see keyless).
	keylessMu   sync.Mutex
	keylessOpts map[string]keylessCluster
}

// New reads the environment through getenv and environ (os.Getenv and
// os.Environ; environ lists KEY=value, nil lists nothing) and hides
// ferry's own secrets before anything is written (see hideOwnSecrets).
// Inside an Actions step, commands is the step's standard output, where
// the runner reads workflow commands.
func New(getenv func(string) string, environ func() []string, commands io.Writer) *Env {
	e := &Env{getenv: getenv, environ: environ, Masker: secrets.NewMasker(), Credentials: secrets.NewMasker()}
	e.hideOwnSecrets(environ)
	if actions.Enabled(getenv) {
		e.Step = actions.New(e.Getenv, commands, actions.WithMask(e.Masker.Mask))
	}
	return e
}

// Getenv returns the value of a variable.
func (e *Env) Getenv(key string) string { return e.getenv(key) }

// Setenv makes Getenv return value for key from now on.
func (e *Env) Setenv(key, value string) {
	getenv := e.getenv
	e.getenv = func(k string) string {
		if k == key {
			return value
		}
		return getenv(k)
	}
}

// Hide has every writer of the run mask values from now on (both
// maskers), and registers them with the runner.
func (e *Env) Hide(values ...string) {
	e.Masker.Add(values...)
	e.Credentials.Add(values...)
	if e.Step != nil {
		_ = e.Step.Mask(values...) // best effort: the maskers keep them out of what ferry writes
	}
}

// hideOwnSecrets hides the tokens of ownSecretVars, the age identities
// of SOPS_AGE_KEY, every FERRY_SECRET_* value but usernames, every
// FERRY_REGISTRY_*_PASSWORD, and the passwords and tokens of the Docker
// config.json. A value that is a URL (a webhook's address) is hidden with
// its path, query and userinfo (secrets.URLParts). Secrets found later
// are hidden where they are read: an age key file (Decryptor), a
// kubeconfig (ClusterOptions), the values of a Provider's Secret
// (notify), a chart source's password (SecretEnv).
func (e *Env) hideOwnSecrets(environ func() []string) {
	values := secrets.FromEnvironment(e.getenv, environ, ownSecretVars...)
	if s, err := images.DockerConfigSecrets(e.getenv); err == nil {
		values = append(values, s...) // a config that does not parse fails where it is used
	}
	e.Hide(values...)
}

// hideKubeconfig hides the tokens, keys and passwords of kubeconfig
// content, or of the file at path when data is nil (a file that cannot
// be read fails where the client reads it).
func (e *Env) hideKubeconfig(data []byte, path string) {
	if data == nil && path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		data = b
	}
	if len(data) > 0 {
		e.Hide(actions.KubeconfigSecrets(string(data))...)
	}
}

// SecretEnv is Getenv for variables that may hold credentials: what it
// returns of a *_PASSWORD variable is hidden from then on.
func (e *Env) SecretEnv(key string) string {
	v := e.getenv(key)
	if strings.HasSuffix(key, "_PASSWORD") {
		e.Hide(v)
	}
	return v
}

// Streams are the run's output streams: stdout and stderr guarded inside
// a step so that nothing ferry prints reads as a workflow command, and
// masking every secret hidden so far or later; manifests is stdout
// masking ferry's own credentials only.
func (e *Env) Streams(stdout, stderr io.Writer) (out, errOut, manifests io.Writer) {
	if e.Step != nil {
		// Each registers the masks of the secrets known so far before it
		// writes.
		pending := func() []string { return actions.Maskable(e.Masker.Values()) }
		stdout = e.Step.Stdout(pending)
		stderr = e.Step.Stderr(stderr, pending)
	}
	return e.Masker.Writer(stdout), e.Masker.Writer(stderr), e.Credentials.Writer(stdout)
}
