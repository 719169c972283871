package images

import (
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
}

// NewEnvCredentials reads the environment through getenv.
func NewEnvCredentials(getenv func(string) string) *EnvCredentials {
	return &EnvCredentials{getenv: getenv}
}

// Secret returns the credentials standing for a secretRef,
// FERRY_SECRET_<NAME>_USERNAME and _PASSWORD; false when the username is
// not set.
func (c *EnvCredentials) Secret(name string) (Basic, bool) {
	return c.basic(SecretEnv(name))
}

// Registry returns the credentials of a registry or repository host:
// FERRY_REGISTRY_<HOST>_USERNAME and _PASSWORD, else the host's "auths"
// entry in the Docker config.json; false when neither has one.
func (c *EnvCredentials) Registry(host string) (Basic, bool, error) {
	if b, ok := c.basic(RegistryEnv(host)); ok {
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

func (c *EnvCredentials) basic(prefix string) (Basic, bool) {
	u := c.getenv(prefix + "_USERNAME")
	if u == "" {
		return Basic{}, false
	}
	return Basic{Username: u, Password: c.getenv(prefix + "_PASSWORD"), Source: prefix + "_USERNAME/_PASSWORD"}, true
}
