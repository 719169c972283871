package forge

import (
	"errors"
	"fmt"
	"strings"
)

// TokenVar is the variable Detect reads the forge token from, through the
// getenv its caller passes. GitHub Actions does not export the workflow
// token by itself: the step passes `${{ github.token }}` (or a personal
// token) in its env. A caller holding the token from elsewhere (a step
// input) overrides it in the getenv it hands over.
const TokenVar = "GITHUB_TOKEN"

// New returns the forge cfg describes.
func New(cfg Config) (Forge, error) {
	switch cfg.Kind {
	case KindGitHub:
		return NewGitHub(cfg)
	case KindGitea:
		return NewGitea(cfg)
	case "":
		return nil, errors.New("forge: no forge kind given (github or gitea)")
	}
	return nil, fmt.Errorf("forge: unknown forge kind %q (want github or gitea)", cfg.Kind)
}

// ParseKind reads a forge kind as a user types it (--forge).
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case KindGitHub, KindGitea, "":
		return k, nil
	}
	return "", fmt.Errorf("forge: unknown forge %q (want github or gitea)", s)
}

func (cfg Config) check() error {
	switch {
	case cfg.Owner == "" || cfg.Repo == "":
		return fmt.Errorf("forge: no repository given (owner %q, name %q)", cfg.Owner, cfg.Repo)
	case cfg.Token == "":
		return fmt.Errorf("forge: no token given for %s/%s", cfg.Owner, cfg.Repo)
	}
	return nil
}

// Detect works out the forge of the Actions run described by getenv: Gitea
// when GITEA_ACTIONS=true (or Forgejo's FORGEJO_ACTIONS=true), else GitHub
// when GITHUB_SERVER_URL or GITHUB_API_URL is set; override, when not
// empty, wins. The repository
// comes from GITHUB_REPOSITORY ("owner/name", which Gitea Actions sets too),
// the token from TokenVar. GitHub's API URL is GITHUB_API_URL (github.com's
// API when unset and the server is github.com, <server>/api/v3/ for an
// Enterprise server); Gitea's is its root URL, GITHUB_SERVER_URL.
func Detect(getenv func(string) string, override Kind) (Config, error) {
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	kind := override
	switch {
	case kind != "":
		if kind != KindGitHub && kind != KindGitea {
			return Config{}, fmt.Errorf("forge: unknown forge %q (want github or gitea)", kind)
		}
	case strings.EqualFold(env("GITEA_ACTIONS"), "true") || strings.EqualFold(env("FORGEJO_ACTIONS"), "true"):
		kind = KindGitea
	case env("GITHUB_SERVER_URL") != "" || env("GITHUB_API_URL") != "":
		kind = KindGitHub
	default:
		return Config{}, errors.New("forge: cannot tell the forge: GITEA_ACTIONS, GITHUB_SERVER_URL and GITHUB_API_URL are all unset (not in GitHub or Gitea Actions? name the forge explicitly)")
	}

	cfg := Config{Kind: kind}
	switch kind {
	case KindGitHub:
		cfg.APIURL = env("GITHUB_API_URL")
		if cfg.APIURL == "" {
			server := strings.TrimRight(env("GITHUB_SERVER_URL"), "/")
			if server == "" || server == "https://github.com" {
				cfg.APIURL = DefaultGitHubAPIURL
			} else {
				cfg.APIURL = server + "/api/v3/"
			}
		}
	case KindGitea:
		cfg.APIURL = env("GITHUB_SERVER_URL")
		if cfg.APIURL == "" {
			// Gitea Actions sets GITHUB_API_URL to <root>/api/v1.
			if api := strings.TrimRight(env("GITHUB_API_URL"), "/"); strings.HasSuffix(api, "/api/v1") {
				cfg.APIURL = strings.TrimSuffix(api, "/api/v1")
			}
		}
		if cfg.APIURL == "" {
			return Config{}, errors.New("forge: GITHUB_SERVER_URL is not set: it must hold the Gitea server's root URL")
		}
	}

	repo := env("GITHUB_REPOSITORY")
	if repo == "" {
		return Config{}, errors.New("forge: GITHUB_REPOSITORY is not set: it must name the repository as owner/name")
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return Config{}, fmt.Errorf("forge: GITHUB_REPOSITORY is %q, want owner/name", repo)
	}
	cfg.Owner, cfg.Repo = owner, name

	cfg.Token = env(TokenVar)
	if cfg.Token == "" {
		return Config{}, fmt.Errorf("forge: %s is not set: pass the workflow token to the step (env: %s: ${{ github.token }})", TokenVar, TokenVar)
	}
	return cfg, nil
}
