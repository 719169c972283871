package runenv

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/inputprovider"
)

// Token is the forge token: FERRY_TOKEN, else GITHUB_TOKEN, else
// GITEA_TOKEN.
func (e *Env) Token() string {
	for _, k := range []string{"FERRY_TOKEN", "GITHUB_TOKEN", "GITEA_TOKEN"} {
		if v := e.getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// forgeEnv is Getenv with the forge token (see Token) as forge.TokenVar.
func (e *Env) forgeEnv(k string) string {
	if k == forge.TokenVar {
		return e.Token()
	}
	return e.getenv(k)
}

// OpenForge connects to the forge of the Actions run, or the one kind
// names (github or gitea), with the token from Token. What the forge
// returns and is sent is masked.
func (e *Env) OpenForge(kind string) (forge.Forge, error) {
	k, err := forge.ParseKind(kind)
	if err != nil {
		return nil, err
	}
	if e.Step != nil && e.Token() == "" {
		// In a step the token comes from its token input, which ferry's
		// action.yml files default to ${{ github.token }}: empty means the
		// workflow gave an empty value, or the action.yml the runner read
		// declares no such input (it and ferry's image disagree).
		return nil, fmt.Errorf("forge: no token: the step's %s input is empty or not declared by its action.yml (ferry's steps default it to ${{ github.token }}), and FERRY_TOKEN, GITHUB_TOKEN and GITEA_TOKEN are unset", actions.InputToken)
	}
	cfg, err := forge.Detect(e.forgeEnv, k)
	if err != nil {
		return nil, err
	}
	f, err := forge.New(cfg)
	if err != nil {
		return nil, err
	}
	return forge.Masked(f, e.Masker.Mask), nil
}

// inputProviders is how ResourceSetInputProviders' APIs are reached,
// when ferry.yaml allows it: the forge the Actions run is on, with its
// token (detected as OpenForge does; none outside Actions or without a
// token), and other hosts anonymously.
func (e *Env) inputProviders() *inputprovider.Options {
	opts := &inputprovider.Options{}
	cfg, err := forge.Detect(e.forgeEnv, "")
	if err != nil {
		return opts
	}
	f := &inputprovider.Forge{Kind: string(cfg.Kind), APIURL: cfg.APIURL, Token: cfg.Token, ServerURL: cfg.APIURL}
	if cfg.Kind == forge.KindGitHub {
		f.ServerURL = cmp.Or(strings.TrimSpace(e.getenv("GITHUB_SERVER_URL")), "https://github.com")
	}
	opts.Forge = f
	return opts
}

// Sticky keeps blocks, masked, in one comment (or numbered parts, at most
// maxParts) of pull request number on f, marked with key, editing the
// comment a former run left (forge.Sticky).
func (e *Env) Sticky(ctx context.Context, f forge.Forge, key string, number, maxParts int, blocks []string) (forge.SyncResult, error) {
	masked := make([]string, len(blocks))
	for i, b := range blocks {
		masked[i] = e.Masker.Mask(b)
	}
	return forge.Sticky{Key: key, MaxParts: maxParts}.Sync(ctx, f, number, masked)
}
