package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// Artifact is what a Flux 2.7 ArtifactGenerator makes of its sources for
// one ExternalArtifact: files of the sources (each a folder ferry has,
// such as this checkout) copied into a new tree by the generator's copy
// rules. A target whose sourceRef is that ExternalArtifact renders from
// the tree.
type Artifact struct {
	// Name is the ExternalArtifact's name, Generator where it is declared
	// (Kind/namespace/name and file): both for errors.
	Name, Generator string
	// Sources maps each alias of the generator to its folder.
	Sources map[string]ArtifactSource
	Copy    []CopyRule
}

// ArtifactSource is the folder behind one alias of a generator.
type ArtifactSource struct {
	// Dir is the folder on disk.
	Dir string
	// Prefix names Dir in reports: a file read through the artifact is
	// reported as Prefix/<path in Dir> ("" for the repository itself).
	Prefix string
}

// CopyRule is one entry of an output artifact's copy list.
type CopyRule struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Exclude  []string `json:"exclude,omitempty"`
	Strategy string   `json:"strategy,omitempty"`
}

// Copy strategies of the ArtifactGenerator API.
const (
	StrategyOverwrite = "Overwrite"
	StrategyMerge     = "Merge"
	StrategyExtract   = "Extract"
)

// artifactTree is an artifact being built: its files (slash paths) with
// their content and the source files they were made of.
type artifactTree struct {
	files   map[string][]byte
	origins map[string][]string
	dirs    map[string]bool
}

// build makes the artifact's tree in memory, following the generator's
// copy semantics (those of cp): rules run in order, a later rule
// overwrites (or, with Merge, merges YAML into) what an earlier one wrote,
// and Extract unpacks tarballs;
// "@a/dir" and "@a/dir/" copy the folder as dir/ under the destination,
// "@a/dir/**" copies its contents; a destination ending in "/" (or an
// existing folder) receives a file under its own name; a glob copies each
// match under the destination by its path in the source. Files are read
// as committed (SOPS files stay encrypted), through an os.Root per source
// so no symlink leads out of it, each bounded by manifest.MaxFileSize.
func (a *Artifact) build(ctx context.Context) (*artifactTree, error) {
	t := &artifactTree{files: map[string][]byte{}, origins: map[string][]string{}, dirs: map[string]bool{}}
	for i, rule := range a.Copy {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := t.apply(a, rule); err != nil {
			return nil, fmt.Errorf("%s: artifact %q: copy[%d] from %q to %q: %w", a.Generator, a.Name, i, rule.From, rule.To, err)
		}
	}
	if len(t.files) == 0 {
		return nil, fmt.Errorf("%s: artifact %q: the copy rules produce no file", a.Generator, a.Name)
	}
	return t, nil
}

