package helm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/origin"
)

// maxIndexSize bounds an index.yaml: the largest public ones (every
// version of hundreds of charts) are tens of MiB.
const maxIndexSize int64 = 256 << 20

// repoIndex is what ferry reads of a chart repository's index.yaml.
type repoIndex struct {
	APIVersion string                       `json:"apiVersion"`
	Entries    map[string][]*indexedVersion `json:"entries"`
}

type indexedVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
	Removed bool     `json:"removed"`
}

type indexEntry struct {
	index *repoIndex
	at    time.Time
}

// fetchHTTP resolves src.Version in the repository's index and fetches
// that version's archive.
func (s *Sources) fetchHTTP(ctx context.Context, src ChartSource) (*Fetched, error) {
	base := strings.TrimSuffix(src.URL, "/")
	fail := func(version string, err error) error {
		return &FetchError{Chart: src.Chart, Version: version, Source: redact(base), Err: err}
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fail(src.Version, errors.New("the repository URL is not an http:// or https:// URL"))
	}
	if src.Chart == "" {
		return nil, fail(src.Version, errors.New("no chart name"))
	}
	c, err := constraint(src.Version)
	if err != nil {
		return nil, fail(src.Version, err)
	}
	idx, err := s.index(ctx, base, src)
	if err != nil {
		return nil, fail(src.Version, err)
	}
	cv, err := pick(idx, src.Chart, src.Version, c)
	if err != nil {
		return nil, fail(src.Version, err)
	}
	key := strings.Join([]string{string(HTTPRepository), redact(base), src.Credentials.key(), src.Chart, cv.Version}, "\x00")
	return s.charts.do(ctx, key, nil, func() (*Fetched, error) {
		f, err := s.download(ctx, u, cv, src, src.Limits.Fill())
		if err != nil {
			return nil, &FetchError{Chart: src.Chart, Version: cv.Version, Source: redact(base), Err: err}
		}
		return f, nil
	})
}

// pick is the version of chart the index offers for version: with a
// range c, the newest version c allows; for an exact version, that version
// (or, as Helm does, the newest equal to it as semver, such as v1.2.3 for
// 1.2.3).
func pick(idx *repoIndex, chart, version string, c *semver.Constraints) (*indexedVersion, error) {
	var offered []*indexedVersion
	for _, v := range idx.Entries[chart] {
		if v != nil && !v.Removed && v.Version != "" {
			offered = append(offered, v)
		}
	}
	if len(offered) == 0 {
		return nil, reason(ErrNotFound, "the repository's index has no chart %q", chart)
	}
	if c == nil {
		for _, v := range offered {
			if v.Version == version {
				return v, nil
			}
		}
		var err error
		if c, err = semver.NewConstraint("=" + version); err != nil {
			return nil, reason(ErrNotFound, "the index has no version %q", version)
		}
	}
	versions := make([]string, len(offered))
	for i, v := range offered {
		versions[i] = v.Version
	}
	best := newest(c, versions)
	if best == "" {
		return nil, reason(ErrNotFound, "no version matches (the index has %s)", SummarizeVersions(versions))
	}
	return offered[slices.Index(versions, best)], nil
}

// SummarizeVersions names the newest few of versions, for an error
// message: "2.0.0, 1.9.0, ... and 12 older".
func SummarizeVersions(versions []string) string {
	vs := slices.Clone(versions)
	slices.SortFunc(vs, func(a, b string) int {
		va, ea := semver.NewVersion(a)
		vb, eb := semver.NewVersion(b)
		switch {
		case ea != nil || eb != nil:
			return strings.Compare(b, a)
		default:
			return vb.Compare(va)
		}
	})
	const shown = 5
	if len(vs) > shown {
		return strings.Join(vs[:shown], ", ") + fmt.Sprintf(" and %d older", len(vs)-shown)
	}
	return strings.Join(vs, ", ")
}

