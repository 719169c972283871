package helm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
)

// Versions lists the versions src's chart is offered at, as ferry bump
// reads them: the entries of its repository's index.yaml (HTTP), or the
// tags of its OCI repository that are semantic versions ("_" read as
// "+"). Index entries are returned as written, valid or not, for the
// caller to report the ones that are no version. src.Version is not
// read. Errors are *FetchError, naming the chart and its source.
func (s *Sources) Versions(ctx context.Context, src ChartSource) ([]string, error) {
	switch src.Kind {
	case HTTPRepository:
		base := strings.TrimSuffix(src.URL, "/")
		fail := func(err error) error { return &FetchError{Chart: src.Chart, Source: redact(base), Err: err} }
		if src.Chart == "" {
			return nil, fail(errors.New("no chart name"))
		}
		idx, err := s.index(ctx, base, src)
		if err != nil {
			return nil, fail(err)
		}
		var out []string
		for _, v := range idx.Entries[src.Chart] {
			if v != nil && !v.Removed && v.Version != "" {
				out = append(out, v.Version)
			}
		}
		if len(out) == 0 {
			return nil, fail(reason(ErrNotFound, "the repository's index has no chart %q", src.Chart))
		}
		return out, nil
	case OCIRepository:
		fail := func(err error) error {
			return &FetchError{Chart: ChartName(src), Source: redact(ociArtifact(src)), Err: err}
		}
		repo, _, err := ociRepository(src)
		if err != nil {
			return nil, fail(err)
		}
		acc, err := s.access(ctx, src, repo.Registry)
		if err != nil {
			return nil, fail(err)
		}
		tags, err := s.tags(ctx, repo, acc)
		if err != nil {
			return nil, fail(acc.error(repo.RegistryStr(), repo.String(), err))
		}
		if len(tags) == 0 {
			return nil, fail(reason(ErrNotFound, "the repository has no tag that is a version"))
		}
		return tags, nil
	}
	return nil, &FetchError{Chart: src.Chart, Source: redact(src.URL), Err: errors.New("not a chart repository or OCI repository")}
}

// Metadata is the fetched chart's Chart.yaml (read from its archive, or
// from its folder), within the default budgets.
func (f *Fetched) Metadata() (*chart.Metadata, error) {
	if f.Dir != "" {
		b, err := os.ReadFile(filepath.Join(f.Dir, "Chart.yaml"))
		if err != nil {
			return nil, err
		}
		var md chart.Metadata
		if err := yaml.Unmarshal(b, &md); err != nil {
			return nil, fmt.Errorf("Chart.yaml: %w", err)
		}
		return &md, nil
	}
	return chartMetadata(f.Archive, budget.Limits{}.Fill())
}
