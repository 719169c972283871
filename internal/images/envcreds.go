package images

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
)

// EnvCredentials finds credentials in the environment as
// CredentialsFromEnv does, one secretRef or host at a time, for callers
// that learn them as they go (the chart sources of HelmReleases). It is
// safe for concurrent use; the Docker config is read once, when first
// needed.
type EnvCredentials struct {
	getenv func(string) string

	once   sync.Once
	docker map[string]authn.AuthConfig
	err    error

	mu       sync.Mutex
	warnings []string
}

// NewEnvCredentials reads the environment through getenv.
func NewEnvCredentials(getenv func(string) string) *EnvCredentials {
	return &EnvCredentials{getenv: getenv}
}

// Secret returns the credentials standing for a secretRef,
// FERRY_SECRET_<NAME>_USERNAME and _PASSWORD (see SecretEnv); false when
// the username is not set. known lists the Secret names the run's
// configuration names, asked for only when the variables of the former
// spelling may be read.
func (c *EnvCredentials) Secret(name string, known func() []string) (Basic, bool) {
	return c.lookup(secretPrefix, "Secret", name, known)
}

// Registry returns the credentials of a registry or repository host:
// FERRY_REGISTRY_<HOST>_USERNAME and _PASSWORD (see RegistryEnv), else
// the host's "auths" entry in the Docker config.json; false when neither
// has one. known lists the hosts the run's configuration names, asked
// for only when the variables of the former spelling may be read.
func (c *EnvCredentials) Registry(host string, known func() []string) (Basic, bool, error) {
	if b, ok := c.lookup(registryPrefix, "host", strings.ToLower(host), known); ok {
		return b, true, nil
	}
	c.once.Do(func() {
		var data []byte
		if data, c.err = readDockerConfig(c.getenv); c.err == nil {
			c.docker, c.err = parseDockerConfig(data)
		}
	})
	if c.err != nil {
		return Basic{}, false, c.err
	}
	a, ok := c.docker[canonicalHost(host)]
	if !ok || a.Username == "" {
		return Basic{}, false, nil
	}
	return Basic{Username: a.Username, Password: a.Password, Source: "docker config.json"}, true, nil
}

// Warnings are the deprecation warnings of the lookups so far (a
// variable of the former spelling read, or left unread as ambiguous),
// sorted, each once; for the caller to print.
func (c *EnvCredentials) Warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.warnings)
	slices.Sort(out)
	return slices.Compact(out)
}

// lookup reads the variables of name under prefix: those of today's
// spelling, else those of the former one (see legacyFor), noting a
// warning either way the former is set.
func (c *EnvCredentials) lookup(prefix, what, name string, known func() []string) (Basic, bool) {
	b, ok, warning := lookupEnv(c.getenv, prefix, what, name, known)
	if warning != "" {
		c.mu.Lock()
		c.warnings = append(c.warnings, warning)
		c.mu.Unlock()
	}
	return b, ok
}

// lookupEnv is EnvCredentials.lookup, through getenv, returning its
// warning.
func lookupEnv(getenv func(string) string, prefix, what, name string, known func() []string) (Basic, bool, string) {
	spelled, ok := envName(name)
	if !ok {
		return Basic{}, false, ""
	}
	if b, ok := basicEnv(getenv, prefix+spelled); ok {
		return b, true, ""
	}
	legacy := legacyEnvName(name)
	if legacy == spelled || getenv(prefix+legacy+"_USERNAME") == "" {
		return Basic{}, false, ""
	}
	var others []string
	if known != nil {
		others = known()
	}
	if other := clash(name, others); other != "" {
		return Basic{}, false, fmt.Sprintf("%s%s_USERNAME is not read for %s %s: that former spelling also stands for %s %s; name the variables of %s %s%s_USERNAME and _PASSWORD",
			prefix, legacy, what, name, what, other, name, prefix, spelled)
	}
	b, ok := basicEnv(getenv, prefix+legacy)
	return b, ok, fmt.Sprintf("%s%s_USERNAME and _PASSWORD are the former spelling for %s %s, read while no other %s spells the same way; rename them %s%s_USERNAME and _PASSWORD",
		prefix, legacy, what, name, what, prefix, spelled)
}

// basicEnv reads prefix_USERNAME and prefix_PASSWORD; false when the
// username is not set.
func basicEnv(getenv func(string) string, prefix string) (Basic, bool) {
	u := getenv(prefix + "_USERNAME")
	if u == "" {
		return Basic{}, false
	}
	return Basic{Username: u, Password: getenv(prefix + "_PASSWORD"), Source: prefix + "_USERNAME/_PASSWORD"}, true
}

// SecretValue is the variable standing for one key of a Secret,
// FERRY_SECRET_<NAME>_<KEY> (see SecretKeyEnv); false when it is unset
// or empty.
func (c *EnvCredentials) SecretValue(name, key string) (string, bool) {
	v, ok := SecretKeyEnv(name, key)
	if !ok {
		return "", false
	}
	val := c.getenv(v)
	return val, val != ""
}
