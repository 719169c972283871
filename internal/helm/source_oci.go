package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/ferry-ci/ferry/internal/budget"
)

// The media types of a Helm chart stored in an OCI registry.
const (
	// ChartLayerMediaType is the layer holding the chart archive.
	ChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// legacyChartLayerMediaType is what charts pushed by Helm 3.0 use.
	legacyChartLayerMediaType = "application/tar+gzip"
)

type tagList struct {
	tags []string
	at   time.Time
}

// fetchOCI resolves src to one artifact of its repository (by digest, by
// the newest tag a range allows, or by tag) and pulls its chart layer.
func (s *Sources) fetchOCI(ctx context.Context, src ChartSource) (*Fetched, error) {
	artifact := strings.TrimSuffix(src.URL, "/")
	if src.Chart != "" {
		artifact += "/" + src.Chart
	}
	version := src.Version
	if src.Digest != "" {
		version = src.Digest
	}
	fail := func(version string, err error) error {
		return &FetchError{Chart: chartName(src), Version: version, Source: redact(artifact), Err: err}
	}
	trimmed, ok := strings.CutPrefix(artifact, "oci://")
	if !ok {
		return nil, fail(version, errors.New("the repository URL is not an oci:// URL"))
	}
	var nopts []name.Option
	if src.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(trimmed, nopts...)
	if err != nil {
		return nil, fail(version, fmt.Errorf("not a repository: %w", err))
	}
	ropts := s.remoteOptions(ctx, src.Credentials)

	var ref name.Reference
	switch {
	case src.Digest != "":
		if ref, err = name.NewDigest(repo.Name()+"@"+src.Digest, nopts...); err != nil {
			return nil, fail(version, err)
		}
	default:
		c, err := constraint(src.Version)
		if err != nil {
			return nil, fail(version, err)
		}
		tag := src.Version
		if c != nil {
			tags, err := s.tags(ctx, repo, ropts)
			if err != nil {
				return nil, fail(version, registryError(repo.RegistryStr(), repo.String(), src.Credentials, err))
			}
			if tag = newest(c, tags); tag == "" {
				return nil, fail(version, reason(ErrNotFound, "no tag matches (the repository has %s)", summarize(tags)))
			}
			version = tag
		}
		// OCI tags cannot hold "+": Helm pushes 1.0.0+meta as 1.0.0_meta.
		if ref, err = name.NewTag(repo.Name()+":"+strings.ReplaceAll(tag, "+", "_"), nopts...); err != nil {
			return nil, fail(version, err)
		}
	}
	key := strings.Join([]string{string(OCIRepository), ref.String()}, "\x00")
	return s.charts.do(ctx, key, nil, func() (*Fetched, error) {
		f, err := s.pull(ref, src.Credentials, ropts, src.Limits.Fill())
		if err != nil {
			return nil, fail(version, err)
		}
		return f, nil
	})
}

// chartName is the chart's name for messages: the chart, or the last
// element of the artifact's URL.
func chartName(src ChartSource) string {
	if src.Chart != "" {
		return src.Chart
	}
	u := strings.TrimSuffix(src.URL, "/")
	return u[strings.LastIndex(u, "/")+1:]
}

func (s *Sources) remoteOptions(ctx context.Context, creds *Credentials) []remote.Option {
	auth := authn.Anonymous
	if creds != nil {
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password}
	}
	rt := s.http.Transport
	if rt == nil {
		rt = remote.DefaultTransport
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(rt), remote.WithUserAgent("ferry")}
}

// tags lists the repository's tags that are semantic versions, "_" read
// as "+", as Helm's registry client does; kept for the index TTL.
func (s *Sources) tags(ctx context.Context, repo name.Repository, ropts []remote.Option) ([]string, error) {
	fresh := func(l *tagList) bool { return s.now().Sub(l.at) < s.opts.IndexTTL }
	l, err := s.tagLists.do(ctx, repo.String(), fresh, func() (*tagList, error) {
		at := s.now()
		raw, err := remote.List(repo, ropts...)
		if err != nil {
			return nil, err
		}
		var tags []string
		for _, t := range raw {
			t = strings.ReplaceAll(t, "_", "+")
			if _, err := semver.StrictNewVersion(t); err == nil {
				tags = append(tags, t)
			}
		}
		return &tagList{tags: tags, at: at}, nil
	})
	if err != nil {
		return nil, err
	}
	return l.tags, nil
}

// pull fetches the manifest of ref and its chart layer, or takes the
// layer from the store when it holds it.
func (s *Sources) pull(ref name.Reference, creds *Credentials, ropts []remote.Option, limits budget.Limits) (*Fetched, error) {
	repo := ref.Context()
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return nil, registryError(repo.RegistryStr(), ref.String(), creds, err)
	}
	if desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s is an image index, not a Helm chart", ref)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", ref, err)
	}
	var layer *v1.Descriptor
	for i, l := range m.Layers {
		if l.MediaType == types.MediaType(ChartLayerMediaType) || (layer == nil && l.MediaType == legacyChartLayerMediaType) {
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return nil, fmt.Errorf("%s has no Helm chart layer (%s)", ref, ChartLayerMediaType)
	}
	if layer.Size > s.opts.MaxArchiveSize {
		return nil, fmt.Errorf("%w: the chart layer of %s is %d bytes, more than %d", ErrTooLarge, ref, layer.Size, s.opts.MaxArchiveSize)
	}
	want := layer.Digest.String()
	b, cached := s.store.archive(want)
	if !cached {
		layerRef := repo.Digest(want)
		l, err := remote.Layer(layerRef, ropts...)
		if err != nil {
			return nil, registryError(repo.RegistryStr(), layerRef.String(), creds, err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, registryError(repo.RegistryStr(), layerRef.String(), creds, err)
		}
		b, err = readLimited(rc, s.opts.MaxArchiveSize)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("pulling the chart layer of %s: %w", ref, registryError(repo.RegistryStr(), layerRef.String(), creds, err))
		}
		if got := digestOf(b); got != want {
			return nil, fmt.Errorf("%w: the manifest of %s says %s, its chart layer is %s", ErrDigestMismatch, ref, want, got)
		}
	}
	return s.fetched(b, want, cached, limits)
}

// registryError says what an error of the registry at host means when
// asked for what: a 401 or 403 is the registry refusing the credentials,
// a 404 a missing tag, manifest or blob.
func registryError(host, what string, creds *Credentials, err error) error {
	var te *transport.Error
	if !errors.As(err, &te) {
		return err
	}
	status := fmt.Sprintf("%d %s", te.StatusCode, http.StatusText(te.StatusCode))
	switch te.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return refused("registry", host, status, creds)
	case http.StatusNotFound:
		return reason(ErrNotFound, "%s does not exist (%s answered %s)", what, host, status)
	}
	return err
}
