package inputprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// oci resolves an OCIArtifactTag provider: the tags of spec.url
// (oci://host/repository), filtered, each with its manifest digest. A
// registry is read anonymously, and only when its host is allowed.
func (p *provider) oci(ctx context.Context, opts Options) ([]item, error) {
	raw, ok := strings.CutPrefix(p.url, "oci://")
	if !ok {
		return nil, fmt.Errorf("%s: spec.url %q is not an oci:// address", p.ref, p.url)
	}
	scheme := "https"
	if p.insecure {
		scheme = "http"
	}
	u := &url.URL{Scheme: "oci", Host: strings.SplitN(raw, "/", 2)[0]}
	if p.insecure {
		u.Scheme = "http"
	}
	if !hostAllowed(u, opts.AllowHosts) {
		return nil, p.skip(fmt.Sprintf("the registry %s is not allowed (ferry.yaml: inputProviderAPIs: {allowHosts: [%s]}, read anonymously)", u.Host, hostPort(&url.URL{Scheme: scheme, Host: u.Host})))
	}
	var nopts []name.Option
	if p.insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(raw, nopts...)
	if err != nil {
		return nil, fmt.Errorf("%s: spec.url %q: %w", p.ref, p.url, err)
	}
	// No credentials are given: remote reads anonymously, fetching the
	// anonymous token a registry's challenge asks for.
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(orDefault(opts.Transport)), remote.WithUserAgent("ferry")}
	tags, err := remote.List(repo, ropts...)
	if err != nil {
		return nil, p.ociFail("listing the tags of", err)
	}
	var items []item
	for _, t := range tags {
		items = append(items, item{name: t})
	}
	items, err = p.keep(items)
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		d, err := remote.Head(repo.Tag(it.name), ropts...)
		if err != nil {
			return nil, p.ociFail("reading the digest of tag "+it.name+" of", err)
		}
		items[i].fields = map[string]string{"tag": it.name, "digest": d.Digest.String()}
	}
	return items, nil
}

func orDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}

func (p *provider) ociFail(what string, err error) error {
	status := 0
	var te *transport.Error
	if errors.As(err, &te) {
		status = te.StatusCode
	}
	return p.apiError(what, status, true, err)
}
