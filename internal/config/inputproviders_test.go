package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/inputprovider"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// apiFleet is a copy of the resourcesets fixture whose ferry.yaml gives
// no inputs for the previews provider (type GitHubPullRequest, url
// https://github.com/lab/app, label deploy/preview) and has inputProviderAPIs
// set as given (nothing when empty).
func apiFleet(t *testing.T, apis string) string {
	t.Helper()
	dir := t.TempDir()
	testtree.Copy(t, filepath.Join("testdata", "fleets", "resourcesets"), dir)
	testtree.Write(t, dir, map[string]string{"ferry.yaml": apis + "\nclusters:\n  lab:\n    helmReleases: controller\n"})
	return dir
}

// githubLab is the GitHub test server holding lab/app with three open
// pull requests, two of them labelled deploy/preview, and the options
// that reach it as the forge the job runs on (https://github.com).
func githubLab(t *testing.T) (*githubtest.Server, *inputprovider.Options, []int) {
	gh := githubtest.New(t)
	token := gh.AddUser("ci-bot")
	gh.AddUser("alice")
	a := gh.AddPullRequest("lab", "app", "alice", "feature/search", "main", "Search", "")
	gh.AddPullRequest("lab", "app", "alice", "wip", "main", "WIP", "")
	b := gh.AddPullRequest("lab", "app", "alice", "fix/login", "main", "Login", "")
	gh.AddLabels("lab", "app", a, "deploy/preview")
	gh.AddLabels("lab", "app", b, "deploy/preview")
	return gh, &inputprovider.Options{Forge: &inputprovider.Forge{
		Kind: inputprovider.KindGitHub, ServerURL: "https://github.com", APIURL: gh.URL, Token: token,
	}}, []int{a, b}
}

// The previews provider of the resourcesets fixture resolved against
// the GitHub test server: a preview-<id> target per labelled open pull
// request, its TAG the pull request's head SHA.
func TestInputProviderAPIsEndToEnd(t *testing.T) {
	gh, opts, prs := githubLab(t)
	dir := apiFleet(t, "inputProviderAPIs:\n  forge: true\n")
	repo, err := config.Load(t.Context(), dir, render.Options{InputProviders: opts})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apps", "preview-" + strconv.Itoa(prs[0]), "preview-" + strconv.Itoa(prs[1]), "tenant-team-a", "tenant-team-b"}
	slices.Sort(want)
	if diff := cmp.Diff(want, targetNames(repo.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if len(repo.Skipped) > 0 {
		t.Errorf("skipped: %+v", repo.Skipped)
	}
	d := findObject(t, renderTarget(t, repo, "preview-"+strconv.Itoa(prs[1])), "Deployment", "app")
	containers := nested(t, d, "spec", "template", "spec", "containers").([]any)
	if got, want := containers[0].(map[string]any)["image"], "ghcr.io/lab/app:"+gh.PullHeadSHA("lab", "app", prs[1])[:7]; got != want {
		t.Errorf("image %v, want %s (the pull request's head)", got, want)
	}
}

// Without inputProviderAPIs in ferry.yaml the API is not called, whatever
// the run could reach; the skip names both ways out.
func TestInputProviderAPIsNotAllowed(t *testing.T) {
	gh, opts, _ := githubLab(t)
	repo, err := config.Load(t.Context(), apiFleet(t, ""), render.Options{InputProviders: opts})
	if err != nil {
		t.Fatal(err)
	}
	if len(repo.Skipped) != 1 || !strings.Contains(repo.Skipped[0].Reason, "inputProviderAPIs: {forge: true}") || !strings.Contains(repo.Skipped[0].Reason, "inputProviders: {flux-system/previews:") {
		t.Errorf("skipped %+v, want the previews ResourceSet and both ways to give its inputs", repo.Skipped)
	}
	for _, r := range gh.Requests() {
		t.Errorf("the forge was called: %+v", r)
	}
}

// In a diff the head's provider is called only when the base has the
// same provider with the same type and URL, and inputProviderAPIs is the
// base's: a pull request can neither point a provider elsewhere nor
// allow the calls itself.
func TestInputProviderAPIsInPullRequest(t *testing.T) {
	gh, opts, prs := githubLab(t)
	ropts := render.Options{InputProviders: opts}
	allowed := "inputProviderAPIs:\n  forge: true\n"
	previews := filepath.Join("clusters", "lab", "previews.yaml")
	moved := func(t *testing.T, dir string) {
		b, err := os.ReadFile(filepath.Join(dir, previews))
		if err != nil {
			t.Fatal(err)
		}
		testtree.Write(t, dir, map[string]string{previews: strings.Replace(string(b), "https://github.com/lab/app", "https://github.com/lab/other", 1)})
	}

	// The base and head loaded one after the other (LoadProposed), and
	// side by side (LoadRevisions, as diff does).
	loaders := map[string]func(t *testing.T, bdir, hdir string) (*config.Repo, *config.Repo){
		"one after the other": func(t *testing.T, bdir, hdir string) (*config.Repo, *config.Repo) {
			base, err := config.Load(t.Context(), bdir, ropts)
			if err != nil {
				t.Fatal(err)
			}
			head, err := config.LoadProposed(t.Context(), hdir, ropts, base)
			if err != nil {
				t.Fatal(err)
			}
			return base, head
		},
		"side by side": func(t *testing.T, bdir, hdir string) (*config.Repo, *config.Repo) {
			base, head, berr, herr := config.LoadRevisions(t.Context(), bdir, hdir, ropts)
			if berr != nil || herr != nil {
				t.Fatal(berr, herr)
			}
			return base, head
		},
	}
	for mode, load := range loaders {
		t.Run(mode, func(t *testing.T) {
			t.Run("same provider", func(t *testing.T) {
				_, head := load(t, apiFleet(t, allowed), apiFleet(t, allowed))
				if got := targetNames(head.Targets); !slices.Contains(got, "preview-"+strconv.Itoa(prs[0])) {
					t.Errorf("head targets %v, want the previews", got)
				}
			})
			t.Run("new URL in the head", func(t *testing.T) {
				bdir, hdir := apiFleet(t, allowed), apiFleet(t, allowed)
				moved(t, hdir)
				before := len(gh.Requests())
				_, head := load(t, bdir, hdir)
				if len(head.Skipped) != 1 || !strings.Contains(head.Skipped[0].Reason, "new provider URL in a pull request: not called") {
					t.Errorf("skipped %+v, want the previews provider not called", head.Skipped)
				}
				for _, r := range gh.Requests()[before:] {
					if strings.Contains(r.Path, "lab/other") {
						t.Errorf("the head's provider was called: %+v", r)
					}
				}
			})
			t.Run("head allows the calls", func(t *testing.T) {
				bdir, hdir := apiFleet(t, ""), apiFleet(t, allowed)
				before := len(gh.Requests())
				_, head := load(t, bdir, hdir)
				if len(head.Skipped) != 1 || !strings.Contains(head.Skipped[0].Reason, "a render does not call") {
					t.Errorf("skipped %+v, want the previews provider not called", head.Skipped)
				}
				if n := len(gh.Requests()) - before; n != 0 {
					t.Errorf("%d calls to the forge, want none", n)
				}
				if !slices.ContainsFunc(head.Notes, func(n string) bool { return strings.Contains(n, "inputProviderAPIs") }) {
					t.Errorf("notes %v, want one saying the head changes inputProviderAPIs", head.Notes)
				}
			})
		})
	}
}
