package main

import (
	"fmt"

	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/risk"
)

// revisionFlags name the two revisions diff and plan compare.
type revisionFlags struct {
	base, head string
	noDecrypt  bool
	allTargets bool
}

// options are the diff options of the revisions: base and head from the
// flags, else from the Actions event (and the pull request's number into
// pr, when pr is not nil); encrypted files are decrypted when an age key
// is given and --no-decrypt is not.
func (r *revisionFlags) options(e *env, repo repoFlags, targets []string, pr *int) (diff.Options, error) {
	ev, err := e.Event()
	if err != nil {
		return diff.Options{}, err
	}
	ev.FillRevisions(&r.base, &r.head, pr)
	if r.base == "" {
		return diff.Options{}, fmt.Errorf("--base is required outside a pull_request or push event")
	}
	ropts, err := e.RenderOptions(repo.settings(), r.noDecrypt || !e.HasAgeKey())
	if err != nil {
		return diff.Options{}, err
	}
	opts := diff.Options{Repo: repo.Dir, Base: r.base, Head: r.head, Render: ropts, Targets: targets, FetchToken: e.Token(), AllTargets: r.allTargets}
	if ev != nil && ev.PullRequest != nil {
		opts.AcceptRisks = risk.AcceptedIDs(ev.PullRequest.Body)
	}
	if ev == nil || ev.PullRequest == nil || !ev.PullRequest.Fork {
		// Only registries the step has credentials for are asked; a
		// fork's run asks none.
		opts.Images = images.NewChecker(e.ChartCredentials(), nil, repo.settings().Insecure)
	}
	return opts, nil
}
