package forge

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-github/v88/github"
)

// latestStatus keeps, among statuses read in any order, the one of each
// context with the highest ID (both forges number statuses in the order
// they were set), and returns them by context.
type latestStatus map[string]struct {
	id int64
	s  CommitStatus
}

func (l latestStatus) add(id int64, s CommitStatus) {
	if cur, ok := l[s.Context]; !ok || id > cur.id {
		l[s.Context] = struct {
			id int64
			s  CommitStatus
		}{id, s}
	}
}

func (l latestStatus) list() []CommitStatus {
	out := make([]CommitStatus, 0, len(l))
	for _, v := range l {
		out = append(out, v.s)
	}
	slices.SortFunc(out, func(a, b CommitStatus) int { return cmp.Compare(a.Context, b.Context) })
	return out
}

// githubStates and giteaStates are the states each forge takes.
var (
	githubStates = []string{StatusPending, StatusSuccess, StatusFailure, StatusError}
	giteaStates  = []string{StatusPending, StatusSuccess, StatusFailure, StatusError, StatusWarning}
)

// checkState refuses a state the forge does not take, before asking it
// (Gitea would store any word).
func checkState(k Kind, s CommitStatus, states []string) error {
	if !slices.Contains(states, s.State) {
		return fmt.Errorf("%s: commit status %q: state %q is not one of %s", k, s.Context, s.State, strings.Join(states, ", "))
	}
	return nil
}

// CommitStatuses returns the latest status of each context on commit sha
// (or a branch or tag), by context.
func (g *GitHub) CommitStatuses(ctx context.Context, sha string) ([]CommitStatus, error) {
	opts := &github.ListOptions{PerPage: githubPerPage}
	latest := latestStatus{}
	for {
		page, resp, err := g.client.Repositories.ListStatuses(ctx, g.owner, g.repo, sha, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("github: listing the statuses of commit %s in %s", sha, g.slug()), permStatusesRead, err)
		}
		for _, s := range page {
			latest.add(s.GetID(), CommitStatus{
				State:       s.GetState(),
				Context:     s.GetContext(),
				Description: s.GetDescription(),
				TargetURL:   s.GetTargetURL(),
			})
		}
		if resp.NextPage == 0 {
			return latest.list(), nil
		}
		opts.Page = resp.NextPage
	}
}

// SetCommitStatus sets status s on commit sha. GitHub takes the states
// pending, success, failure and error.
func (g *GitHub) SetCommitStatus(ctx context.Context, sha string, s CommitStatus) error {
	if err := checkState(KindGitHub, s, githubStates); err != nil {
		return err
	}
	st := github.RepoStatus{State: &s.State, Context: &s.Context}
	if s.Description != "" {
		st.Description = &s.Description
	}
	if s.TargetURL != "" {
		st.TargetURL = &s.TargetURL
	}
	if _, _, err := g.client.Repositories.CreateStatus(ctx, g.owner, g.repo, sha, st); err != nil {
		return g.fail(fmt.Sprintf("github: setting status %q (%s) on commit %s in %s", s.Context, s.State, sha, g.slug()), permStatusesWrite, err)
	}
	return nil
}

// CommitStatuses returns the latest status of each context on commit sha
// (or a branch or tag), by context.
func (g *Gitea) CommitStatuses(ctx context.Context, sha string) ([]CommitStatus, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	opts := gitea.ListStatusesOption{ListOptions: gitea.ListOptions{PageSize: giteaPageSize}}
	latest := latestStatus{}
	for {
		page, resp, err := c.ListStatuses(g.owner, g.repo, sha, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("gitea: listing the statuses of commit %s in %s", sha, g.slug()), permGiteaRepoRead, resp, err)
		}
		for _, s := range page {
			latest.add(s.ID, CommitStatus{
				State:       string(s.State),
				Context:     s.Context,
				Description: s.Description,
				TargetURL:   s.TargetURL,
			})
		}
		if resp.NextPage == 0 || len(page) == 0 {
			return latest.list(), nil
		}
		opts.Page = resp.NextPage
	}
}

// SetCommitStatus sets status s on commit sha. Gitea takes the states
// pending, success, failure, error and warning.
func (g *Gitea) SetCommitStatus(ctx context.Context, sha string, s CommitStatus) error {
	if err := checkState(KindGitea, s, giteaStates); err != nil {
		return err
	}
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("gitea: setting status %q (%s) on commit %s in %s", s.Context, s.State, sha, g.slug())
	_, resp, err := c.CreateStatus(g.owner, g.repo, sha, gitea.CreateStatusOption{
		State:       gitea.StatusState(s.State),
		Context:     s.Context,
		Description: s.Description,
		TargetURL:   s.TargetURL,
	})
	if err != nil {
		// Gitea answers 500 with no message for a commit it does not
		// have: the commit is asked for to tell.
		if resp != nil && resp.StatusCode >= 500 {
			if _, cresp, cerr := c.GetSingleCommit(g.owner, g.repo, sha); cerr != nil && cresp != nil && cresp.StatusCode == http.StatusNotFound {
				return g.fail(what+": no such commit", permGiteaRepoWrite, cresp, cerr)
			}
		}
		return g.fail(what, permGiteaRepoWrite, resp, err)
	}
	return nil
}
