package secrets_test

import (
	"testing"

	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// FuzzDecrypt feeds arbitrary file content, under each store's file name,
// to the SOPS detection and decryption: it must never panic, and whatever
// fails must fail with a DecryptError naming the file.
func FuzzDecrypt(f *testing.F) {
	key := secretstest.NewKey(f)
	ids, err := secrets.ParseIdentities(key.Identity)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), []byte(secretYAML))
	f.Add(uint8(0), secretstest.Encrypt(f, "s.yaml", []byte(secretYAML), "^(data|stringData)$", key.Recipient))
	f.Add(uint8(1), secretstest.Encrypt(f, "s.env", []byte("A=b-value\n"), "", key.Recipient))
	f.Add(uint8(2), secretstest.Encrypt(f, "s.json", []byte(`{"a": "json-value"}`), "", key.Recipient))
	f.Add(uint8(3), secretstest.Encrypt(f, "s.bin", []byte("binary"), "", key.Recipient))
	f.Add(uint8(0), []byte("sops:\n  mac: x\n  version: 3\n"))
	f.Add(uint8(2), []byte(`{"sops": {"mac": 1, "age": [{}]}, "data": "ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]"}`))
	names := []string{"f.yaml", "f.env", "f.json", "f.bin"}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		name := names[int(kind)%len(names)]
		if !secrets.IsEncrypted(name, data) {
			return
		}
		d := secrets.NewDecryptor(ids)
		if _, err := d.Decrypt(name, data); err != nil {
			if de, ok := err.(*secrets.DecryptError); !ok || de.Path != name {
				t.Fatalf("error %v is not a DecryptError about %s", err, name)
			}
		}
	})
}
