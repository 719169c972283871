package forge

import (
	"fmt"
	"net/url"
	"strings"
)

// ForRepoURL is the configuration of the forge that serves a repository,
// from its web address, https://host[/prefix]/owner/repo (a github or
// gitea commit-status Provider's address), and a token. GitHub's API is api.github.com for github.com and /api/v3/ of any other
// host, Gitea's is the server's root.
func ForRepoURL(kind, address, token string) (Config, error) {
	u, err := url.Parse(strings.TrimSpace(address))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		// The address may be a secret: never quote it.
		return Config{}, fmt.Errorf("the %s address is not a repository URL (https://host/owner/repo)", kind)
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git"), "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return Config{}, fmt.Errorf("the %s address names no repository (want https://host/owner/repo)", kind)
	}
	cfg := Config{Token: token, Owner: parts[len(parts)-2], Repo: parts[len(parts)-1]}
	root := u.Scheme + "://" + u.Host + "/"
	if prefix := strings.Join(parts[:len(parts)-2], "/"); prefix != "" {
		root += prefix + "/"
	}
	switch kind {
	case "github":
		cfg.Kind = KindGitHub
		if strings.EqualFold(u.Host, "github.com") {
			cfg.APIURL = DefaultGitHubAPIURL
		} else {
			cfg.APIURL = root + "api/v3/"
		}
	case "gitea":
		cfg.Kind, cfg.APIURL = KindGitea, root
	default:
		return Config{}, fmt.Errorf("provider type %q sets no commit statuses", kind)
	}
	return cfg, nil
}
