package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/config"
)

// choiceValue is a flag that takes one of a few values (--format,
// --color) and checks itself when it is set, so a bad value is reported
// (exit 2) before the command runs.
type choiceValue struct {
	value   string
	allowed []string
}

// newChoice is a choice of the allowed values, defaulting to the first.
func newChoice(allowed ...string) *choiceValue {
	return &choiceValue{value: allowed[0], allowed: allowed}
}

func (f *choiceValue) String() string { return f.value }
func (f *choiceValue) Type() string   { return "string" }

func (f *choiceValue) Set(s string) error {
	if !slices.Contains(f.allowed, s) {
		return fmt.Errorf("want %s", orList(f.allowed))
	}
	f.value = s
	return nil
}

// orList is "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// repoFlags name the repository a command reads, and how far its
// kustomizations may reach.
type repoFlags struct {
	dir              string
	allowRemoteBases bool
	// The rendering of Flux HelmReleases.
	helmReleases *choiceValue
	cacheDir     string
	insecure     []string
	workspace    string
}

func (r *repoFlags) register(f *pflag.FlagSet, help string) {
	f.StringVar(&r.dir, "repo", ".", help)
	f.BoolVar(&r.allowRemoteBases, "allow-remote-bases", false, "let kustomizations fetch remote bases and resources")
	r.helmReleases = &choiceValue{allowed: []string{string(config.HelmRender), string(config.HelmController)}}
	f.Var(r.helmReleases, "helm-releases", "who installs Flux HelmReleases, for every cluster: render (ferry renders their charts) or controller (a helm-controller in the cluster); default: each cluster's helmReleases in ferry.yaml, else render")
	f.StringVar(&r.cacheDir, "cache-dir", "", "folder keeping fetched Helm charts across runs (default $RUNNER_TOOL_CACHE/ferry/charts, else the user cache folder's ferry/charts)")
	f.StringSliceVar(&r.insecure, "insecure-registry", nil, "chart repository or registry `HOST` reached over plain HTTP (repeatable)")
	f.StringVar(&r.workspace, "workspace", "", "the folder every file ferry reads must be in, after symlinks: the repository and the other checkouts ferry.yaml sources: maps (default $GITHUB_WORKSPACE, else the repository's parent)")
}

// workspaceDir is --workspace, else $GITHUB_WORKSPACE; "" lets config
// take the repository's parent.
func (r *repoFlags) workspaceDir(getenv func(string) string) string {
	if r.workspace != "" {
		return r.workspace
	}
	return getenv("GITHUB_WORKSPACE")
}

// chartCacheDir is --cache-dir, else ferry/charts under the runner's
// tool cache (which actions/cache can keep), else under the user cache
// folder ($XDG_CACHE_HOME, else ~/.cache); "" when there is none.
func (r *repoFlags) chartCacheDir(getenv func(string) string) string {
	switch {
	case r.cacheDir != "":
		return r.cacheDir
	case getenv("RUNNER_TOOL_CACHE") != "":
		return filepath.Join(getenv("RUNNER_TOOL_CACHE"), "ferry", "charts")
	case getenv("XDG_CACHE_HOME") != "":
		return filepath.Join(getenv("XDG_CACHE_HOME"), "ferry", "charts")
	case getenv("HOME") != "":
		return filepath.Join(getenv("HOME"), ".cache", "ferry", "charts")
	}
	return ""
}
