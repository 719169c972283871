package runenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/kschema"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/ocisig"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/verify"
)

// Repo names the repository a command reads and how far its
// kustomizations may reach: the flags the commands share.
type Repo struct {
	Dir              string
	AllowRemoteBases bool
	// HelmReleases is who installs Flux HelmReleases for every cluster
	// (config.HelmRender or config.HelmController); "" lets each
	// cluster's ferry.yaml entry say.
	HelmReleases string
	// CacheDir keeps fetched charts across runs; "" is the runner's tool
	// cache, else the user cache folder (see chartCacheDir).
	CacheDir string
	// Insecure are the chart hosts reached over plain HTTP.
	Insecure []string
	// Workspace is the folder every file ferry reads must be in; ""
	// is $GITHUB_WORKSPACE, else the repository's parent.
	Workspace string
}

// RenderOptions are the render options of r: encrypted files are
// decrypted with the age identities of the environment (see Decryptor),
// unless noDecrypt.
func (e *Env) RenderOptions(r Repo, noDecrypt bool) (render.Options, error) {
	kschema.Prepare() // whatever renders builds or checks scopes with it
	cacheDir := e.chartCacheDir(r.CacheDir)
	opts := render.Options{
		NoDecrypt:        noDecrypt,
		AllowRemoteBases: r.AllowRemoteBases,
		HelmReleases:     r.HelmReleases,
		HelmSources:      helm.NewSources(helm.SourcesOptions{CacheDir: cacheDir}),
		HelmLoaded:       helm.NewLoadedCharts(),
		HelmRenders:      helm.NewRenderCache(cacheDir, 0),
		Builds:           render.NewBuilds(),
		BuildCache:       render.NewBuildCache(cacheDir),
		InsecureHosts:    r.Insecure,
		ChartCredentials: e.ChartCredentials(),
		Workspace:        r.Workspace,
		HelmSandbox:      e.Sandbox,
		InputProviders:   e.inputProviders(),
	}
	if opts.Workspace == "" {
		opts.Workspace = e.getenv("GITHUB_WORKSPACE") // "" lets config take the repository's parent
	}
	if v := e.getenv(ocisig.RootVar); v != "" {
		root, err := ocisig.LoadRoot(v, os.ReadFile)
		if err != nil {
			return opts, err
		}
		opts.SigstoreRoot = root
	}
	if !opts.NoDecrypt {
		d, err := e.Decryptor()
		if err != nil {
			return opts, err
		}
		opts.Decryptor = d
	}
	return opts, nil
}

// LoadRepo loads the repository r names, rendering with RenderOptions.
func (e *Env) LoadRepo(ctx context.Context, r Repo, noDecrypt bool) (*config.Repo, error) {
	opts, err := e.RenderOptions(r, noDecrypt)
	if err != nil {
		return nil, err
	}
	return config.Load(ctx, r.Dir, opts)
}

// chartCacheDir is dir, else ferry/charts under the runner's tool cache
// (which actions/cache can keep), else under the user cache folder
// ($XDG_CACHE_HOME, else ~/.cache); "" when there is none.
func (e *Env) chartCacheDir(dir string) string {
	switch {
	case dir != "":
		return dir
	case e.getenv("RUNNER_TOOL_CACHE") != "":
		return filepath.Join(e.getenv("RUNNER_TOOL_CACHE"), "ferry", "charts")
	case e.getenv("XDG_CACHE_HOME") != "":
		return filepath.Join(e.getenv("XDG_CACHE_HOME"), "ferry", "charts")
	case e.getenv("HOME") != "":
		return filepath.Join(e.getenv("HOME"), ".cache", "ferry", "charts")
	}
	return ""
}

// Decryptor reads the age identities, from SOPS_AGE_KEY or the file
// SOPS_AGE_KEY_FILE names, and returns a decryptor the masker watches.
func (e *Env) Decryptor() (*secrets.Decryptor, error) {
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
	e.Hide(secrets.AgeKeyLines(text)...)
	var ids *secrets.Identities
	if strings.TrimSpace(text) != "" {
		var err error
		if ids, err = secrets.ParseIdentities(text); err != nil {
			return nil, err
		}
	}
	d := secrets.NewDecryptor(ids)
	e.Masker.Watch(d)
	return d, nil
}

// HasAgeKey reports whether an age identity was given at all.
func (e *Env) HasAgeKey() bool {
	return strings.TrimSpace(e.getenv("SOPS_AGE_KEY")) != "" || e.getenv("SOPS_AGE_KEY_FILE") != ""
}

// ChartCredentials are the run's credentials of chart sources from the
// environment, made once.
func (e *Env) ChartCredentials() *images.EnvCredentials {
	if e.creds == nil {
		e.creds = images.NewEnvCredentials(e.SecretEnv)
	}
	return e.creds
}

// CredentialWarnings are the warnings about the chart sources'
// credential variables a run read (a former spelling), to say once at
// the end of the run.
func (e *Env) CredentialWarnings() []string {
	if e.creds == nil {
		return nil
	}
	return e.creds.Warnings()
}

// CheckedOut returns the revision being applied or compared: flag, else
// $GITHUB_SHA, else the HEAD of the repository at root, with how to tell
// whether one commit is an ancestor of another (see gitrepo.CheckedOut).
func (e *Env) CheckedOut(root, flag string) (revision string, isAncestor func(a, b string) (bool, error)) {
	if flag == "" {
		flag = e.getenv("GITHUB_SHA")
	}
	return gitrepo.CheckedOut(root, flag)
}

// KeySources are the run's trusted keys outside the repository: the
// trusted-keys input and the variables that stand for Secrets.
func (e *Env) KeySources() verify.Sources {
	var environ []string
	if e.environ != nil {
		environ = e.environ()
	}
	return verify.Sources{TrustedKeys: e.getenv(verify.TrustedKeysVar), Environ: environ}
}

// VerifyRun is run (the step's --verify flags) for revision of repo,
// about to reach targets: what the repository asks, the run's key
// sources, each target's last apply (its inventory in inventoryNS, read
// through clientOf; a target without a client is left to the apply,
// which reports it) and, with targets, the reader of a verify Secret
// from the first one's cluster (get).
func (e *Env) VerifyRun(ctx context.Context, run verify.Run, repo *config.Repo, targets []*config.Target, revision, inventoryNS string,
	clientOf func(*config.Target) (*kube.Client, error), read config.ClusterReader) (verify.Run, error) {
	run.Dir, run.Revision, run.Asked, run.Sources = repo.Root, revision, repo.Verification(), e.KeySources()
	for _, t := range targets {
		c, err := clientOf(t)
		if err != nil {
			continue
		}
		inv, err := c.ReadInventory(ctx, t.Name, inventoryNS)
		if err != nil {
			return run, fmt.Errorf("target %q: cluster %s: reading the last apply: %w", t.Name, c.Host, err)
		}
		mode, refs := verify.ParseRecord(inv.Verify)
		run.Applied = append(run.Applied, verify.Applied{Target: t.Name, Revision: inv.Revision, Mode: mode, SecretRefs: refs})
	}
	if len(targets) > 0 {
		run.Sources.ReadSecret = func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
			s, err := read(ctx, targets[0], "Secret", namespace, name)
			if err != nil {
				return nil, err
			}
			return kube.SecretData(s)
		}
	}
	return run, nil
}
