package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/origin"
)

// The defaults of SourcesOptions.
const (
	// DefaultIndexTTL is how long a chart repository's index.yaml is
	// trusted before it is fetched again.
	DefaultIndexTTL = 5 * time.Minute
	// DefaultMaxArchiveSize is the largest chart archive fetched (20 MiB,
	// as Helm's own limit on a chart's files).
	DefaultMaxArchiveSize int64 = 20 << 20
)

// Errors a fetch fails with, wrapped in a *FetchError naming the chart;
// test them with errors.Is.
var (
	// ErrUnauthorized: the repository or registry refused the credentials
	// (or asked for some and none were given).
	ErrUnauthorized = errors.New("the registry refused the credentials")
	// ErrNotFound: the repository has no such chart, or no version of it
	// matches.
	ErrNotFound = errors.New("not found")
	// ErrDigestMismatch: the archive fetched is not the one the index or
	// manifest names.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrTooLarge: the archive is larger than SourcesOptions.MaxArchiveSize.
	ErrTooLarge = errors.New("chart archive too large")
	// ErrCorrupt: the archive is not a gzipped tar holding a chart.
	ErrCorrupt = errors.New("corrupt chart archive")
	// ErrUnverified: the OCI artifact's cosign signatures do not satisfy
	// its source's spec.verify (an *ocisig.Error says why).
	ErrUnverified = errors.New("signature verification failed")
	// ErrEscapes: a Folder chart's path leaves the checkout.
	ErrEscapes = errors.New("path escapes the repository root")
)

// FetchError is the error of one chart fetch: which chart, which version
// (as asked, or as resolved once known), and from where (a URL without
// credentials, or a folder path relative to the checkout).
type FetchError struct {
	Chart, Version, Source string
	Err                    error
}

func (e *FetchError) Error() string {
	var b strings.Builder
	b.WriteString("chart ")
	if e.Chart != "" {
		b.WriteString(e.Chart)
	} else {
		b.WriteString(e.Source)
	}
	if e.Version != "" {
		fmt.Fprintf(&b, " version %q", e.Version)
	}
	if e.Chart != "" && e.Source != "" && e.Source != e.Chart { // a chart folder is its own source
		b.WriteString(" from ")
		b.WriteString(e.Source)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *FetchError) Unwrap() error { return e.Err }

// SourcesOptions configure Sources.
type SourcesOptions struct {
	// CacheDir keeps fetched archives (by digest) and repository indexes
	// across runs; empty keeps them in memory only.
	CacheDir string
	// HTTPClient reaches HTTP chart repositories and OCI registries (its
	// Transport); nil is a client with DefaultHTTPTimeout.
	HTTPClient *http.Client
	// IndexTTL is how long an index.yaml (or an OCI repository's tag
	// list) is reused; zero is DefaultIndexTTL.
	IndexTTL time.Duration
	// MaxArchiveSize refuses larger chart archives; zero is
	// DefaultMaxArchiveSize.
	MaxArchiveSize int64
	// Now is the clock the index TTL is measured with; nil is time.Now.
	Now func() time.Time
}

// DefaultHTTPTimeout bounds one request of the default HTTP client.
const DefaultHTTPTimeout = 2 * time.Minute

// Sources fetches charts from their sources through one cache: each chart
// version is fetched at most once per Sources, however many releases ask
// for it and however concurrently. It is safe for concurrent use.
type Sources struct {
	opts  SourcesOptions
	http  *http.Client
	store *store
	now   func() time.Time

	indexes  group[*indexEntry] // repository URL -> index
	tagLists group[*tagList]    // OCI repository -> tags
	charts   group[*Fetched]    // resolved (source, chart, version) -> chart
}

// NewSources returns Sources with opts, defaults filled in.
func NewSources(opts SourcesOptions) *Sources {
	if opts.IndexTTL == 0 {
		opts.IndexTTL = DefaultIndexTTL
	}
	if opts.MaxArchiveSize == 0 {
		opts.MaxArchiveSize = DefaultMaxArchiveSize
	}
	c := opts.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Sources{opts: opts, http: c, store: newStore(opts.CacheDir), now: now}
}

// Fetch resolves src to one chart version and returns it, from the cache
// when it holds it. The Fetched returned may be shared with other callers:
// do not modify its Archive.
func (s *Sources) Fetch(ctx context.Context, src ChartSource) (*Fetched, error) {
	switch src.Kind {
	case HTTPRepository:
		return s.fetchHTTP(ctx, src)
	case OCIRepository:
		return s.fetchOCI(ctx, src)
	case Folder:
		return s.fetchFolder(src)
	default:
		return nil, &FetchError{Chart: src.Chart, Version: src.Version, Source: redact(src.URL), Err: fmt.Errorf("unknown source kind %q", src.Kind)}
	}
}

// constraint is the semver range of version: nil for an exact version
// (or a tag that is no version at all), the newest-of-all range for "" and
// "*". Prereleases match only when the range names one, as in Helm.
func constraint(version string) (*semver.Constraints, error) {
	v := strings.TrimSpace(version)
	if v == "" || v == "*" {
		return semver.NewConstraint("*")
	}
	if !isRange(v) {
		return nil, nil
	}
	c, err := semver.NewConstraint(v)
	if err != nil {
		return nil, fmt.Errorf("invalid version range %q: %w", version, err)
	}
	return c, nil
}

// IsVersionRange reports whether version is a range (Helm's test),
// rather than one version: a HelmRelease pinned to one floats.
func IsVersionRange(version string) bool { return isRange(version) }

// isRange is Helm's test (repo.isVersionRange): does version hold a range
// operator or a wildcard, rather than name one version?
func isRange(version string) bool {
	if strings.ContainsAny(version, "^~<>=!*") || strings.Contains(version, "||") || strings.Contains(version, " - ") {
		return true
	}
	core := version
	if i := strings.IndexAny(version, "-+"); i != -1 {
		core = version[:i]
	}
	return strings.ContainsAny(core, "xX")
}

// newest is the newest of versions that c allows, "" when none does.
// Versions that are no semver are skipped.
func newest(c *semver.Constraints, versions []string) string {
	var best *semver.Version
	var bestRaw string
	for _, raw := range versions {
		v, err := semver.NewVersion(raw)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, bestRaw = v, raw
		}
	}
	return bestRaw
}

