package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-github/v88/github"
)

// checkLabel refuses an empty label name before asking the forge.
func checkLabel(k Kind, number int, label string) error {
	if strings.TrimSpace(label) == "" {
		return fmt.Errorf("%s: labelling #%d: empty label name", k, number)
	}
	return nil
}

// SetPullRequestLabel puts label on pull request number, or takes it off,
// unless it is already so. GitHub matches label names regardless of case
// and creates a label the repository lacks when it is first put on.
func (g *GitHub) SetPullRequestLabel(ctx context.Context, number int, label string, present bool) error {
	if err := checkLabel(KindGitHub, number, label); err != nil {
		return err
	}
	have, err := g.pullRequestLabels(ctx, number)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(have, func(l string) bool { return strings.EqualFold(l, label) })
	switch {
	case present && i < 0:
		what := fmt.Sprintf("github: putting label %q on %s#%d", label, g.slug(), number)
		now, _, err := g.client.Issues.AddLabelsToIssue(ctx, g.owner, g.repo, number, []string{label})
		if err != nil {
			return g.fail(what, permLabelsWrite, err)
		}
		// The answer is the labels the pull request now carries. A token
		// that may label pull requests but not create labels has been
		// reported answered 200 without the new label.
		if !slices.ContainsFunc(now, func(l *github.Label) bool { return strings.EqualFold(l.GetName(), label) }) {
			return fmt.Errorf("%s: %w: GitHub answered without the label; creating a label needs the permission issues: write", what, ErrPermission)
		}
	case !present && i >= 0:
		// go-github puts the name in the path as it is given. GitHub
		// answers 404 when the label is not on the pull request: someone
		// took it off since it was listed, which is what was asked.
		if _, err := g.client.Issues.RemoveLabelForIssue(ctx, g.owner, g.repo, number, url.PathEscape(have[i])); err != nil {
			if err := g.fail(fmt.Sprintf("github: taking label %q off %s#%d", label, g.slug(), number), permPullRequestsWrite, err); !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	return nil
}

// pullRequestLabels lists the names of the labels on pull request number.
func (g *GitHub) pullRequestLabels(ctx context.Context, number int) ([]string, error) {
	opts := &github.ListOptions{PerPage: githubPerPage}
	var out []string
	for {
		page, resp, err := g.client.Issues.ListLabelsByIssue(ctx, g.owner, g.repo, number, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("github: listing the labels of %s#%d", g.slug(), number), permPullRequestsRead, err)
		}
		for _, l := range page {
			out = append(out, l.GetName())
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// SetPullRequestLabel puts label on pull request number, creating it in
// the repository (with giteaLabelColor) where it lacks it, or takes it
// off, unless it is already so. Gitea matches label names exactly.
func (g *Gitea) SetPullRequestLabel(ctx context.Context, number int, label string, present bool) error {
	if err := checkLabel(KindGitea, number, label); err != nil {
		return err
	}
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	// Gitea answers this call in one page.
	have, resp, err := c.GetIssueLabels(g.owner, g.repo, int64(number), gitea.ListLabelsOptions{})
	if err != nil {
		return g.failOnIssue(c, number, fmt.Sprintf("gitea: listing the labels of %s#%d", g.slug(), number), permPullRequestsRead, resp, err)
	}
	i := slices.IndexFunc(have, func(l *gitea.Label) bool { return l.Name == label })
	switch {
	case present && i < 0:
		what := fmt.Sprintf("gitea: putting label %q on %s#%d", label, g.slug(), number)
		ids, err := g.labelIDs(c, what, []string{label})
		if err != nil {
			return err
		}
		if _, resp, err := c.AddIssueLabels(g.owner, g.repo, int64(number), gitea.IssueLabelsOption{Labels: ids}); err != nil {
			return g.failOnIssue(c, number, what, permPullRequestsWrite, resp, err)
		}
	case !present && i >= 0:
		if resp, err := c.DeleteIssueLabel(g.owner, g.repo, int64(number), have[i].ID); err != nil {
			return g.failOnIssue(c, number, fmt.Sprintf("gitea: taking label %q off %s#%d", label, g.slug(), number), permPullRequestsWrite, resp, err)
		}
	}
	return nil
}
