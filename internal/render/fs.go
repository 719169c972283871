package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// repoFS is the filesystem kustomize reads through for one build. It wraps
// a filesystem that refuses paths outside the repository, and
//   - serves generated kustomization files from memory (never written),
//   - decrypts SOPS files as they are read, verifying the MAC on the file
//     as committed,
//   - records every file read, relative to the repository,
//   - refuses remote references in kustomization files when asked to.
type repoFS struct {
	filesys.FileSystem
	root      string // absolute, symlinks evaluated
	overlay   map[string][]byte
	decryptor *secrets.Decryptor
	noDecrypt bool
	remote    bool

	mu        sync.Mutex
	read      map[string]struct{}
	encrypted map[string]struct{}
	errs      []error
	shared    bool // the build shares kustomize's schema (kustomizeBuild)
	ownSchema bool // a shared build read a kustomization that sets openapi:
}

func (f *repoFS) rel(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(f.root, abs); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

func (f *repoFS) fail(err error) error {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
	return err
}

func (f *repoFS) Exists(path string) bool {
	if _, ok := f.overlay[filepath.Clean(path)]; ok {
		return true
	}
	return f.FileSystem.Exists(path)
}

func (f *repoFS) ReadFile(path string) ([]byte, error) {
	clean := filepath.Clean(path)
	if data, ok := f.overlay[clean]; ok {
		// A kustomization Flux's generator rewrote: the file on disk (if
		// any) is still an input of the target.
		if f.FileSystem.Exists(clean) {
			f.mu.Lock()
			f.read[f.rel(clean)] = struct{}{}
			f.mu.Unlock()
		}
		return data, f.checkRemote(clean, data)
	}
	rel := f.rel(clean)
	if err := f.checkSize(clean, rel); err != nil {
		return nil, f.fail(err)
	}
	data, err := f.FileSystem.ReadFile(path)
	if err != nil {
		if strings.Contains(err.Error(), "is not in or below") {
			return nil, f.fail(fmt.Errorf("%s: path escapes the repository root", f.rel(path)))
		}
		return nil, err
	}
	f.mu.Lock()
	f.read[rel] = struct{}{}
	f.mu.Unlock()
	if err := manifest.CheckAliases(rel, data); err != nil {
		return nil, f.fail(err)
	}
	if isKustomizationFile(clean) {
		return data, f.checkRemote(clean, data)
	}
	if bytes.Contains(data, []byte("builtin")) {
		if err := f.checkPluginConfigs(clean, data); err != nil {
			return nil, err
		}
	}
	if !secrets.IsEncrypted(rel, data) {
		if err := secrets.CheckPlaintext(rel, data); err != nil {
			return nil, f.fail(err)
		}
		return data, nil
	}
	f.mu.Lock()
	f.encrypted[rel] = struct{}{}
	f.mu.Unlock()
	if f.noDecrypt {
		return data, nil
	}
	plain, err := f.decryptor.Decrypt(rel, data)
	if err != nil {
		return nil, f.fail(err)
	}
	return plain, nil
}

// checkRemote refuses remote locations in a kustomization file (see
// remote.go). The error is also recorded, because kustomize treats a
// kustomization file that fails to load as missing and would otherwise
// hide the reason.
//
// In a build that shares kustomize's schema, it stops at a kustomization
// that would set it (the openapi: field) before kustomize reads it: the
// build runs again holding the schema alone (kustomizeBuild).
func (f *repoFS) checkRemote(path string, data []byte) error {
	docs, err := yamlDocs(data)
	if err != nil || len(docs) == 0 {
		return nil // kustomize reports the syntax error itself
	}
	if hasKey(docs[0], "openapi") {
		f.mu.Lock()
		stop := f.shared
		f.ownSchema = f.ownSchema || stop
		f.mu.Unlock()
		if stop {
			return fmt.Errorf("%s sets openapi: the build needs kustomize's schema alone", f.rel(path))
		}
	}
	if f.remote {
		return nil
	}
	for _, d := range docs {
		if refs := remoteRefs(d); len(refs) > 0 {
			return f.fail(&RemoteError{File: f.rel(path), Ref: refs[0]})
		}
	}
	return nil
}

// checkPluginConfigs refuses remote locations in the configs of builtin
// generators and transformers a file holds (a generators: entry naming
// it, or any resource file: which one kustomize reads as a config is
// decided by the kustomization that lists it).
func (f *repoFS) checkPluginConfigs(path string, data []byte) error {
	if f.remote {
		return nil
	}
	docs, err := yamlDocs(data)
	if err != nil {
		return nil
	}
	for _, d := range builtinConfigs(docs) {
		if refs := remoteRefs(d); len(refs) > 0 {
			return f.fail(&RemoteError{File: f.rel(path), Ref: refs[0]})
		}
	}
	return nil
}

// checkSize refuses a file past manifest.MaxFileSize before it is read.
func (f *repoFS) checkSize(path, rel string) error {
	if _, ok := f.overlay[path]; ok {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil // the read that follows says why
	}
	if fi.Size() > manifest.MaxFileSize {
		return &manifest.LimitError{File: rel, Reason: fmt.Sprintf("file is %d bytes, more than the %d ferry reads", fi.Size(), manifest.MaxFileSize)}
	}
	return nil
}

// yamlDocs parses every document of a YAML stream into nodes (aliases are
// not expanded).
func yamlDocs(data []byte) ([]*yamlv3.Node, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var out []*yamlv3.Node
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, &n)
	}
}