func (t *artifactTree) apply(a *Artifact, rule CopyRule) error {
	alias, pattern, ok := strings.Cut(strings.TrimPrefix(rule.From, "@"), "/")
	if !strings.HasPrefix(rule.From, "@") || !ok {
		return errors.New(`from must be "@<alias>/<path or glob>"`)
	}
	dest, ok := strings.CutPrefix(rule.To, "@artifact/")
	if !ok {
		return errors.New(`to must be "@artifact/<path>"`)
	}
	dest = path.Clean("/" + dest)[1:] // no .. out of the artifact
	if dest == "" {
		dest = "."
	}
	switch rule.Strategy {
	case "", StrategyOverwrite, StrategyMerge:
	case StrategyExtract:
	default:
		return fmt.Errorf("unknown strategy %q (want Overwrite, Merge or Extract)", rule.Strategy)
	}
	for _, ex := range rule.Exclude {
		if _, err := matchGlob(ex, "x"); err != nil {
			return fmt.Errorf("exclude %q: %w", ex, err)
		}
	}
	src, ok := a.Sources[alias]
	if !ok {
		return fmt.Errorf("source alias %q is not in the generator's sources", alias)
	}
	root, err := os.OpenRoot(src.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	c := &copier{tree: t, root: root, src: src, rule: rule}
	if rule.Strategy == StrategyExtract {
		return c.extractAll(pattern, dest)
	}

	if !strings.ContainsAny(pattern, "*?[]") {
		p := path.Clean("/" + pattern)[1:]
		if p == "" {
			p = "."
		}
		fi, err := root.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist in source %q", p, alias)
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return c.dir(p, path.Join(dest, path.Base(p)), p)
		}
		if c.excluded(p, ".") {
			return nil
		}
		target := dest
		if strings.HasSuffix(rule.To, "/") || t.dirs[dest] || dest == "." {
			target = path.Join(dest, path.Base(p))
		}
		return c.file(p, target)
	}
	matches, err := fs.Glob(root.FS(), pattern)
	if err != nil {
		return fmt.Errorf("glob %q: %w", pattern, err)
	}
	base := selectionRoot(pattern)
	var kept []string
	for _, m := range matches {
		if !c.excluded(m, base) {
			kept = append(kept, m)
		}
	}
	if len(matches) == 0 {
		return fmt.Errorf("no file matches %q in source %q", pattern, alias)
	}
	if len(kept) == 0 {
		return fmt.Errorf("every file matching %q in source %q is excluded", pattern, alias)
	}
	for _, m := range kept {
		target := path.Join(dest, m)
		if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
			if rel, ok := strings.CutPrefix(m, prefix+"/"); ok {
				target = path.Join(dest, rel)
			}
		}
		fi, err := root.Stat(m)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			err = c.dir(m, target, base)
		} else {
			err = c.file(m, target)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copier copies for one rule from one source.
type copier struct {
	tree *artifactTree
	root *os.Root
	src  ArtifactSource
	rule CopyRule
}

func (c *copier) excluded(p, base string) bool {
	if matchAny(c.rule.Exclude, p) {
		return true
	}
	if base == "." || base == "" {
		return false
	}
	rel, ok := strings.CutPrefix(p, base+"/")
	return ok && matchAny(c.rule.Exclude, rel)
}

// dir copies the folder p (recursively) to dest.
func (c *copier) dir(p, dest, base string) error {
	c.tree.mkdirs(dest)
	return fs.WalkDir(c.root.FS(), p, func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if f == p {
			return nil
		}
		if c.excluded(f, base) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel := strings.TrimPrefix(f, p+"/")
		if p == "." {
			rel = f
		}
		if d.IsDir() {
			c.tree.mkdirs(path.Join(dest, rel))
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // os.Root refuses links out of the source; links inside are not followed
		}
		return c.file(f, path.Join(dest, rel))
	})
}

// read reads the file p of the source, bounded like every file ferry
// reads (one byte past the bound tells it was larger), and names it as
// reports do.
func (c *copier) read(p string) (origin string, data []byte, err error) {
	origin = path.Join(c.src.Prefix, p)
	f, err := c.root.Open(p)
	if err != nil {
		return origin, nil, err
	}
	defer f.Close()
	if data, err = io.ReadAll(io.LimitReader(f, manifest.MaxFileSize+1)); err != nil {
		return origin, nil, fmt.Errorf("%s: %w", origin, err)
	}
	if len(data) > manifest.MaxFileSize {
		return origin, nil, &manifest.LimitError{File: origin, Reason: fmt.Sprintf("file is more than the %d bytes ferry reads", manifest.MaxFileSize)}
	}
	return origin, data, nil
}

// file copies (or merges) the file p of the source to dest.
func (c *copier) file(p, dest string) error {
	origin, data, err := c.read(p)
	if err != nil {
		return err
	}
	t := c.tree
	if old, ok := t.files[dest]; ok && c.rule.Strategy == StrategyMerge {
		if err := manifest.CheckAliases(origin, data); err != nil {
			return err
		}
		merged, err := mergeYAML(old, data)
		if err != nil {
			return fmt.Errorf("merging %s into %s: %w", origin, dest, err)
		}
		t.files[dest] = merged
		t.origins[dest] = append(t.origins[dest], origin)
		return nil
	}
	t.mkdirs(path.Dir(dest))
	t.files[dest] = data
	t.origins[dest] = []string{origin}
	return nil
}

func (t *artifactTree) mkdirs(d string) {
	for ; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		t.dirs[d] = true
	}
}

