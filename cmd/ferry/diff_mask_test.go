package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// Decrypted values every encoder writes differently, which kustomize
// replacements copy out of their Secrets into a ConfigMap.
const (
	// maskedToken is a Secret's stringData (copied plain).
	maskedToken = "tok<&>\"q\" \\ \there-ключ-🔑"
	// maskedCert spans lines.
	maskedCert = "-----BEGIN CERT-----\nline-two<&>\n-----END CERT-----"
	// maskedPhrase is long enough that YAML folds it at a space.
	maskedPhrase = "passphrase of many words: zanzibar quokka marmalade xylophone jubilee nebula pterodactyl"
	// maskedEnv is a dotenv value of a secretGenerator (copied as the
	// generated Secret's base64 data); the dotenv store writes its line
	// break as \n.
	maskedEnv = "env<&>\"\\\ttab-ünï\nsecond-env-line"
)

// newMaskRepo is a repository whose target copies decrypted values into
// a ConfigMap by replacements, at the head commit only.
func newMaskRepo(t *testing.T) (p *scenario, base, head string) {
	t.Helper()
	p = newScenario(t)
	p.write("ferry.yaml", "targets:\n  - name: app\n    path: app\n")
	p.write("app/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  note: base\n")
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n" +
		"  token: " + yamlQuote(maskedToken) + "\n  cert: " + yamlQuote(maskedCert) + "\n  phrase: " + yamlQuote(maskedPhrase) + "\n"
	p.write("app/secret.yaml", string(secretstest.Encrypt(t, "secret.yaml", []byte(secret), "^(data|stringData)$", exampleRecipient)))
	env := "PASSWORD=" + strings.ReplaceAll(maskedEnv, "\n", `\n`) + "\n"
	p.write("app/secrets.enc.env", string(secretstest.Encrypt(t, "secrets.enc.env", []byte(env), "", exampleRecipient)))
	kustomization := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources: [configmap.yaml, secret.yaml]
generatorOptions: {disableNameSuffixHash: true}
secretGenerator:
  - name: env-secrets
    envs: [secrets.enc.env]
`
	p.write("app/kustomization.yaml", kustomization)
	base = p.commit("base")
	p.write("app/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n    token: x\n"+
		"data:\n  note: head\n  token: x\n  cert: x\n  phrase: x\n  password-b64: x\n")
	p.write("app/kustomization.yaml", kustomization+`replacements:
  - source: {kind: Secret, name: api, fieldPath: stringData.token}
    targets: [{select: {kind: ConfigMap, name: app}, fieldPaths: [data.token, metadata.annotations.token]}]
  - source: {kind: Secret, name: api, fieldPath: stringData.cert}
    targets: [{select: {kind: ConfigMap, name: app}, fieldPaths: [data.cert]}]
  - source: {kind: Secret, name: api, fieldPath: stringData.phrase}
    targets: [{select: {kind: ConfigMap, name: app}, fieldPaths: [data.phrase]}]
  - source: {kind: Secret, name: env-secrets, fieldPath: data.PASSWORD}
    targets: [{select: {kind: ConfigMap, name: app}, fieldPaths: [data.password-b64]}]
`)
	return p, base, p.commit("copy the secrets into the ConfigMap")
}

// yamlQuote writes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(s) + `"`
}

// TestDiffMasksCopiedSecretValues: values kustomize copied out of their
// Secrets (plain, multi-line, long, as base64 data) are in no output of
// ferry diff (text, JSON, markdown, --report-file, the step summary and
// outputs, stderr), in no encoding, while the report still shows the
// ConfigMap's change.
func TestDiffMasksCopiedSecretValues(t *testing.T) {
	p, base, head := newMaskRepo(t)
	values := []string{maskedToken, maskedCert, maskedPhrase, maskedEnv}
	words := strings.Fields("zanzibar quokka marmalade xylophone jubilee nebula pterodactyl")
	check := func(t *testing.T, name, out string) {
		t.Helper()
		for _, v := range values {
			if got := secretstest.Leaks(out, v); len(got) > 0 {
				t.Errorf("%s holds %v:\n%s", name, got, out)
			}
		}
		for _, w := range words {
			if strings.Contains(out, w) {
				t.Errorf("%s holds %q of the long value:\n%s", name, w, out)
			}
		}
	}
	vars := map[string]string{"SOPS_AGE_KEY": exampleKeyText(t)}
	for _, format := range []string{"text", "json", "markdown"} {
		t.Run(format, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.md")
			res := ferry(t, vars, "diff", "--repo", p.dir, "--base", base, "--head", head, "--format", format, "--report-file", report)
			if res.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
			}
			check(t, "stdout", res.stdout)
			check(t, "stderr", res.stderr)
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			check(t, "--report-file", string(b))
			if !strings.Contains(res.stdout, "ConfigMap") || !strings.Contains(res.stdout, "***") || !strings.Contains(res.stdout, "note") {
				t.Errorf("the report does not show the ConfigMap's masked change:\n%s", res.stdout)
			}
		})
	}
	t.Run("actions", func(t *testing.T) {
		dir := t.TempDir()
		summary, output := filepath.Join(dir, "summary"), filepath.Join(dir, "output")
		for _, f := range []string{summary, output} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		avars := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary, "GITHUB_OUTPUT": output, "SOPS_AGE_KEY": vars["SOPS_AGE_KEY"]}
		res := ferry(t, avars, "diff", "--repo", p.dir, "--base", base, "--head", head, "--format", "json")
		if res.code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
		}
		// stdout registers the values with the runner (::add-mask::);
		// everything else must not hold them.
		var rest []string
		for _, l := range strings.Split(res.stdout, "\n") {
			if !strings.HasPrefix(l, "::add-mask::") {
				rest = append(rest, l)
			}
		}
		check(t, "stdout", strings.Join(rest, "\n"))
		check(t, "stderr", res.stderr)
		for _, f := range []string{summary, output} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			check(t, filepath.Base(f), string(b))
		}
	})
}