func hasKey(doc *yamlv3.Node, key string) bool {
	if doc.Kind == yamlv3.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yamlv3.MappingNode {
		return false
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			return true
		}
	}
	return false
}

// findMalformed names the first file read by a failed build that is not
// valid YAML, with the line, relative to the repository. kustomize's own
// message names the file relative to the kustomization that listed it.
// Only called after a build failed, so a good build parses nothing twice.
func (f *repoFS) findMalformed() error {
	for _, rel := range f.files() {
		if ext := filepath.Ext(rel); ext != ".yaml" && ext != ".yml" {
			continue
		}
		if _, enc := f.encrypted[rel]; enc {
			continue // sops parsed it already
		}
		data, err := f.FileSystem.ReadFile(filepath.Join(f.root, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		dec := yamlv3.NewDecoder(bytes.NewReader(data))
		for {
			var n yamlv3.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: invalid YAML: %w", rel, err)
			}
		}
	}
	return nil
}

func (f *repoFS) setShared(shared bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shared = shared
}

// wantsOwnSchema reports whether a shared build stopped at a
// kustomization that sets openapi:.
func (f *repoFS) wantsOwnSchema() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ownSchema
}

// restart forgets what a stopped build read and recorded, for the build
// that runs again holding the schema alone.
func (f *repoFS) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shared, f.ownSchema = false, false
	f.read = map[string]struct{}{}
	f.encrypted = map[string]struct{}{}
	f.errs = nil
}

func (f *repoFS) failures() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

func (f *repoFS) files() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedKeys(f.read)
}

func (f *repoFS) encryptedFiles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedKeys(f.encrypted)
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isKustomizationFile(path string) bool {
	base := filepath.Base(path)
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if base == n {
			return true
		}
	}
	return false
}

// copyOp finds a JSON patch copy operation, in JSON or YAML.
var copyOp = regexp.MustCompile(`["']?op["']?\s*:\s*["']?copy\b`)

// copyPatches names the files of the build that hold a JSON patch copy
// operation (kustomization files with inline patches, patch files), for
// a build stopped by limits.patchCopySize: kustomize's error does not say
// which patch it was applying.
func (f *repoFS) copyPatches() string {
	var names []string
	for clean, data := range f.overlay {
		if copyOp.Match(data) {
			names = append(names, f.rel(clean))
		}
	}
	for _, rel := range f.files() {
		data, err := manifest.ReadFile(filepath.Join(f.root, filepath.FromSlash(rel)), rel)
		if err == nil && copyOp.Match(data) && !slices.Contains(names, rel) {
			names = append(names, rel)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
