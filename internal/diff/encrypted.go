package diff

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/render"
)

// encryptedChanges compares, without a key, the encrypted files a target
// reads that changed: SOPS encrypts values, not keys, so the keys added
// and removed are visible, and a key whose ciphertext changed may have a
// new value. The ciphertexts never leave this function.
func encryptedChanges(baseRoot, headRoot string, base, head *render.Result, changed []string) []EncryptedFile {
	isChanged := map[string]bool{}
	for _, c := range changed {
		isChanged[c] = true
	}
	files := map[string]bool{}
	for _, res := range []*render.Result{base, head} {
		if res == nil {
			continue
		}
		for _, f := range res.Encrypted {
			if isChanged[f] {
				files[f] = true
			}
		}
	}
	var out []EncryptedFile
	for f := range files {
		bk := encryptedKeys(filepath.Join(baseRoot, filepath.FromSlash(f)))
		hk := encryptedKeys(filepath.Join(headRoot, filepath.FromSlash(f)))
		ef := EncryptedFile{Path: f}
		ef.Added, ef.Removed, ef.Changed = keyChanges(bk, hk)
		out = append(out, ef)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// encryptedKeys maps each key of a SOPS file to its ciphertext: data and
// stringData keys of Secret documents, top-level keys of other YAML/JSON,
// KEY= lines of dotenv files; a binary file is one key named after it.
func encryptedKeys(file string) map[string]string {
	b, err := os.ReadFile(file)
	if err != nil {
		return map[string]string{}
	}
	out := map[string]string{}
	switch strings.ToLower(path.Ext(file)) {
	case ".env":
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			k, v, _ := strings.Cut(l, "=")
			if !strings.HasPrefix(k, "sops_") {
				out[k] = v
			}
		}
	case ".yaml", ".yml", ".json":
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			var m map[string]any
			if yaml.Unmarshal(doc, &m) != nil || m == nil {
				continue
			}
			if m["kind"] == "Secret" {
				for _, field := range []string{"data", "stringData"} {
					if d, ok := m[field].(map[string]any); ok {
						for k, v := range d {
							out[k] = stringOf(v)
						}
					}
				}
				continue
			}
			for k, v := range m {
				if k != "sops" {
					out[k] = stringOf(v)
				}
			}
		}
	default:
		out[path.Base(filepath.ToSlash(file))] = string(b)
	}
	return out
}

func stringOf(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
