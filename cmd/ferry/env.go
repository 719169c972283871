package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/inputprovider"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// env is everything a command reads from outside its flags: streams and
// environment variables, read once here and passed down.
type env struct {
	// stdout and stderr mask every secret the masker knows once run has
	// started (see maskStreams): the only streams a command gets.
	stdout io.Writer
	stderr io.Writer
	// manifests is the standard output for the one output that shows
	// decrypted values by design, render's manifests: it masks ferry's
	// own credentials only.
	manifests io.Writer
	getenv    func(string) string
	// environ lists the environment as KEY=value (os.Environ), for the
	// secrets known by a prefix (FERRY_SECRET_*); nil lists nothing.
	environ func() []string
	// masker hides every secret: decrypted values and ferry's own
	// credentials. credentials hides the latter only (see hide).
	masker      *secrets.Masker
	credentials *secrets.Masker

	// gha is the Actions runtime when ferry runs as a workflow step
	// (GITHUB_ACTIONS=true), nil otherwise: see actions.go.
	gha *actions.Runtime
	// actionErr is the first failure to write a step output or summary.
	actionErr error
	// actionRepo is the step's --repo, for error annotations.
	actionRepo string
	// ev and evErr are the event payload as event read it, once.
	ev        *actions.Event
	evErr     error
	eventRead bool
	// creds are the chart sources' credentials from the environment,
	// one for every repository a run loads; their warnings are printed
	// at the end of the run (runWith).
	creds *images.EnvCredentials
	// sandbox renders the run's charts in a child process (ferry itself,
	// helm.SandboxArg); nil renders them in this process (tests that run
	// the commands in-process).
	sandbox *helm.Sandbox
}

func newEnv() *env {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ,
		sandbox: helm.NewSandbox(exe, helm.SandboxArg)}
}

// decryptor reads the age identities once, from SOPS_AGE_KEY or the file
// SOPS_AGE_KEY_FILE names, and returns a decryptor the masker watches.
func (e *env) decryptor() (*secrets.Decryptor, error) {
	text := e.getenv("SOPS_AGE_KEY")
	if text == "" {
		if p := e.getenv("SOPS_AGE_KEY_FILE"); p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("SOPS_AGE_KEY_FILE: %w", err)
			}
			text = string(b)
		}
	}
	e.hide(secrets.AgeKeyLines(text)...)
	var ids *secrets.Identities
	if strings.TrimSpace(text) != "" {
		var err error
		if ids, err = secrets.ParseIdentities(text); err != nil {
			return nil, err
		}
	}
	d := secrets.NewDecryptor(ids)
	e.masker.Watch(d)
	return d, nil
}

// hasAgeKey reports whether an age identity was given at all.
func (e *env) hasAgeKey() bool {
	return strings.TrimSpace(e.getenv("SOPS_AGE_KEY")) != "" || e.getenv("SOPS_AGE_KEY_FILE") != ""
}

// renderOptions are a command's render options: encrypted files are
// decrypted with the age identities of the environment (see decryptor),
// unless noDecrypt.
func (e *env) renderOptions(r repoFlags, noDecrypt bool) (render.Options, error) {
	cacheDir := r.chartCacheDir(e.getenv)
	opts := render.Options{
		NoDecrypt:        noDecrypt,
		AllowRemoteBases: r.allowRemoteBases,
		HelmReleases:     r.helmReleases.String(),
		HelmSources:      helm.NewSources(helm.SourcesOptions{CacheDir: cacheDir}),
		HelmLoaded:       helm.NewLoadedCharts(),
		HelmRenders:      helm.NewRenderCache(cacheDir, 0),
		Builds:           render.NewBuilds(),
		InsecureHosts:    r.insecure,
		ChartCredentials: e.chartCredentials(),
		Workspace:        r.workspaceDir(e.getenv),
		HelmSandbox:      e.sandbox,
		InputProviders:   e.inputProviders(),
	}
	if !opts.NoDecrypt {
		d, err := e.decryptor()
		if err != nil {
			return opts, err
		}
		opts.Decryptor = d
	}
	return opts, nil
}

// inputProviders is how ResourceSetInputProviders' APIs are reached,
// when ferry.yaml allows it: the forge the Actions run is on, with its
// token (detected as openForge does; none outside Actions or without a
// token), and other hosts anonymously.
func (e *env) inputProviders() *inputprovider.Options {
	opts := &inputprovider.Options{}
	cfg, err := forge.Detect(e.forgeEnv, "")
	if err != nil {
		return opts
	}
	f := &inputprovider.Forge{Kind: string(cfg.Kind), APIURL: cfg.APIURL, Token: cfg.Token, ServerURL: cfg.APIURL}
	if cfg.Kind == forge.KindGitHub {
		f.ServerURL = cmp.Or(strings.TrimSpace(e.getenv("GITHUB_SERVER_URL")), "https://github.com")
	}
	opts.Forge = f
	return opts
}

// chartCredentials are the run's credentials of chart sources from the
// environment, made once.
func (e *env) chartCredentials() *images.EnvCredentials {
	if e.creds == nil {
		e.creds = images.NewEnvCredentials(e.secretEnv)
	}
	return e.creds
}

// secretEnv is getenv for variables that may hold credentials: what
// it returns of a *_PASSWORD variable is masked from then on.
func (e *env) secretEnv(key string) string {
	v := e.getenv(key)
	if strings.HasSuffix(key, "_PASSWORD") {
		e.hide(v)
	}
	return v
}

// loadRepo loads the repository the flags name, rendering with
// renderOptions.
func (e *env) loadRepo(ctx context.Context, r repoFlags, noDecrypt bool) (*config.Repo, error) {
	opts, err := e.renderOptions(r, noDecrypt)
	if err != nil {
		return nil, err
	}
	return config.Load(ctx, r.dir, opts)
}

// token is the forge token: FERRY_TOKEN, else GITHUB_TOKEN, else GITEA_TOKEN.
func (e *env) token() string {
	for _, k := range []string{"FERRY_TOKEN", "GITHUB_TOKEN", "GITEA_TOKEN"} {
		if v := e.getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// forgeEnv is getenv with the forge token (see token) as forge.TokenVar.
func (e *env) forgeEnv(k string) string {
	if k == forge.TokenVar {
		return e.token()
	}
	return e.getenv(k)
}

// setenv makes getenv return value for key from now on.
func (e *env) setenv(key, value string) {
	getenv := e.getenv
	e.getenv = func(k string) string {
		if k == key {
			return value
		}
		return getenv(k)
	}
}

// openForge connects to the forge of the Actions run (or --forge), with
// the token from FERRY_TOKEN, GITHUB_TOKEN or GITEA_TOKEN.
func openForge(e *env, override string) (forge.Forge, error) {
	kind, err := forge.ParseKind(override)
	if err != nil {
		return nil, err
	}
	if e.gha != nil && e.token() == "" {
		// In a step the token comes from its token input, which ferry's
		// action.yml files default to ${{ github.token }}: empty means the
		// workflow gave an empty value, or the action.yml the runner read
		// declares no such input (it and ferry's image disagree).
		return nil, fmt.Errorf("forge: no token: the step's %s input is empty or not declared by its action.yml (ferry's steps default it to ${{ github.token }}), and FERRY_TOKEN, GITHUB_TOKEN and GITEA_TOKEN are unset", actions.InputToken)
	}
	cfg, err := forge.Detect(e.forgeEnv, kind)
	if err != nil {
		return nil, err
	}
	f, err := forge.New(cfg)
	if err != nil {
		return nil, err
	}
	return forge.Masked(f, e.masker.Mask), nil
}
