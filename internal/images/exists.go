package images

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Existence is whether an image reference exists in its registry.
type Existence int

const (
	// Unknown: not asked (no credentials for its registry, a reference
	// that does not parse) or no clear answer (refused, unreachable).
	Unknown Existence = iota
	Exists
	Missing
)

// Checker asks registries whether image references exist, one manifest
// HEAD per reference and run, and only registries the run has
// credentials for (its FERRY_REGISTRY_<HOST>_* variables or Docker
// config): which registries a pull request's diff contacts is the step's
// to say, not the pull request's, and a fork's run, which has none,
// contacts none.
type Checker struct {
	creds *EnvCredentials
	rt    http.RoundTripper
	// insecure are registries reached over plain HTTP.
	insecure []string

	mu    sync.Mutex
	cache map[string]*existsCall
}

type existsCall struct {
	once sync.Once
	got  Existence
}

// NewChecker is a Checker of the run's credentials; rt nil is
// remote.DefaultTransport. insecure lists hosts reached over plain HTTP.
func NewChecker(creds *EnvCredentials, rt http.RoundTripper, insecure []string) *Checker {
	if rt == nil {
		rt = remote.DefaultTransport
	}
	return &Checker{creds: creds, rt: rt, insecure: insecure, cache: map[string]*existsCall{}}
}

// Exists says whether ref exists in its registry.
func (c *Checker) Exists(ctx context.Context, ref string) Existence {
	c.mu.Lock()
	call := c.cache[ref]
	if call == nil {
		call = &existsCall{}
		c.cache[ref] = call
	}
	c.mu.Unlock()
	call.once.Do(func() { call.got = c.ask(ctx, ref) })
	return call.got
}

func (c *Checker) ask(ctx context.Context, ref string) Existence {
	if c == nil || c.creds == nil {
		return Unknown
	}
	var opts []name.Option
	if r, err := name.ParseReference(ref); err == nil {
		for _, h := range c.insecure {
			if r.Context().RegistryStr() == h {
				opts = append(opts, name.Insecure)
			}
		}
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return Unknown
	}
	b, ok, err := c.creds.Registry(r.Context().RegistryStr(), nil)
	if err != nil || !ok {
		return Unknown
	}
	_, err = remote.Head(r, remote.WithContext(ctx), remote.WithTransport(c.rt), remote.WithUserAgent("ferry"),
		remote.WithAuth(&authn.Basic{Username: b.Username, Password: b.Password}))
	var te *transport.Error
	switch {
	case err == nil:
		return Exists
	case errors.As(err, &te) && te.StatusCode == http.StatusNotFound:
		return Missing
	}
	return Unknown
}