// readLimited reads r to its end, refusing more than max bytes.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// digestOf is the archive's digest, sha256:<hex>.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// normalDigest turns an index's digest (bare hex, as helm repo index
// writes it, or sha256:<hex>) into sha256:<hex>.
func normalDigest(d string) string {
	d = strings.ToLower(strings.TrimSpace(d))
	if d == "" || strings.HasPrefix(d, "sha256:") {
		return d
	}
	return "sha256:" + d
}

// maxUnpackedFile is Helm's bound on one file of a chart archive
// (archive.MaxDecompressedFileSize): a small archive must not unpack into
// gigabytes. The whole chart is bounded by limits.chartSize and
// limits.chartFiles.
const maxUnpackedFile int64 = 5 << 20

// maxNestedCharts bounds how deep subchart archives (charts/*.tgz) may
// nest in a chart archive.
const maxNestedCharts = 8

// chartMetadata reads a chart archive to its end, so that a truncated or
// corrupt archive is found here rather than when it is rendered, and
// returns the metadata of its Chart.yaml (the one at the top folder). The
// archive, with the archives of its subcharts (charts/*.tgz, as Helm's
// loader unpacks them), may hold at most limits.ChartFiles files
// unpacking to limits.ChartSize bytes; an archive past them is
// ErrTooLarge, a *budget.Exceeded naming the entry it stopped at.
func chartMetadata(archive []byte, limits budget.Limits) (*chart.Metadata, error) {
	count := &chartCount{limits: limits.Fill()}
	md, err := count.archive(archive, "", 0)
	if err != nil {
		return nil, err
	}
	if md == nil {
		return nil, fmt.Errorf("%w: no Chart.yaml", ErrCorrupt)
	}
	if md.Name == "" || md.Version == "" {
		return nil, fmt.Errorf("%w: Chart.yaml has no name or version", ErrCorrupt)
	}
	return md, nil
}

// chartCount counts the files of a chart and what they unpack to
// against the budgets.
type chartCount struct {
	limits budget.Limits
	files  int
	size   int64
}

