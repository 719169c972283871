package actions

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/secrets"
)

// The inputs of ferry's steps that carry secrets. Each is checked here
// without showing any of its value, and masked before anything is printed.
const (
	// InputAgeKey holds age identities (AGE-SECRET-KEY-1... lines); ferry
	// uses it as SOPS_AGE_KEY.
	InputAgeKey = "age-key"
	// InputTrustedKeys holds the public keys (armored OpenPGP, SSH
	// authorized_keys or allowed_signers lines) a revision must be signed
	// by; ferry reads it as FERRY_TRUSTED_KEYS.
	InputTrustedKeys = "trusted-keys"
	// InputKubeconfig holds kubeconfig content, for commands that reach a
	// cluster.
	InputKubeconfig = "kubeconfig"
	// InputKubeconfigPath holds a kubeconfig file path (flag --kubeconfig).
	InputKubeconfigPath = "kubeconfig-path"
	// InputToken is the forge token (used as FERRY_TOKEN).
	InputToken = "token"
)

// notShown ends every message about a secret input.
const notShown = " (the value is not shown)"

// SecretInputs returns what to mask of the secret inputs and of the same
// secrets given as environment variables (SOPS_AGE_KEY, FERRY_TOKEN): each
// identity line, the token, and the secret fields of kubeconfig content.
func (r *Runtime) SecretInputs() []string {
	var values []string
	raw := func(name string) string { v, _ := r.Input(name); return v }
	for _, key := range []string{raw(InputAgeKey), r.getenv("SOPS_AGE_KEY")} {
		for _, line := range strings.Split(key, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				values = append(values, l)
			}
		}
	}
	values = append(values, raw(InputToken), r.getenv("FERRY_TOKEN"))
	if kc := raw(InputKubeconfig); kc != "" {
		values = append(values, KubeconfigSecrets(kc)...)
	}
	return values
}

// Maskable returns what of decrypted values to register as masks: the
// lines ferry's own masker hides (three characters or more), and the
// base64 form of each value, as a rendered Secret's data carries it.
func Maskable(values []string) []string {
	var out []string
	for _, v := range values {
		for _, line := range strings.Split(v, "\n") {
			if len(strings.TrimSpace(line)) >= 3 {
				out = append(out, line)
			}
		}
		if len(v) >= 3 {
			out = append(out, base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	return out
}

// kubeconfigSecretKeys are the kubeconfig fields whose values are secret.
var kubeconfigSecretKeys = map[string]bool{
	"token": true, "client-key-data": true, "client-certificate-data": true,
	"certificate-authority-data": true, "password": true,
	"id-token": true, "refresh-token": true, "access-token": true, "client-secret": true,
}

// KubeconfigSecrets returns the secret values of kubeconfig content: those
// of the fields above anywhere in it. Content that does not parse is
// masked whole, line by line.
func KubeconfigSecrets(content string) []string {
	var doc any
	if err := yaml.Unmarshal([]byte(content), &doc); err != nil {
		return []string{content}
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && kubeconfigSecretKeys[k] {
					out = append(out, s)
				}
				walk(val)
			}
		case []any:
			for _, item := range t {
				walk(item)
			}
		}
	}
	walk(doc)
	if _, ok := doc.(map[string]any); !ok {
		out = append(out, content)
	}
	return out
}

// CheckAgeKey says what is wrong with an age-key input without showing any
// of it.
func CheckAgeKey(v string) error {
	if strings.HasPrefix(strings.TrimSpace(v), "age1") {
		return errors.New("input age-key holds an age recipient (a public key, age1...), not an identity: pass the AGE-SECRET-KEY-1... line of the key file" + notShown)
	}
	if looksLikePath(v) && !strings.HasPrefix(v, "AGE-SECRET-KEY-") {
		return errors.New("input age-key is not an age identity: it looks like a file path; pass the key itself (the AGE-SECRET-KEY-1... line), e.g. from a secret" + notShown)
	}
	if _, err := secrets.ParseIdentities(v); err != nil {
		// ParseIdentities never quotes key material.
		return fmt.Errorf("input age-key is not an age identity: want one or more AGE-SECRET-KEY-1... lines: %w%s", err, notShown)
	}
	return nil
}

// CheckKubeconfig says what is wrong with a kubeconfig input without
// showing it.
func CheckKubeconfig(v string) error {
	if looksLikePath(v) {
		return errors.New("input kubeconfig holds a file path, not kubeconfig content: pass the content (e.g. from a secret), or the path as input kubeconfig-path" + notShown)
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(v), &doc); err != nil || doc == nil {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v)); err == nil && strings.Contains(string(b), "clusters") {
			return errors.New("input kubeconfig is base64-encoded: pass the decoded content" + notShown)
		}
		return errors.New("input kubeconfig is not kubeconfig content: it is not a YAML mapping" + notShown)
	}
	if _, ok := doc["clusters"]; !ok {
		return errors.New("input kubeconfig is not kubeconfig content: it has no clusters" + notShown)
	}
	return nil
}

// CheckKubeconfigPath says what is wrong with a kubeconfig-path input that
// holds kubeconfig content instead of a path, without showing it.
func CheckKubeconfigPath(v string) error {
	if strings.Contains(v, "\n") || strings.HasPrefix(strings.TrimSpace(v), "{") ||
		strings.Contains(v, "apiVersion:") || strings.Contains(v, "clusters:") {
		return errors.New("input kubeconfig-path holds kubeconfig content, not a file path: pass the content as input kubeconfig instead" + notShown)
	}
	return nil
}

// looksLikePath reports whether an input that should hold content holds
// one line that reads as a file path.
func looksLikePath(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, "\n{") || strings.Contains(v, ": ") {
		return false
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "../") {
		return true
	}
	if _, err := os.Stat(v); err == nil {
		return true
	}
	ext := strings.ToLower(filepath.Ext(v))
	return ext == ".yaml" || ext == ".yml" || ext == ".conf" || ext == ".kubeconfig" || ext == ".txt" || ext == ".key" || strings.HasSuffix(v, "/config")
}
