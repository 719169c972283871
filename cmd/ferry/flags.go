package main

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/runenv"
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
		return fmt.Errorf("want %s", output.OrList(f.allowed))
	}
	f.value = s
	return nil
}

// repoFlags name the repository a command reads, and how far its
// kustomizations may reach.
type repoFlags struct {
	runenv.Repo
	// The rendering of Flux HelmReleases (Repo.HelmReleases).
	helmReleases *choiceValue
}

func (r *repoFlags) register(f *pflag.FlagSet, help string) {
	f.StringVar(&r.Dir, "repo", ".", help)
	f.BoolVar(&r.AllowRemoteBases, "allow-remote-bases", false, "let kustomizations fetch remote bases and resources")
	r.helmReleases = &choiceValue{allowed: []string{string(config.HelmRender), string(config.HelmController)}}
	f.Var(r.helmReleases, "helm-releases", "who installs Flux HelmReleases, for every cluster: render (ferry renders their charts) or controller (a helm-controller in the cluster); default: each cluster's helmReleases in ferry.yaml, else render")
	f.StringVar(&r.CacheDir, "cache-dir", "", "folder keeping fetched Helm charts across runs (default $RUNNER_TOOL_CACHE/ferry/charts, else the user cache folder's ferry/charts)")
	f.StringSliceVar(&r.Insecure, "insecure-registry", nil, "chart repository or registry `HOST` reached over plain HTTP (repeatable)")
	f.StringVar(&r.Workspace, "workspace", "", "the folder every file ferry reads must be in, after symlinks: the repository and the other checkouts ferry.yaml sources: maps (default $GITHUB_WORKSPACE, else the repository's parent)")
}

// settings are the repository settings the flags give.
func (r *repoFlags) settings() runenv.Repo {
	s := r.Repo
	if r.helmReleases != nil {
		s.HelmReleases = r.helmReleases.value
	}
	return s
}
