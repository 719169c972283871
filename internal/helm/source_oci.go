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
	"github.com/ferry-ci/ferry/internal/ocisig"
	"github.com/ferry-ci/ferry/internal/origin"
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
	version := src.Version
	if src.Digest != "" {
		version = src.Digest
	}
	fail := func(version string, err error) error {
		return &FetchError{Chart: ChartName(src), Version: version, Source: redact(ociArtifact(src)), Err: err}
	}
	repo, nopts, err := ociRepository(src)
	if err != nil {
		return nil, fail(version, err)
	}
	acc, err := s.access(ctx, src, repo.Registry)
	if err != nil {
		return nil, fail(version, err)
	}

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
			tags, err := s.tags(ctx, repo, acc)
			if err != nil {
				return nil, fail(version, acc.error(repo.RegistryStr(), repo.String(), err))
			}
			if tag = newest(c, tags); tag == "" {
				return nil, fail(version, reason(ErrNotFound, "no tag matches (the repository has %s)", SummarizeVersions(tags)))
			}
			version = tag
		}
		// OCI tags cannot hold "+": Helm pushes 1.0.0+meta as 1.0.0_meta.
		if ref, err = name.NewTag(repo.Name()+":"+strings.ReplaceAll(tag, "+", "_"), nopts...); err != nil {
			return nil, fail(version, err)
		}
	}
	key := strings.Join([]string{string(OCIRepository), ref.String(), acc.key}, "\x00")
	if src.Verify != nil {
		key += "\x00verify " + src.Verify.Key()
	}
	return s.charts.do(ctx, key, nil, func() (*Fetched, error) {
		f, err := s.pull(ctx, ref, acc, src.Verify, src.Limits.Fill())
		if err != nil {
			return nil, fail(version, err)
		}
		return f, nil
	})
}

// ociArtifact is the oci:// reference of src's artifact (its repository
// URL and chart).
func ociArtifact(src ChartSource) string {
	artifact := strings.TrimSuffix(src.URL, "/")
	if src.Chart != "" {
		artifact += "/" + src.Chart
	}
	return artifact
}

// ociRepository is the repository of src's artifact, and the options
// its references are parsed with (plain HTTP when src is insecure).
func ociRepository(src ChartSource) (name.Repository, []name.Option, error) {
	trimmed, ok := strings.CutPrefix(ociArtifact(src), "oci://")
	if !ok {
		return name.Repository{}, nil, errors.New("the repository URL is not an oci:// URL")
	}
	var nopts []name.Option
	if src.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(trimmed, nopts...)
	if err != nil {
		return name.Repository{}, nil, fmt.Errorf("not a repository: %w", err)
	}
	return repo, nopts, nil
}

// registryOrigin is the origin go-containerregistry reaches reg at.
func registryOrigin(reg name.Registry) (string, error) {
	return origin.Join(reg.Scheme(), reg.RegistryStr())
}

// ChartName is the chart's name for messages: the chart, or the last
// element of the artifact's URL.
func ChartName(src ChartSource) string {
	if src.Chart != "" {
		return src.Chart
	}
	u := strings.TrimSuffix(src.URL, "/")
	return u[strings.LastIndex(u, "/")+1:]
}

// ociAccess is how one fetch reads an OCI registry: the options of
// go-containerregistry's calls, whether they carry the source's
// credentials, and a cache key telling them apart.
type ociAccess struct {
	opts     []remote.Option
	sent     bool
	withheld string
	key      string
}

// access is how src's fetch reads the registry reg: with src's
// credentials when they are bound to reg's origin, else anonymously.
// go-containerregistry then sends them to that registry (its host, over
// the scheme it settled on, which it never changes for a redirect to the
// same host) and to the token realm the registry names in its Bearer
// challenge (the Docker registry token flow), and never to another
// origin a request is redirected to (a CDN serving blobs): tested in
// source_creds_test.go.
func (s *Sources) access(ctx context.Context, src ChartSource, reg name.Registry) (ociAccess, error) {
	acc := ociAccess{withheld: src.Withheld}
	auth := authn.Anonymous
	if c := src.Credentials; c != nil {
		o, err := registryOrigin(reg)
		if err != nil {
			return acc, err
		}
		if c.Origin == o {
			auth = &authn.Basic{Username: c.Username, Password: c.Password}
			acc.sent, acc.key = true, c.key()
		}
	}
	rt := s.http.Transport
	if rt == nil {
		rt = remote.DefaultTransport
	}
	acc.opts = []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(rt), remote.WithUserAgent("ferry")}
	return acc, nil
}

// tags lists the repository's tags that are semantic versions, "_" read
// as "+", as Helm's registry client does; kept for the index TTL.
func (s *Sources) tags(ctx context.Context, repo name.Repository, acc ociAccess) ([]string, error) {
	fresh := func(l *tagList) bool { return s.now().Sub(l.at) < s.opts.IndexTTL }
	l, err := s.tagLists.do(ctx, repo.String()+"\x00"+acc.key, fresh, func() (*tagList, error) {
		at := s.now()
		raw, err := remote.List(repo, acc.opts...)
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
// layer from the store when it holds it. With a policy, the manifest's
// signatures are verified first: nothing of an artifact that fails is
// read.
func (s *Sources) pull(ctx context.Context, ref name.Reference, acc ociAccess, policy *ocisig.Policy, limits budget.Limits) (*Fetched, error) {
	repo := ref.Context()
	desc, err := remote.Get(ref, acc.opts...)
	if err != nil {
		return nil, acc.error(repo.RegistryStr(), ref.String(), err)
	}
	if policy != nil {
		if _, err := policy.Verify(ctx, repo.Digest(desc.Digest.String()), acc.opts...); err != nil {
			var refused *ocisig.Error
			if errors.As(err, &refused) {
				return nil, fmt.Errorf("%w: %w", ErrUnverified, err)
			}
			return nil, fmt.Errorf("verifying the signatures of %s: %w", ref, acc.error(repo.RegistryStr(), ref.String(), err))
		}
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
		l, err := remote.Layer(layerRef, acc.opts...)
		if err != nil {
			return nil, acc.error(repo.RegistryStr(), layerRef.String(), err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, acc.error(repo.RegistryStr(), layerRef.String(), err)
		}
		b, err = readLimited(rc, s.opts.MaxArchiveSize)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("pulling the chart layer of %s: %w", ref, acc.error(repo.RegistryStr(), layerRef.String(), err))
		}
		if got := digestOf(b); got != want {
			return nil, fmt.Errorf("%w: the manifest of %s says %s, its chart layer is %s", ErrDigestMismatch, ref, want, got)
		}
	}
	return s.fetched(b, want, cached, limits)
}

// error says what an error of the registry at host means when asked for
// what: a 401 or 403 is the registry refusing the credentials (or access
// without them), a 404 a missing tag, manifest or blob.
func (acc ociAccess) error(host, what string, err error) error {
	var te *transport.Error
	if !errors.As(err, &te) {
		return err
	}
	status := fmt.Sprintf("%d %s", te.StatusCode, http.StatusText(te.StatusCode))
	switch te.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return refused("registry", host, status, acc.sent, acc.withheld)
	case http.StatusNotFound:
		return reason(ErrNotFound, "%s does not exist (%s answered %s)", what, host, status)
	}
	return err
}
