package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/testbin"
)

const examplesDir = "../../examples"

var examples = []string{"gpu-cluster", "single-app", "fleet"}

func exampleKey(t *testing.T) map[string]string {
	t.Helper()
	key, err := filepath.Abs(filepath.Join(examplesDir, "age-test-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"SOPS_AGE_KEY_FILE": key}
}

// TestRenderExamples renders every example, all targets and each target on
// its own, and compares with the reviewed golden files.
func TestRenderExamples(t *testing.T) {
	vars := exampleKey(t)
	for _, ex := range examples {
		t.Run(ex, func(t *testing.T) {
			repo := filepath.Join(examplesDir, ex)
			list := ferry(t, vars, "render", "--list", "--repo", repo)
			if list.code != 0 {
				t.Fatalf("render --list: exit %d: %s", list.code, list.stderr)
			}
			golden(t, "render/"+ex+".list.golden", []byte(list.stdout))

			all := ferry(t, vars, "render", "--repo", repo)
			if all.code != 0 || all.stderr != "" {
				t.Fatalf("render: exit %d: %s", all.code, all.stderr)
			}
			golden(t, "render/"+ex+".golden", []byte(all.stdout))
			if strings.Contains(all.stdout, "ENC[AES256_GCM") || strings.Contains(all.stdout, "sops:") {
				t.Error("rendered output still holds SOPS ciphertext")
			}

			// Rendering target by target gives the same objects, and again
			// the same bytes (deterministic output).
			var joined []string
			for _, name := range targetNames(t, list.stdout) {
				one := ferry(t, vars, "render", "--repo", repo, name)
				if one.code != 0 {
					t.Fatalf("render %s: exit %d: %s", name, one.code, one.stderr)
				}
				joined = append(joined, strings.TrimSuffix(one.stdout, "\n"))
			}
			if got := strings.Join(joined, "\n---\n") + "\n"; got != all.stdout {
				t.Errorf("per-target renders differ from the whole render:\n%s", goldenfile.LineDiff(all.stdout, got))
			}
			if again := ferry(t, vars, "render", "--repo", repo); again.stdout != all.stdout {
				t.Error("a second render gave different bytes")
			}
		})
	}
}

// targetNames reads the TARGET column of `render --list`.
func targetNames(t *testing.T, list string) []string {
	t.Helper()
	var names []string
	for i, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if i == 0 || strings.HasPrefix(line, "skipped ") || strings.HasPrefix(line, "cluster ") {
			continue
		}
		names = append(names, strings.Fields(line)[0])
	}
	if len(names) == 0 {
		t.Fatalf("no targets listed:\n%s", list)
	}
	return names
}

// TestRenderMatchesKustomize checks every example target that plain
// kustomize can build against `kustomize build` of the same overlay. The
// oracle builds a copy of the example whose SOPS files were decrypted in
// the test, so Secrets, generated names and hash suffixes must agree too.
func TestRenderMatchesKustomize(t *testing.T) {
	bin := testbin.Tool(t, "kustomize", "tools")
	vars := exampleKey(t)
	keyText, err := os.ReadFile(vars["SOPS_AGE_KEY_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	ids, err := secrets.ParseIdentities(string(keyText))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ example, target, path string }{
		{"gpu-cluster", "infra", "infrastructure/stage"},
		{"gpu-cluster", "stage", "apps/stage"},
		{"single-app", "staging", "shop/overlays/staging"},
		{"single-app", "production", "shop/overlays/production"},
	}
	for _, tc := range cases {
		t.Run(tc.example+"/"+tc.target, func(t *testing.T) {
			plain := decryptedCopy(t, filepath.Join(examplesDir, tc.example), secrets.NewDecryptor(ids))
			cmd := exec.Command(bin, "build", filepath.Join(plain, tc.path))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("kustomize build: %v: %s", err, stderr.String())
			}
			got := ferry(t, vars, "render", "--repo", filepath.Join(examplesDir, tc.example), tc.target)
			if got.code != 0 {
				t.Fatalf("ferry render: exit %d: %s", got.code, got.stderr)
			}
			wantObjs, gotObjs := objectsByID(t, want), objectsByID(t, []byte(got.stdout))
			if len(wantObjs) == 0 {
				t.Fatal("kustomize rendered nothing")
			}
			if diff := cmp.Diff(wantObjs, gotObjs); diff != "" {
				t.Errorf("ferry differs from kustomize build (-kustomize +ferry):\n%s", diff)
			}
		})
	}
}

// decryptedCopy copies a repository into a temporary folder with every
// SOPS file decrypted (the test's own path to the plaintext).
func decryptedCopy(t *testing.T, src string, d *secrets.Decryptor) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if secrets.IsEncrypted(rel, data) {
			if data, err = d.Decrypt(rel, data); err != nil {
				return err
			}
		}
		return os.WriteFile(target, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// objectsByID parses a YAML stream into objects keyed by identity.
func objectsByID(t *testing.T, stream []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("parsing YAML stream: %v", err)
		}
		if obj == nil {
			continue
		}
		u := toUnstructured(obj)
		id := manifest.IDOf(u).String()
		if _, dup := out[id]; dup {
			t.Fatalf("duplicate object %s", id)
		}
		out[id] = obj
	}
	return out
}
