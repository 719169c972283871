// Package masktest makes the masker a test of masked output starts from:
// one that watched a decryptor decrypt the values from a SOPS file. It is
// apart from secretstest, which the secrets package's own tests import.
package masktest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// Masker returns a masker of a decryptor that decrypted values from a SOPS
// file encrypted for a throwaway key.
func Masker(tb testing.TB, values ...string) *secrets.Masker {
	tb.Helper()
	key := secretstest.NewKey(tb)
	doc := map[string]string{}
	for i, v := range values {
		doc[fmt.Sprintf("v%d", i)] = v
	}
	plain, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	ids, err := secrets.ParseIdentities(key.Identity)
	if err != nil {
		tb.Fatal(err)
	}
	d := secrets.NewDecryptor(ids)
	if _, err := d.Decrypt("values.json", secretstest.Encrypt(tb, "values.json", plain, "", key.Recipient)); err != nil {
		tb.Fatal(err)
	}
	m := secrets.NewMasker()
	m.Watch(d)
	return m
}
