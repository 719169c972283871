package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// Plaintext secret values of the test repositories. They may appear in
// render's stdout and nowhere else ferry prints or leaves behind.
var canaries = []string{
	"canary-manifest-password-7f3a",
	"canary-dotenv-token-91bc",
	"canary-json-credential-55de",
	"canary-binary-cert-body-0a17",
	"canary-substitute-secret-c0de",
}

// newSecretRepo writes a one-target repository holding every kind of
// encrypted input: a Secret manifest, and dotenv, JSON and binary sources
// of a secretGenerator.
func newSecretRepo(t *testing.T) *scenario {
	r := newScenario(t)
	r.write("ferry.yaml", "targets:\n  - name: app\n    path: app\n")
	r.write("app/kustomization.yaml", `resources:
  - deployment.yaml
  - secret.yaml
secretGenerator:
  - name: generated
    envs: [app.env]
    files: [creds.json, tls.crt]
`)
	r.write("app/deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.27
          envFrom: [{secretRef: {name: generated}}]
`)
	r.encrypt("app/secret.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: `+canaries[0]+`
`, "^(data|stringData)$")
	r.encrypt("app/app.env", "TOKEN="+canaries[1]+"\n", "")
	r.encrypt("app/creds.json", `{"credential": "`+canaries[2]+`"}`, "")
	r.encrypt("app/tls.crt", "-----BEGIN CERTIFICATE-----\n"+canaries[3]+"\n-----END CERTIFICATE-----\n", "")
	return r
}

// printed collects everything ferry printed in this file's tests, for the
// leak scan at the end of TestSecretsNeverLeak.
type printed struct {
	stdout, stderr string
	renderStdout   bool // stdout is render's intended, decrypted output
	name           string
}

func TestSecretsNeverLeak(t *testing.T) {
	var outputs []printed
	record := func(name string, r result, renderStdout bool) {
		outputs = append(outputs, printed{r.stdout, r.stderr, renderStdout, name})
	}
	var repos []*scenario

	t.Run("decrypts what the test encrypted", func(t *testing.T) {
		r := newSecretRepo(t)
		repos = append(repos, r)
		res := ferry(t, r.vars(), "render", "--repo", r.dir)
		record(t.Name(), res, true)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		objs := objectsByID(t, []byte(res.stdout))
		db := objs["Secret/db"]
		if got := db["stringData"].(map[string]any)["password"]; got != canaries[0] {
			t.Errorf("Secret/db password = %q, want %q", got, canaries[0])
		}
		var gen map[string]any
		for id, o := range objs {
			if strings.HasPrefix(id, "Secret/generated-") {
				gen = o
			}
		}
		if gen == nil {
			t.Fatalf("no generated Secret in %v", keys(objs))
		}
		data := gen["data"].(map[string]any)
		want := map[string]string{
			"TOKEN":      canaries[1],
			"creds.json": `{"credential": "` + canaries[2] + `"}`,
			"tls.crt":    "-----BEGIN CERTIFICATE-----\n" + canaries[3] + "\n-----END CERTIFICATE-----\n",
		}
		for k, v := range want {
			raw, _ := data[k].(string)
			b, err := base64.StdEncoding.DecodeString(raw)
			if err != nil {
				t.Fatalf("data[%s]: %v", k, err)
			}
			got := string(b)
			if k == "creds.json" { // sops re-emits JSON; compare it parsed
				var g, w any
				if json.Unmarshal(b, &g) != nil || json.Unmarshal([]byte(v), &w) != nil {
					t.Fatalf("creds.json is not JSON: %q", got)
				}
				got, v = fmt.Sprint(g), fmt.Sprint(w)
			}
			if strings.TrimSpace(got) != strings.TrimSpace(v) {
				t.Errorf("generated data[%s] = %q, want %q", k, got, v)
			}
		}
		if len(data) != len(want) {
			t.Errorf("generated Secret has keys %v, want only %v (no sops metadata)", keys(data), keys(want))
		}
	})

	t.Run("no-decrypt leaves encrypted Secrets out", func(t *testing.T) {
		r := newSecretRepo(t)
		repos = append(repos, r)
		res := ferry(t, nil, "render", "--no-decrypt", "--repo", r.dir)
		record(t.Name(), res, false)
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		objs := objectsByID(t, []byte(res.stdout))
		if _, ok := objs["Deployment.apps/web"]; !ok {
			t.Errorf("Deployment missing from %v", keys(objs))
		}
		for id := range objs {
			if strings.HasPrefix(id, "Secret/") {
				t.Errorf("encrypted %s was printed", id)
			}
		}
		for _, want := range []string{`left out encrypted Secret/db`, `left out encrypted Secret/generated-`} {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
			}
		}
	})

	t.Run("output dir", func(t *testing.T) {
		r := newSecretRepo(t)
		repos = append(repos, r)
		out := t.TempDir()
		res := ferry(t, r.vars(), "render", "--repo", r.dir, "-o", out)
		record(t.Name(), res, false)
		if res.code != 0 || res.stdout != "" {
			t.Fatalf("exit %d, stdout %q: %s", res.code, res.stdout, res.stderr)
		}
		files, _ := filepath.Glob(filepath.Join(out, "app", "*.yaml"))
		if len(files) != 3 {
			t.Fatalf("wrote %v, want 3 files", files)
		}
		fi, err := os.Stat(filepath.Join(out, "app", "secret_db.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("Secret file mode %v, want 0600", fi.Mode().Perm())
		}
	})

	for _, tc := range badInputs() {
		t.Run(tc.name, func(t *testing.T) {
			r := newSecretRepo(t)
			repos = append(repos, r)
			vars := r.vars()
			args := []string{"render", "--repo", r.dir}
			if tc.setup != nil {
				if v := tc.setup(r); v != nil {
					vars = v
				}
			}
			res := ferry(t, vars, append(args, tc.args...)...)
			record(t.Name(), res, false)
			t.Logf("stderr: %s", res.stderr)
			if res.code != exitError {
				t.Fatalf("exit %d, want 2; stderr: %s", res.code, res.stderr)
			}
			if res.stdout != "" {
				t.Errorf("printed on stdout after an error:\n%s", res.stdout)
			}
			for _, want := range tc.want {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("error lacks %q:\n%s", want, res.stderr)
				}
			}
		})
	}

	// The scan: no plaintext in anything printed but render's stdout, and
	// none left in the repositories (nothing decrypted was written there).
	for _, o := range outputs {
		for _, c := range canaries {
			if strings.Contains(o.stderr, c) {
				t.Errorf("%s: stderr contains secret value %q", o.name, c)
			}
			if !o.renderStdout && strings.Contains(o.stdout, c) {
				t.Errorf("%s: stdout contains secret value %q", o.name, c)
			}
		}
	}
	intended := 0
	for _, o := range outputs {
		if o.renderStdout && strings.Contains(o.stdout, canaries[0]) {
			intended++
		}
	}
	if intended == 0 {
		t.Error("the scan never saw a decrypted value where one was expected: it would not notice a leak either")
	}
	for _, r := range repos {
		_ = filepath.WalkDir(r.dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := os.ReadFile(p)
			for _, c := range canaries {
				if strings.Contains(string(b), c) {
					t.Errorf("%s holds secret value %q after the run", p, c)
				}
			}
			return nil
		})
	}
}