// add counts one file, named name, of size bytes (at most maxFile).
func (c *chartCount) add(name string, size, maxFile int64) error {
	c.files++
	c.size += size
	switch {
	case size > maxFile:
		return fmt.Errorf("%w: %s is %d bytes, more than the %s a file of a chart may be", ErrTooLarge, name, size, budget.Size(maxFile))
	case c.files > c.limits.ChartFiles:
		return fmt.Errorf("%w: %w", ErrTooLarge, &budget.Exceeded{What: name, Doing: "the chart has more files than", Limit: "chartFiles", Value: strconv.Itoa(c.limits.ChartFiles)})
	case c.size > c.limits.ChartSize:
		return fmt.Errorf("%w: %w", ErrTooLarge, &budget.Exceeded{What: name, Doing: "the chart unpacks to more than", Limit: "chartSize", Value: budget.Size(c.limits.ChartSize)})
	}
	return nil
}

// archive counts the entries of a gzipped tar (a subchart's when prefix
// names it) and returns its top Chart.yaml's metadata.
func (c *chartCount) archive(b []byte, prefix string, depth int) (*chart.Metadata, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %s%v", ErrCorrupt, prefix, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var md *chart.Metadata
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return md, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s%v", ErrCorrupt, prefix, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if err := c.add(prefix+name, h.Size, maxUnpackedFile); err != nil {
			return nil, err
		}
		parts := strings.Split(name, "/")
		top := len(parts) == 2 && parts[1] == "Chart.yaml" && md == nil
		sub := len(parts) >= 3 && parts[len(parts)-2] == "charts" && strings.HasSuffix(name, ".tgz")
		if !top && !sub {
			if _, err := io.Copy(io.Discard, tr); err != nil {
				return nil, fmt.Errorf("%w: %s%v", ErrCorrupt, prefix, err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s%v", ErrCorrupt, prefix, err)
		}
		if sub {
			if depth >= maxNestedCharts {
				return nil, fmt.Errorf("%w: %s%s: subchart archives nest more than %d deep", ErrTooLarge, prefix, name, maxNestedCharts)
			}
			if _, err := c.archive(data, prefix+name+": ", depth+1); err != nil {
				return nil, err
			}
			continue
		}
		md = new(chart.Metadata)
		if err := yaml.Unmarshal(data, md); err != nil {
			return nil, fmt.Errorf("%w: %s%s: %v", ErrCorrupt, prefix, name, err)
		}
	}
}

// reasonError is an error that is one of the Err* kinds, with its own
// words: "no version matches" reads better than "not found: no version
// matches".
type reasonError struct {
	kind error
	msg  string
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.kind }

// reason is an error of kind, saying format.
func reason(kind error, format string, args ...any) error {
	return &reasonError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// refused is ErrUnauthorized for host's answer status, saying whether
// credentials were sent (never which), or why they were withheld.
func refused(who, host, status string, sent bool, withheld string) error {
	switch {
	case sent:
		return reason(ErrUnauthorized, "the %s refused the credentials (%s answered %s)", who, host, status)
	case withheld != "":
		return reason(ErrUnauthorized, "the %s refused access without credentials (%s answered %s); the source's credentials were withheld: %s", who, host, status, withheld)
	}
	return reason(ErrUnauthorized, "the %s refused access without credentials (%s answered %s); give the source credentials", who, host, status)
}

// Origin is the origin (scheme://host:port) src's repository is reached
// at, the one its Credentials are to be bound to: an HTTP repository's
// URL's; for an OCI registry https, or http when it is insecure
// (src.Insecure, or a loopback or private address, which
// go-containerregistry reaches over plain HTTP).
func (src ChartSource) Origin() (string, error) {
	switch src.Kind {
	case HTTPRepository:
		return origin.Parse(src.URL)
	case OCIRepository:
		repo, _, err := ociRepository(src)
		if err != nil {
			return "", err
		}
		return registryOrigin(repo.Registry)
	}
	return "", fmt.Errorf("a %s source is not reached over the network", src.Kind)
}

// redact is u without the credentials it may hold.
// RedactURL is u without its user information (a URL that does not
// parse is returned as it is).
func RedactURL(u string) string { return redact(u) }

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

// fetched is the Fetched of a chart archive b whose digest is digest,
// read from its metadata; an archive fetched now (not cached) is kept in
// the cache.
func (s *Sources) fetched(b []byte, digest string, cached bool, limits budget.Limits) (*Fetched, error) {
	md, err := chartMetadata(b, limits)
	if err != nil {
		return nil, err
	}
	if !cached {
		if err := s.store.putArchive(b); err != nil {
			return nil, err
		}
	}
	return &Fetched{Name: md.Name, Version: md.Version, Digest: digest, Archive: b}, nil
}
