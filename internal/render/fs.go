package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/secrets"
)

// RemoteError reports a remote base or resource while remote bases are off.
type RemoteError struct {
	File string // kustomization file, relative to the repository
	Ref  string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: remote resource %q is not allowed (remote bases are off; pass --allow-remote-bases to fetch it)", e.File, e.Ref)
}

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
	schema    bool // a kustomization set the openapi: field
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
	data, err := f.FileSystem.ReadFile(path)
	if err != nil {
		if strings.Contains(err.Error(), "is not in or below") {
			return nil, f.fail(fmt.Errorf("%s: path escapes the repository root", f.rel(path)))
		}
		return nil, err
	}
	rel := f.rel(clean)
	f.mu.Lock()
	f.read[rel] = struct{}{}
	f.mu.Unlock()
	if isKustomizationFile(clean) {
		return data, f.checkRemote(clean, data)
	}
	if !secrets.IsEncrypted(rel, data) {
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

// checkRemote refuses remote references in a kustomization file. The error
// is also recorded, because kustomize treats a kustomization file that
// fails to load as missing and would otherwise hide the reason.
//
// It also notes a kustomization that changes kustomize's global OpenAPI
// schema, so the next build resets it.
func (f *repoFS) checkRemote(path string, data []byte) error {
	var k kustypes.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil // kustomize reports the syntax error itself
	}
	if len(k.OpenAPI) > 0 {
		f.mu.Lock()
		f.schema = true
		f.mu.Unlock()
	}
	if f.remote {
		return nil
	}
	refs := append(append(append([]string{}, k.Resources...), k.Components...), k.Bases...) //nolint:staticcheck // Bases is deprecated but still read by kustomize
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	for _, r := range refs {
		if isRemote(r) {
			return f.fail(&RemoteError{File: f.rel(path), Ref: r})
		}
	}
	return nil
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

func (f *repoFS) customSchema() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.schema
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

// isRemote reports whether a kustomization reference points outside the
// local filesystem, using the forms kustomize itself recognises.
func isRemote(ref string) bool {
	l := strings.ToLower(ref)
	for _, p := range []string{"git::", "gh:", "ssh://", "https://", "http://", "git@", "github.com:", "github.com/", "gitlab.com/", "bitbucket.org/", "file://"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.Contains(l, "?ref=") || strings.Contains(l, ".git//")
}
