package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"
)

// LoadedCharts keeps each fetched chart loaded once, by the digest of its
// archive or the path of its folder, however many releases render it.
// Safe for concurrent use. Keep one for the renders of one checkout: a
// folder chart is not loaded again when its files change.
type LoadedCharts struct {
	mu     sync.Mutex
	charts map[string]*loadedChart
}

type loadedChart struct {
	once  sync.Once
	chart *chart.Chart
	err   error
}

// NewLoadedCharts returns an empty cache of loaded charts.
func NewLoadedCharts() *LoadedCharts {
	return &LoadedCharts{charts: map[string]*loadedChart{}}
}

// Len is the number of charts loaded (or that failed to load).
func (c *LoadedCharts) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.charts)
}

// load returns f's chart, loaded once per key; callers clone it before
// rendering. A nil cache loads every time.
func (c *LoadedCharts) load(f *Fetched) (*chart.Chart, error) {
	if c == nil {
		return loadFetched(f)
	}
	key := fetchedKey(f)
	c.mu.Lock()
	e, ok := c.charts[key]
	if !ok {
		e = &loadedChart{}
		c.charts[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.chart, e.err = loadFetched(f) })
	return e.chart, e.err
}

func fetchedKey(f *Fetched) string {
	switch {
	case len(f.Archive) > 0 && f.Digest != "":
		return f.Digest
	case len(f.Archive) > 0:
		sum := sha256.Sum256(f.Archive)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return "dir:" + f.Dir
}

func loadFetched(f *Fetched) (*chart.Chart, error) {
	switch {
	case len(f.Archive) > 0:
		return loader.LoadArchive(bytes.NewReader(f.Archive))
	case f.Dir != "":
		return loader.LoadDir(f.Dir)
	}
	return nil, errors.New("neither an archive nor a folder")
}

// chartValuesFiles merges valuesFiles in order into the values that
// replace the chart's values.yaml, as source-controller packages a chart
// for a HelmRelease: the chart's values.yaml is only part of them when
// listed. Paths are relative to the chart, or for a folder chart to
// valuesRoot when given (the source's root).
func chartValuesFiles(ch *chart.Chart, f *Fetched, t *ChartTemplate, valuesRoot string) (map[string]any, error) {
	var root *os.Root
	if len(f.Archive) == 0 && f.Dir != "" {
		dir := f.Dir
		if valuesRoot != "" {
			dir = valuesRoot
		}
		var err error
		if root, err = os.OpenRoot(dir); err != nil {
			return nil, fmt.Errorf("values files: %w", err)
		}
		defer root.Close()
	}
	merged := map[string]any{}
	for _, p := range t.ValuesFiles {
		var (
			vals map[string]any
			data []byte
			err  error
		)
		clean := path.Clean(filepath.ToSlash(p))
		switch {
		case root != nil:
			data, err = root.ReadFile(filepath.FromSlash(clean))
			if errors.Is(err, fs.ErrNotExist) {
				data, err = nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("values file %s: %w", p, err)
			}
		case clean == "values.yaml":
			vals = ch.Values
		default:
			for _, file := range ch.Files {
				if file.Name == clean {
					data = file.Data
					break
				}
			}
		}
		if vals == nil && data == nil {
			if t.IgnoreMissingValuesFiles {
				continue
			}
			return nil, fmt.Errorf("no values file %s in the chart's source", p)
		}
		if vals == nil {
			vals = map[string]any{}
			if err := yaml.Unmarshal(data, &vals); err != nil {
				return nil, fmt.Errorf("values file %s: %w", p, err)
			}
		}
		merged = loader.MergeMaps(merged, vals)
	}
	return merged, nil
}
