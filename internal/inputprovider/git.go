package inputprovider

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ferry-ci/ferry/internal/origin"
)

// endpoint is where and how a Git provider's API is called.
type endpoint struct {
	api         string // REST API base
	owner, repo string
	client      *http.Client
	anonymous   bool
}

// git resolves a GitHub or Gitea provider.
func (p *provider) git(ctx context.Context, opts Options) ([]item, error) {
	ep, err := p.endpoint(opts)
	if err != nil {
		return nil, err
	}
	var items []item
	switch p.typ {
	case GitHubPullRequest:
		items, err = p.githubPulls(ctx, ep)
	case GitHubBranch:
		items, err = p.githubBranches(ctx, ep)
	case GitHubTag:
		items, err = p.githubTags(ctx, ep)
	case GiteaPullRequest:
		items, err = p.giteaPulls(ctx, ep)
	case GiteaBranch:
		items, err = p.giteaBranches(ctx, ep)
	case GiteaTag:
		items, err = p.giteaTags(ctx, ep)
	}
	if err != nil {
		return nil, err
	}
	return p.keep(items)
}

// endpoint decides how p's API is reached: through opts.Forge, with its
// token, when p.url is on that forge's server and p's type is of its
// kind; else anonymously when p.url's host is in opts.AllowHosts; else
// not at all.
func (p *provider) endpoint(opts Options) (*endpoint, error) {
	u, err := url.Parse(p.url)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s: spec.url %q is not an http(s) URL", p.ref, p.url)
	}
	kind := KindGitHub
	if strings.HasPrefix(p.typ, "Gitea") {
		kind = KindGitea
	}
	if f := opts.Forge; f != nil && f.Kind == kind && sameOrigin(u, f.ServerURL) {
		owner, repo, err := p.ownerRepo(u, f.ServerURL)
		if err != nil {
			return nil, err
		}
		api := f.APIURL
		if kind == KindGitea {
			api = giteaAPI(f.APIURL)
		}
		bound, err := origin.Parse(api)
		if err != nil {
			return nil, fmt.Errorf("forge API URL: %w", err)
		}
		return &endpoint{api: api, owner: owner, repo: repo, client: client(bearer(opts.Transport, bound, f.Token))}, nil
	}
	if !hostAllowed(u, opts.AllowHosts) {
		return nil, p.skip(fmt.Sprintf("%s is not the forge the job runs on, and its host is not allowed (ferry.yaml: inputProviderAPIs: {allowHosts: [%s]}, read anonymously)", p.url, hostPort(u)))
	}
	server := u.Scheme + "://" + u.Host
	owner, repo, err := p.ownerRepo(u, server)
	if err != nil {
		return nil, err
	}
	api := server
	if kind == KindGitHub {
		api = server + "/api/v3/"
		if strings.EqualFold(u.Hostname(), "github.com") {
			api = "https://api.github.com/"
		}
	}
	return &endpoint{api: api, owner: owner, repo: repo, client: client(bearer(opts.Transport, "", "")), anonymous: true}, nil
}

func client(rt http.RoundTripper) *http.Client {
	return &http.Client{Transport: rt, Timeout: time.Minute}
}

// ownerRepo reads owner/repo from the path of u under server.
func (p *provider) ownerRepo(u *url.URL, server string) (string, string, error) {
	s, _ := url.Parse(server)
	rest := strings.TrimPrefix(strings.Trim(u.Path, "/"), strings.Trim(s.Path, "/"))
	rest = strings.TrimSuffix(strings.Trim(rest, "/"), ".git")
	owner, repo, ok := strings.Cut(rest, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", fmt.Errorf("%s: spec.url %q: %w", p.ref, p.url, errNotRepo)
	}
	return owner, repo, nil
}

// giteaAPI is a Gitea server's root from its root or API URL (the SDK
// adds /api/v1).
func giteaAPI(raw string) string {
	return strings.TrimSuffix(strings.TrimRight(raw, "/"), "/api/v1")
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "http" {
		return u.Host + ":80"
	}
	return u.Host + ":443"
}
