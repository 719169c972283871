package inputprovider

import (
	"context"
	"errors"

	"github.com/google/go-github/v88/github"
)

// githubPerPage is GitHub's largest page.
const githubPerPage = 100

func (ep *endpoint) github() (*github.Client, error) {
	api := ep.api
	return github.NewClient(github.WithHTTPClient(ep.client), github.WithURLs(&api, nil), github.WithUserAgent("ferry"))
}

func (p *provider) githubFail(what string, ep *endpoint, err error) error {
	status := 0
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		status = er.Response.StatusCode
	}
	return p.apiError(what, status, ep.anonymous, err)
}

// githubPulls lists the open pull requests, newest first.
func (p *provider) githubPulls(ctx context.Context, ep *endpoint) ([]item, error) {
	c, err := ep.github()
	if err != nil {
		return nil, err
	}
	opt := &github.PullRequestListOptions{State: "open", Sort: "created", Direction: "desc", ListOptions: github.ListOptions{PerPage: githubPerPage}}
	var out []item
	for {
		prs, resp, err := c.PullRequests.List(ctx, ep.owner, ep.repo, opt)
		if err != nil {
			return nil, p.githubFail("listing the pull requests of", ep, err)
		}
		for _, pr := range prs {
			it := item{number: pr.GetNumber(), name: pr.GetHead().GetRef(), fields: map[string]string{
				"sha":    pr.GetHead().GetSHA(),
				"branch": pr.GetHead().GetRef(),
				"author": pr.GetUser().GetLogin(),
				"title":  pr.GetTitle(),
			}}
			for _, l := range pr.Labels {
				it.labels = append(it.labels, l.GetName())
			}
			out = append(out, it)
		}
		if resp.NextPage == 0 || len(out) >= MaxLimit {
			sortNewestFirst(out)
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// githubBranches lists the branches, as the API orders them (by name).
func (p *provider) githubBranches(ctx context.Context, ep *endpoint) ([]item, error) {
	c, err := ep.github()
	if err != nil {
		return nil, err
	}
	opt := &github.BranchListOptions{ListOptions: github.ListOptions{PerPage: githubPerPage}}
	var out []item
	for {
		bs, resp, err := c.Repositories.ListBranches(ctx, ep.owner, ep.repo, opt)
		if err != nil {
			return nil, p.githubFail("listing the branches of", ep, err)
		}
		for _, b := range bs {
			out = append(out, item{name: b.GetName(), fields: map[string]string{"branch": b.GetName(), "sha": b.GetCommit().GetSHA()}})
		}
		if resp.NextPage == 0 || len(out) >= MaxLimit {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// githubTags lists the tags, as the API orders them.
func (p *provider) githubTags(ctx context.Context, ep *endpoint) ([]item, error) {
	c, err := ep.github()
	if err != nil {
		return nil, err
	}
	opt := &github.ListOptions{PerPage: githubPerPage}
	var out []item
	for {
		ts, resp, err := c.Repositories.ListTags(ctx, ep.owner, ep.repo, opt)
		if err != nil {
			return nil, p.githubFail("listing the tags of", ep, err)
		}
		for _, t := range ts {
			out = append(out, item{name: t.GetName(), fields: map[string]string{"tag": t.GetName(), "sha": t.GetCommit().GetSHA()}})
		}
		if resp.NextPage == 0 || len(out) >= MaxLimit {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}
