package secrets_test

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
stringData:
  password: correct-horse-battery-staple
  user: shop-admin-user
`

func decryptor(t *testing.T, keys ...secretstest.Key) *secrets.Decryptor {
	t.Helper()
	var lines []string
	for _, k := range keys {
		lines = append(lines, k.Identity)
	}
	ids, err := secrets.ParseIdentities("# test keys\n" + strings.Join(lines, "\n") + "\n")
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewDecryptor(ids)
}

func TestDecryptRoundTrip(t *testing.T) {
	key := secretstest.NewKey(t)
	other := secretstest.NewKey(t)
	tests := []struct {
		name, path, plain, regex string
		values                   []string
	}{
		{"yaml with encrypted_regex", "secret.yaml", secretYAML, "^(data|stringData)$", []string{"correct-horse-battery-staple", "shop-admin-user"}},
		{"whole yaml document", "whole.yaml", secretYAML, "", []string{"correct-horse-battery-staple", "shop-admin-user", "Secret", "db", "shop", "v1"}},
		{"dotenv", "app.env", "DB_PASSWORD=dotenv-secret-value\nAPI_KEY=another-dotenv-value\n", "", []string{"dotenv-secret-value", "another-dotenv-value"}},
		{"json", "creds.json", `{"token": "json-token-value", "nested": {"key": "json-nested-value"}}`, "", []string{"json-token-value", "json-nested-value"}},
		{"binary", "tls.pem", "-----BEGIN KEY-----\nbinary-secret-body\n-----END KEY-----\n", "", []string{"-----BEGIN KEY-----\nbinary-secret-body\n-----END KEY-----\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc := secretstest.Encrypt(t, tc.path, []byte(tc.plain), tc.regex, other.Recipient, key.Recipient)
			for _, v := range tc.values {
				if len(v) > 6 && bytes.Contains(enc, []byte(v)) {
					t.Fatalf("ciphertext contains plaintext %q", v)
				}
			}
			if !secrets.IsEncrypted(tc.path, enc) {
				t.Fatal("IsEncrypted = false for a SOPS file")
			}
			if secrets.IsEncrypted(tc.path, []byte(tc.plain)) {
				t.Fatal("IsEncrypted = true for plaintext")
			}
			d := decryptor(t, key)
			got, err := d.Decrypt(tc.path, enc)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.values {
				if !bytes.Contains(got, []byte(v)) {
					t.Errorf("plaintext lacks %q:\n%s", v, got)
				}
			}
			want := append([]string(nil), tc.values...)
			gotValues := d.Values()
			for _, v := range want {
				found := false
				for _, g := range gotValues {
					found = found || g == v
				}
				if !found {
					t.Errorf("Values() = %q, lacks %q", gotValues, v)
				}
			}
		})
	}
}

func TestDecryptYAMLKeepsStructure(t *testing.T) {
	key := secretstest.NewKey(t)
	enc := secretstest.Encrypt(t, "s.yaml", []byte(secretYAML), "^(data|stringData)$", key.Recipient)
	got, err := decryptor(t, key).Decrypt("s.yaml", enc)
	if err != nil {
		t.Fatal(err)
	}
	var want, gotDoc map[string]any
	if err := yaml.Unmarshal([]byte(secretYAML), &want); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(got, &gotDoc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, gotDoc); diff != "" {
		t.Errorf("decrypted document (-want +got):\n%s", diff)
	}
}

func TestDecryptFailures(t *testing.T) {
	key := secretstest.NewKey(t)
	wrong := secretstest.NewKey(t)
	enc := secretstest.Encrypt(t, "apps/secret.yaml", []byte(secretYAML), "^(data|stringData)$", key.Recipient)

	encValue := regexp.MustCompile(`ENC\[AES256_GCM,data:([A-Za-z0-9+/=]+),`)
	tamperedValue := encValue.ReplaceAllFunc(enc, func(m []byte) []byte {
		out := append([]byte(nil), m...)
		i := bytes.Index(out, []byte("data:")) + len("data:")
		if out[i] == 'A' {
			out[i] = 'B'
		} else {
			out[i] = 'A'
		}
		return out
	})
	macLine := regexp.MustCompile(`(?m)^(\s*mac: ENC\[AES256_GCM,data:)([A-Za-z0-9+/=])`)
	tamperedMAC := macLine.ReplaceAllFunc(enc, func(m []byte) []byte {
		out := append([]byte(nil), m...)
		last := len(out) - 1
		if out[last] == 'A' {
			out[last] = 'B'
		} else {
			out[last] = 'A'
		}
		return out
	})
	// Changing a plaintext (unencrypted) part of the document changes the
	// MAC, which covers every value.
	renamed := bytes.Replace(enc, []byte("namespace: shop"), []byte("namespace: evil"), 1)
	if bytes.Equal(tamperedValue, enc) || bytes.Equal(tamperedMAC, enc) || bytes.Equal(renamed, enc) {
		t.Fatal("tampering did not change the file")
	}
	// Changing metadata without re-encrypting: the MAC no longer matches.

	tests := []struct {
		name string
		d    *secrets.Decryptor
		data []byte
		want string
	}{
		{"no identity", secrets.NewDecryptor(nil), enc, "no age identity was given"},
		{"wrong key", decryptor(t, wrong), enc, "none of the given age identities can open it (recipients: " + key.Recipient},
		{"tampered ciphertext", decryptor(t, key), tamperedValue, "ciphertext was modified"},
		{"tampered MAC", decryptor(t, key), tamperedMAC, "MAC does not decrypt"},
		{"changed plaintext field", decryptor(t, key), renamed, "MAC mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.d.Decrypt("apps/secret.yaml", tc.data)
			if err == nil {
				t.Fatal("Decrypt succeeded")
			}
			var de *secrets.DecryptError
			if !errors.As(err, &de) || de.Path != "apps/secret.yaml" {
				t.Fatalf("error %v is not a DecryptError about apps/secret.yaml", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "apps/secret.yaml: ") {
				t.Errorf("error %q: want it to start with the file and contain %q", err, tc.want)
			}
			for _, v := range []string{"correct-horse-battery-staple", "shop-admin-user", key.Identity, wrong.Identity} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error leaks %q", v)
				}
			}
			if len(tc.d.Values()) != 0 {
				t.Errorf("a failed decryption remembered values")
			}
		})
	}
}

func TestParseIdentities(t *testing.T) {
	k1, k2 := secretstest.NewKey(t), secretstest.NewKey(t)
	ids, err := secrets.ParseIdentities("# created: now\n" + k1.Identity + "\n\n" + k2.Identity + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if ids.Len() != 2 {
		t.Errorf("Len() = %d, want 2", ids.Len())
	}
	broken := k1.Identity[:len(k1.Identity)-4] + "QQQQ"
	for _, in := range []string{"", "# only a comment\n", "not-a-key", broken} {
		_, err := secrets.ParseIdentities(in)
		if err == nil {
			t.Errorf("ParseIdentities(%q) succeeded", in)
			continue
		}
		if in != "" && strings.Contains(err.Error(), in) {
			t.Errorf("error %q quotes the key material", err)
		}
	}
}

func TestMasker(t *testing.T) {
	key := secretstest.NewKey(t)
	d := decryptor(t, key)
	m := secrets.NewMasker()
	m.Watch(d)
	msg := "value correct-horse-battery-staple in an error"
	if got := m.Mask(msg); got != msg {
		t.Fatalf("masked before anything was decrypted: %q", got)
	}
	enc := secretstest.Encrypt(t, "s.yaml", []byte(secretYAML), "^(data|stringData)$", key.Recipient)
	if _, err := d.Decrypt("s.yaml", enc); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Mask(msg), "value *** in an error"; got != want {
		t.Errorf("Mask = %q, want %q", got, want)
	}
}

// Values given to Add are masked as decrypted ones are, from the moment
// they are added, beside the decryptors' values.
func TestMaskerAdd(t *testing.T) {
	key := secretstest.NewKey(t)
	d := decryptor(t, key)
	m := secrets.NewMasker()
	m.Watch(d)
	msg := "login hunter2-registry failed; value correct-horse-battery-staple"
	if got := m.Mask(msg); got != msg {
		t.Fatalf("masked before anything was added: %q", got)
	}
	m.Add("hunter2-registry", "")
	if got, want := m.Mask(msg), "login *** failed; value correct-horse-battery-staple"; got != want {
		t.Errorf("after Add: Mask = %q, want %q", got, want)
	}
	enc := secretstest.Encrypt(t, "s.yaml", []byte(secretYAML), "^(data|stringData)$", key.Recipient)
	if _, err := d.Decrypt("s.yaml", enc); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Mask(msg), "login *** failed; value ***"; got != want {
		t.Errorf("after a decryption: Mask = %q, want %q", got, want)
	}
}