// index is the repository's index, from memory or the store while it is
// younger than the TTL, else fetched. An index fetched with credentials
// is kept for the same credentials only.
func (s *Sources) index(ctx context.Context, base string, src ChartSource) (*repoIndex, error) {
	key := redact(base)
	if k := src.Credentials.key(); k != "" {
		key += "\x00" + k
	}
	fresh := func(e *indexEntry) bool { return s.now().Sub(e.at) < s.opts.IndexTTL }
	e, err := s.indexes.do(ctx, key, fresh, func() (*indexEntry, error) {
		if b, at, ok := s.store.index(key); ok && s.now().Sub(at) < s.opts.IndexTTL {
			if idx, err := parseIndex(b); err == nil {
				return &indexEntry{index: idx, at: at}, nil
			}
		}
		at := s.now()
		b, err := s.get(ctx, base+"/index.yaml", src, maxIndexSize)
		if err != nil {
			return nil, fmt.Errorf("fetching the repository index: %w", err)
		}
		idx, err := parseIndex(b)
		if err != nil {
			return nil, err
		}
		if err := s.store.putIndex(key, b, at); err != nil {
			return nil, err
		}
		return &indexEntry{index: idx, at: at}, nil
	})
	if err != nil {
		return nil, err
	}
	return e.index, nil
}

func parseIndex(b []byte) (*repoIndex, error) {
	var idx repoIndex
	if err := yaml.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("reading the repository index: %w", err)
	}
	if idx.APIVersion == "" {
		return nil, errors.New("reading the repository index: no apiVersion (is it an index.yaml?)")
	}
	return &idx, nil
}

// download fetches the archive of cv, or takes it from the store when the
// index names its digest and the store holds it (the index, fetched with
// the source's credentials, vouches for it).
func (s *Sources) download(ctx context.Context, base *url.URL, cv *indexedVersion, src ChartSource, limits budget.Limits) (*Fetched, error) {
	want := normalDigest(cv.Digest)
	b, cached := s.store.archive(want)
	if !cached {
		if len(cv.URLs) == 0 {
			return nil, errors.New("the index gives no URL for this version")
		}
		ref, err := url.Parse(cv.URLs[0])
		if err != nil {
			return nil, fmt.Errorf("the index's URL for this version: %w", err)
		}
		// Relative URLs are relative to the repository URL as a folder.
		dir := *base
		dir.Path = strings.TrimSuffix(dir.Path, "/") + "/"
		dir.RawPath = ""
		at := dir.ResolveReference(ref)
		// The credentials go with it only when it is at their origin (as
		// Helm does unless told to pass them on): see get.
		if b, err = s.get(ctx, at.String(), src, s.opts.MaxArchiveSize); err != nil {
			return nil, fmt.Errorf("fetching %s: %w", redact(at.String()), err)
		}
		if got := digestOf(b); want != "" && got != want {
			return nil, fmt.Errorf("%w: the index says %s, %s is %s", ErrDigestMismatch, want, redact(at.String()), got)
		}
	}
	return s.fetched(b, digestOf(b), cached, limits)
}

// get reads u, refusing a body larger than max. The source's credentials
// go with every request to their origin, u or a redirect, and with no
// other (origin.Basic).
func (s *Sources) get(ctx context.Context, u string, src ChartSource, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "ferry")
	resp, err := s.client(src.Credentials).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		creds := src.Credentials
		sent := creds != nil && origin.Matches(creds.Origin, resp.Request.URL)
		return nil, refused("repository", resp.Request.URL.Host, resp.Status, sent, src.Withheld)
	case resp.StatusCode == http.StatusNotFound:
		return nil, reason(ErrNotFound, "%s answered %s", resp.Request.URL.Host, resp.Status)
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("%s answered %s", resp.Request.URL.Host, resp.Status)
	}
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %s bytes, more than %d", ErrTooLarge, strconv.FormatInt(resp.ContentLength, 10), max)
	}
	return readLimited(resp.Body, max)
}

// client is the HTTP client of a source with creds: the Sources' own,
// with a transport that sends creds to their origin only.
func (s *Sources) client(creds *Credentials) *http.Client {
	if creds == nil {
		return s.http
	}
	c := *s.http
	c.Transport = origin.Basic(s.http.Transport, creds.Origin, creds.Username, creds.Password)
	return &c
}
