// Package secretstest encrypts SOPS files with throwaway age keys for
// tests, through the same sops/v3 and age libraries ferry decrypts with.
package secretstest

import (
	"testing"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/version"
)

// Key is a throwaway age key pair.
type Key struct {
	Identity  string // AGE-SECRET-KEY-1...
	Recipient string // age1...
}

// NewKey generates a throwaway age key.
func NewKey(t testing.TB) Key {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return Key{Identity: id.String(), Recipient: id.Recipient().String()}
}

// Encrypt encrypts plaintext as sops would for a file named path (its
// extension picks the format), for the given recipients. encryptedRegex
// limits encryption to matching keys, as in .sops.yaml; "" encrypts all.
func Encrypt(t testing.TB, path string, plaintext []byte, encryptedRegex string, recipients ...string) []byte {
	t.Helper()
	store := common.StoreForFormat(formats.FormatForPath(path), config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plaintext)
	if err != nil {
		t.Fatalf("loading plaintext %s: %v", path, err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, mk)
	}
	tree := sops.Tree{
		Branches: branches,
		Metadata: sops.Metadata{
			KeyGroups:      []sops.KeyGroup{group},
			EncryptedRegex: encryptedRegex,
			Version:        version.Version,
		},
	}
	dataKey, errs := tree.GenerateDataKey()
	if len(errs) > 0 {
		t.Fatalf("generating data key: %v", errs)
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{DataKey: dataKey, Tree: &tree, Cipher: aes.NewCipher()}); err != nil {
		t.Fatalf("encrypting %s: %v", path, err)
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
