package helm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// fetchFolder resolves a chart folder of the checkout. The folder, and
// every symlink in it, must stay inside Root once symlinks are followed:
// a chart that reached outside could read any file of the CI machine
// through .Files.
func (s *Sources) fetchFolder(src ChartSource) (*Fetched, error) {
	fail := func(err error) error {
		return &FetchError{Chart: src.Chart, Source: src.Path, Err: err}
	}
	if src.Root == "" {
		return nil, fail(errors.New("no repository root"))
	}
	root, err := filepath.Abs(src.Root)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, fail(fmt.Errorf("repository root: %w", err))
	}
	dir := filepath.Join(root, filepath.FromSlash(src.Path))
	if !inside(root, dir) {
		return nil, fail(fmt.Errorf("%w: %s", ErrEscapes, src.Path))
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fail(reason(ErrNotFound, "no folder %s in the repository", src.Path))
	}
	if err != nil {
		return nil, fail(err)
	}
	if !inside(root, real) {
		return nil, fail(fmt.Errorf("%w: %s leads to %s through a symlink", ErrEscapes, src.Path, real))
	}
	if err := linksInside(root, real); err != nil {
		return nil, fail(err)
	}
	count := &chartCount{limits: src.Limits.Fill()}
	if err := count.folder(real, path.Clean(filepath.ToSlash(src.Path)), map[string]bool{}); err != nil {
		return nil, fail(err)
	}
	b, err := os.ReadFile(filepath.Join(real, "Chart.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fail(reason(ErrNotFound, "%s has no Chart.yaml", src.Path))
	}
	if err != nil {
		return nil, fail(err)
	}
	var md chart.Metadata
	if err := yaml.Unmarshal(b, &md); err != nil {
		return nil, fail(fmt.Errorf("%s: %w", filepath.ToSlash(filepath.Join(src.Path, "Chart.yaml")), err))
	}
	if md.Name == "" || md.Version == "" {
		return nil, fail(fmt.Errorf("%s has no name or version", filepath.ToSlash(filepath.Join(src.Path, "Chart.yaml"))))
	}
	return &Fetched{Name: md.Name, Version: md.Version, Dir: real}, nil
}

// folder counts the files of a chart folder dir (named rel in errors,
// relative to the checkout) as Helm's loader reads them, following
// symlinks: each at most manifest.MaxFileSize, the subchart archives of
// its charts/ folders unpacked and counted too. seen holds the folders
// walked, so a symlink loop is walked once.
func (c *chartCount) folder(dir, rel string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p, name := filepath.Join(dir, e.Name()), path.Join(rel, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if fi.IsDir() {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := c.folder(real, name, seen); err != nil {
				return err
			}
			continue
		}
		if fi.Size() > manifest.MaxFileSize {
			return &manifest.LimitError{File: name, Reason: fmt.Sprintf("file is %d bytes, more than the %d ferry reads (a file of a chart folder is read like any other)", fi.Size(), manifest.MaxFileSize)}
		}
		if err := c.add(name, fi.Size(), manifest.MaxFileSize); err != nil {
			return err
		}
		if filepath.Base(dir) == "charts" && strings.HasSuffix(e.Name(), ".tgz") {
			data, err := manifest.ReadFile(p, name)
			if err != nil {
				return err
			}
			if _, err := c.archive(data, name+": ", 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// inside says whether path is root or below it (both cleaned, absolute).
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// linksInside refuses a symlink under dir that leads outside root.
func linksInside(root, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		target, err := filepath.EvalSymlinks(p)
		rel, _ := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("symlink %s: %w", filepath.ToSlash(rel), err)
		}
		if !inside(root, target) {
			return fmt.Errorf("%w: symlink %s leads to %s", ErrEscapes, filepath.ToSlash(rel), target)
		}
		return nil
	})
}