type badInput struct {
	name  string
	setup func(r *scenario) map[string]string // returns env vars to use instead, or nil
	args  []string
	want  []string // substrings of the error
}

func badInputs() []badInput {
	tamper := func(path string, re *regexp.Regexp) func(r *scenario) map[string]string {
		return func(r *scenario) map[string]string {
			content := r.read(path)
			changed := re.ReplaceAllStringFunc(content, func(m string) string {
				last := m[len(m)-1]
				if last == 'A' {
					return m[:len(m)-1] + "B"
				}
				return m[:len(m)-1] + "A"
			})
			if changed == content {
				panic("tampering changed nothing in " + path)
			}
			r.write(path, changed)
			return nil
		}
	}
	return []badInput{
		{
			name: "invalid YAML",
			setup: func(r *scenario) map[string]string {
				r.write("app/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web\n  spec: [\n")
				return nil
			},
			want: []string{`target "app"`, "app/deployment.yaml"},
		},
		{
			name: "resource file that does not exist",
			setup: func(r *scenario) map[string]string {
				r.write("app/kustomization.yaml", "resources:\n  - deployment.yaml\n  - missing.yaml\n")
				return nil
			},
			want: []string{`target "app": app/missing.yaml: file does not exist`},
		},
		{
			name: "resource path escaping the root",
			setup: func(r *scenario) map[string]string {
				r.write("app/kustomization.yaml", "resources:\n  - ../../etc/passwd\n")
				return nil
			},
			want: []string{`target "app"`, "../etc/passwd: path escapes the repository root"},
		},
		{
			name: "symlink escaping the root",
			setup: func(r *scenario) map[string]string {
				outside := filepath.Join(filepath.Dir(r.dir), filepath.Base(r.dir)+"-outside.yaml")
				if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n"), 0o644); err != nil {
					panic(err)
				}
				if err := os.Symlink(outside, filepath.Join(r.dir, "app", "link.yaml")); err != nil {
					panic(err)
				}
				r.write("app/kustomization.yaml", "resources:\n  - deployment.yaml\n  - link.yaml\n")
				return nil
			},
			want: []string{`target "app"`, "link.yaml", "escapes the repository root"},
		},
		{
			name: "target path symlink escaping the root",
			setup: func(r *scenario) map[string]string {
				if err := os.Symlink("/etc", filepath.Join(r.dir, "etc")); err != nil {
					panic(err)
				}
				r.write("ferry.yaml", "targets:\n  - name: app\n    path: etc\n")
				return nil
			},
			want: []string{`target "app"`, `path "etc" escapes the repository root`},
		},
		{
			name: "target path outside the repository",
			setup: func(r *scenario) map[string]string {
				r.write("ferry.yaml", "targets:\n  - name: app\n    path: ../../etc\n")
				return nil
			},
			want: []string{`target "app"`, "escapes the repository root"},
		},
		{
			name: "remote base with remote bases off",
			setup: func(r *scenario) map[string]string {
				r.write("app/kustomization.yaml", "resources:\n  - deployment.yaml\n  - https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\n")
				return nil
			},
			want: []string{`target "app"`, "app/kustomization.yaml", "remote location", "remote bases are off"},
		},
		{
			name: "duplicate object ids in one target",
			setup: func(r *scenario) map[string]string {
				r.write("app/again.yaml", r.read("app/deployment.yaml"))
				r.write("app/kustomization.yaml", "resources:\n  - deployment.yaml\n  - again.yaml\n")
				return nil
			},
			want: []string{`target "app"`, "Deployment.apps/web: the object is defined twice"},
		},
		{
			name:  "encrypted file and no key",
			setup: func(r *scenario) map[string]string { return map[string]string{} },
			want:  []string{`target "app"`, "app/", "no age identity was given"},
		},
		{
			name: "wrong key",
			setup: func(r *scenario) map[string]string {
				other := secretstest.NewKey(r.t)
				return map[string]string{"SOPS_AGE_KEY": other.Identity}
			},
			want: []string{`target "app"`, "app/", "none of the given age identities can open it"},
		},
		{
			name:  "tampered ciphertext",
			setup: tamper("app/secret.yaml", regexp.MustCompile(`password: ENC\[AES256_GCM,data:[A-Za-z0-9+/]`)),
			want:  []string{`target "app"`, "app/secret.yaml", "ciphertext was modified"},
		},
		{
			name:  "tampered MAC",
			setup: tamper("app/secret.yaml", regexp.MustCompile(`mac: ENC\[AES256_GCM,data:[A-Za-z0-9+/]`)),
			want:  []string{`target "app"`, "app/secret.yaml", "MAC"},
		},
		{
			name: "plaintext field changed under the MAC",
			setup: func(r *scenario) map[string]string {
				r.write("app/secret.yaml", strings.Replace(r.read("app/secret.yaml"), "name: db", "name: db2", 1))
				return nil
			},
			want: []string{`target "app"`, "app/secret.yaml", "MAC mismatch"},
		},
		{
			name: "malformed age key",
			setup: func(r *scenario) map[string]string {
				return map[string]string{"SOPS_AGE_KEY": r.key.Identity[:30]}
			},
			want: []string{"age identities", "malformed"},
		},
		{
			name: "dependsOn cycle",
			setup: func(r *scenario) map[string]string {
				r.write("ferry.yaml", "targets:\n  - name: a\n    path: app\n    dependsOn: [b]\n  - name: b\n    path: app\n    dependsOn: [a]\n")
				return nil
			},
			want: []string{"dependsOn cycle", "a -> b -> a"},
		},
		{
			name: "substituteFrom variable with a name Flux refuses",
			setup: func(r *scenario) map[string]string {
				r.write("ferry.yaml", "targets:\n  - name: app\n    path: app\n    postBuild:\n      substitute:\n        bad-name: x\n")
				return nil
			},
			want: []string{`target "app"`, "postBuild substitution", "'bad-name' var name is invalid"},
		},
		{
			name: "unknown target name",
			args: []string{"nope"},
			want: []string{`unknown target "nope"`, "known: app"},
		},
		{
			name: "target path that does not exist",
			setup: func(r *scenario) map[string]string {
				r.write("ferry.yaml", "targets:\n  - name: app\n    path: apps/gone\n")
				return nil
			},
			want: []string{`target "app"`, `path "apps/gone" does not exist`},
		},
		{
			name: "unknown field in ferry.yaml",
			setup: func(r *scenario) map[string]string {
				r.write("ferry.yaml", "targets:\n  - name: app\n    pth: app\n")
				return nil
			},
			want: []string{`ferry.yaml: line 3: unknown field "pth"`},
		},
		{
			name: "invalid Flux object",
			setup: func(r *scenario) map[string]string {
				if err := os.Remove(filepath.Join(r.dir, "ferry.yaml")); err != nil {
					panic(err)
				}
				r.write("clusters/dev/apps.yaml", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps\n")
				return nil
			},
			want: []string{"clusters/dev/apps.yaml:8: invalid YAML"},
		},
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