// write puts the tree into dir (empty, private to the caller).
func (t *artifactTree) write(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	dirs := make([]string, 0, len(t.dirs))
	for d := range t.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs) // parents first
	for _, d := range dirs {
		if err := root.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	for f, data := range t.files {
		if err := root.WriteFile(f, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// selectionRoot is the part of a glob before its first wildcard segment.
func selectionRoot(pattern string) string {
	var parts []string
	for _, s := range strings.Split(path.Clean(pattern), "/") {
		if strings.ContainsAny(s, "*?[]") {
			break
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "."
	}
	return path.Join(parts...)
}

// matchAny reports a path that an exclude pattern matches: the whole path
// (with ** for any number of folders), or, for a pattern without a slash,
// the file name at any depth.
func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := matchGlob(pat, p); ok {
			return true
		}
		if !strings.Contains(pat, "/") {
			if ok, _ := matchGlob(pat, path.Base(p)); ok {
				return true
			}
		}
	}
	return false
}

// matchGlob matches a slash path against a pattern of path.Match
// segments where a "**" segment stands for zero or more segments.
func matchGlob(pattern, name string) (bool, error) {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegments(pat, name []string) (bool, error) {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if ok, err := matchSegments(pat[1:], name[i:]); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(name) == 0 {
			return false, nil
		}
		ok, err := path.Match(pat[0], name[0])
		if err != nil || !ok {
			return false, err
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0, nil
}

// mergeYAML merges src into dst as Helm merges values files: maps key by
// key, recursively; anything else (lists included) replaced by src's.
func mergeYAML(dst, src []byte) ([]byte, error) {
	var d, s map[string]any
	if err := yaml.Unmarshal(dst, &d); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(src, &s); err != nil {
		return nil, err
	}
	return yaml.Marshal(mergeMaps(d, s))
}

func mergeMaps(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// originsOf names the source files that the given artifact files (paths
// relative to the artifact) were made of, sorted, each once.
func (t *artifactTree) originsOf(files []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		for _, o := range t.origins[filepath.ToSlash(f)] {
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	sort.Strings(out)
	return out
}

// inputs are the folders (and files) the copy rules read, named as
// reports name them: a change under one may change the artifact.
func (a *Artifact) inputs() Watch {
	dirs := map[string]bool{}
	for _, rule := range a.Copy {
		alias, pattern, ok := strings.Cut(strings.TrimPrefix(rule.From, "@"), "/")
		src, known := a.Sources[alias]
		if !ok || !known {
			return Watch{Unknown: true}
		}
		root := selectionRoot(pattern)
		if pattern == "" {
			root = "."
		}
		dirs[path.Join(src.Prefix, root)] = true
	}
	w := Watch{}
	for d := range dirs {
		w.Dirs = append(w.Dirs, d)
	}
	sort.Strings(w.Dirs)
	return w
}

// maxExtracted bounds what the tarballs of one copy rule may unpack to.
const maxExtracted = 256 << 20

// extractAll unpacks the tarballs (.tar.gz, .tgz) that pattern names into
// dest, keeping their inner layout. A glob (** for any depth) skips
// files that are not tarballs; a single path must be one, and a folder is
// an error.
func (c *copier) extractAll(pattern, dest string) error {
	budget := int64(maxExtracted)
	if !strings.ContainsAny(pattern, "*?[]") {
		p := path.Clean("/" + pattern)[1:]
		fi, err := c.root.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("strategy Extract takes tarballs, not the folder %s", p)
		}
		if !isTarball(p) {
			return fmt.Errorf("strategy Extract takes tarballs (.tar.gz, .tgz), not %s", p)
		}
		return c.extract(p, dest, &budget)
	}
	base := selectionRoot(pattern)
	var matched []string
	err := fs.WalkDir(c.root.FS(), base, func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ok, _ := matchGlob(pattern, f); ok && d.Type().IsRegular() && !c.excluded(f, base) {
			matched = append(matched, f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(matched) == 0 {
		return fmt.Errorf("no file matches %q", pattern)
	}
	for _, f := range matched {
		if isTarball(f) {
			if err := c.extract(f, dest, &budget); err != nil {
				return err
			}
		}
	}
	return nil
}

func isTarball(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tgz")
}

// extract unpacks one tarball of the source into dest: regular files and
// folders only (links are skipped), no entry leaving dest, at most budget
// bytes in all.
func (c *copier) extract(p, dest string, budget *int64) error {
	origin, data, err := c.read(p)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", origin, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", origin, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%s: entry %q leaves the folder it is extracted to", origin, h.Name)
		}
		target := path.Join(dest, name)
		switch mode := h.FileInfo().Mode(); {
		case mode.IsDir():
			c.tree.mkdirs(target)
		case mode.IsRegular():
			if h.Size > manifest.MaxFileSize || h.Size > *budget {
				return &manifest.LimitError{File: origin, Reason: fmt.Sprintf("entry %s unpacks to more than ferry reads", name)}
			}
			b, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
			if err != nil {
				return fmt.Errorf("%s: %w", origin, err)
			}
			if int64(len(b)) > h.Size {
				return fmt.Errorf("%s: entry %s is longer than its header says", origin, name)
			}
			*budget -= int64(len(b))
			c.tree.mkdirs(path.Dir(target))
			c.tree.files[target] = b
			c.tree.origins[target] = []string{origin}
		}
	}
}
