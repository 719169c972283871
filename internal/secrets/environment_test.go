package secrets_test

import (
	"slices"
	"testing"

	"github.com/ferry-ci/ferry/internal/secrets"
)

func TestFromEnvironment(t *testing.T) {
	env := map[string]string{
		"GITHUB_TOKEN":                    "ghs_token",
		"SOPS_AGE_KEY":                    "# created: 2026-01-01\n# public key: age1public\nAGE-SECRET-KEY-1ONE\n\n AGE-SECRET-KEY-1TWO \n",
		"FERRY_SECRET_HOOK_ADDRESS":       "https://hooks.example.com/T/B/x",
		"FERRY_SECRET_HOOK_USERNAME":      "ci-bot",
		"FERRY_REGISTRY_GHCR_IO_PASSWORD": "reg-pass",
		"FERRY_REGISTRY_GHCR_IO_USERNAME": "acme",
		"HOME":                            "/root",
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	got := secrets.FromEnvironment(func(k string) string { return env[k] }, func() []string { return environ }, "GITHUB_TOKEN")
	for _, want := range []string{"ghs_token", "AGE-SECRET-KEY-1ONE", "AGE-SECRET-KEY-1TWO", "https://hooks.example.com/T/B/x", "reg-pass"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q is not among the secrets %q", want, got)
		}
	}
	for _, public := range []string{"ci-bot", "acme", "/root", "# public key: age1public"} {
		if slices.Contains(got, public) {
			t.Errorf("%q, no secret, is among the secrets", public)
		}
	}
}
