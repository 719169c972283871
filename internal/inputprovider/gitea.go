package inputprovider

import (
	"code.gitea.io/sdk/gitea"
	"context"
)

// giteaPageSize is Gitea's default largest page ([api] MAX_RESPONSE_ITEMS).
const giteaPageSize = 50

func (ep *endpoint) gitea(ctx context.Context) (*gitea.Client, error) {
	return gitea.NewClient(giteaAPI(ep.api),
		gitea.SetHTTPClient(ep.client),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""),
		gitea.SetUserAgent("ferry"),
	)
}

func (p *provider) giteaFail(what string, ep *endpoint, resp *gitea.Response, err error) error {
	status := 0
	if resp != nil && resp.Response != nil {
		status = resp.StatusCode
	}
	return p.apiError(what, status, ep.anonymous, err)
}

// giteaList calls list page by page until a page is short, or MaxLimit.
func giteaList[T any](list func(gitea.ListOptions) ([]T, *gitea.Response, error)) ([]T, *gitea.Response, error) {
	var all []T
	for page := 1; ; page++ {
		got, resp, err := list(gitea.ListOptions{Page: page, PageSize: giteaPageSize})
		if err != nil {
			return nil, resp, err
		}
		all = append(all, got...)
		if len(got) == 0 || resp == nil || resp.NextPage == 0 || len(all) >= MaxLimit {
			return all, resp, nil
		}
	}
}

// giteaPulls lists the open pull requests; the caller sorts them.
func (p *provider) giteaPulls(ctx context.Context, ep *endpoint) ([]item, error) {
	c, err := ep.gitea(ctx)
	if err != nil {
		return nil, err
	}
	prs, resp, err := giteaList(func(lo gitea.ListOptions) ([]*gitea.PullRequest, *gitea.Response, error) {
		return c.ListRepoPullRequests(ep.owner, ep.repo, gitea.ListPullRequestsOptions{ListOptions: lo, State: gitea.StateOpen})
	})
	if err != nil {
		return nil, p.giteaFail("listing the pull requests of", ep, resp, err)
	}
	var out []item
	for _, pr := range prs {
		it := item{number: int(pr.Index), fields: map[string]string{"title": pr.Title}}
		if pr.Head != nil {
			it.name = pr.Head.Ref
			it.fields["branch"] = pr.Head.Ref
			it.fields["sha"] = pr.Head.Sha
		}
		if pr.Poster != nil {
			it.fields["author"] = pr.Poster.UserName
		}
		for _, l := range pr.Labels {
			it.labels = append(it.labels, l.Name)
		}
		out = append(out, it)
	}
	sortNewestFirst(out)
	return out, nil
}

// giteaBranches lists the branches, as the API orders them.
func (p *provider) giteaBranches(ctx context.Context, ep *endpoint) ([]item, error) {
	c, err := ep.gitea(ctx)
	if err != nil {
		return nil, err
	}
	bs, resp, err := giteaList(func(lo gitea.ListOptions) ([]*gitea.Branch, *gitea.Response, error) {
		return c.ListRepoBranches(ep.owner, ep.repo, gitea.ListRepoBranchesOptions{ListOptions: lo})
	})
	if err != nil {
		return nil, p.giteaFail("listing the branches of", ep, resp, err)
	}
	var out []item
	for _, b := range bs {
		sha := ""
		if b.Commit != nil {
			sha = b.Commit.ID
		}
		out = append(out, item{name: b.Name, fields: map[string]string{"branch": b.Name, "sha": sha}})
	}
	return out, nil
}

// giteaTags lists the tags, as the API orders them (newest first).
func (p *provider) giteaTags(ctx context.Context, ep *endpoint) ([]item, error) {
	c, err := ep.gitea(ctx)
	if err != nil {
		return nil, err
	}
	ts, resp, err := giteaList(func(lo gitea.ListOptions) ([]*gitea.Tag, *gitea.Response, error) {
		return c.ListRepoTags(ep.owner, ep.repo, gitea.ListRepoTagsOptions{ListOptions: lo})
	})
	if err != nil {
		return nil, p.giteaFail("listing the tags of", ep, resp, err)
	}
	var out []item
	for _, t := range ts {
		sha := ""
		if t.Commit != nil {
			sha = t.Commit.SHA
		}
		out = append(out, item{name: t.Name, fields: map[string]string{"tag": t.Name, "sha": sha}})
	}
	return out, nil
}
