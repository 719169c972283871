package verify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

// Keys are the keys a revision may be signed by: OpenPGP public keys and
// SSH public keys, each remembering where it was read from.
type Keys struct {
	pgp     openpgp.EntityList
	ssh     []sshKey
	sources []string
}

type sshKey struct {
	key        ssh.PublicKey
	principals []string
	source     string
}

// ParseKeys reads the keys in data, read from source (a file, an input,
// a Secret's key): armored OpenPGP public key blocks, and lines of SSH
// public keys in authorized_keys ("ssh-ed25519 AAAA… comment") or
// allowed_signers ("alice@example.com ssh-ed25519 AAAA…") form. Blank
// lines and # comments are skipped; anything else is an error naming the
// source and line.
func ParseKeys(source string, data []byte) (Keys, error) {
	k := Keys{sources: []string{source}}
	rest := data
	for {
		i := bytes.Index(rest, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----"))
		if i < 0 {
			break
		}
		j := bytes.Index(rest[i:], []byte("-----END PGP PUBLIC KEY BLOCK-----"))
		if j < 0 {
			return Keys{}, fmt.Errorf("%s: an OpenPGP key block without its END line", source)
		}
		end := i + j + len("-----END PGP PUBLIC KEY BLOCK-----")
		list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(rest[i:end]))
		if err != nil {
			return Keys{}, fmt.Errorf("%s: OpenPGP key: %w", source, err)
		}
		k.pgp = append(k.pgp, list...)
		rest = append(append([]byte{}, rest[:i]...), rest[end:]...)
	}
	sc := bufio.NewScanner(bytes.NewReader(rest))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := parseSSHLine(line)
		if err != nil {
			return Keys{}, fmt.Errorf("%s: line %d: %w", source, n, err)
		}
		key.source = source
		k.ssh = append(k.ssh, key)
	}
	if err := sc.Err(); err != nil {
		return Keys{}, fmt.Errorf("%s: %w", source, err)
	}
	if k.Empty() {
		return Keys{}, fmt.Errorf("%s: no OpenPGP or SSH public key", source)
	}
	return k, nil
}

// parseSSHLine reads an authorized_keys or allowed_signers line. In the
// latter the first field is the principals, which ssh reads as options.
func parseSSHLine(line string) (sshKey, error) {
	pub, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return sshKey{}, errors.New("not an SSH public key (authorized_keys or allowed_signers form) nor an OpenPGP key block")
	}
	var principals []string
	for _, o := range opts {
		if !strings.Contains(o, "=") {
			principals = append(principals, o)
		}
	}
	return sshKey{key: pub, principals: principals}, nil
}

// Add adds o's keys to k.
func (k *Keys) Add(o Keys) {
	k.pgp = append(k.pgp, o.pgp...)
	k.ssh = append(k.ssh, o.ssh...)
	k.sources = append(k.sources, o.sources...)
}

// Empty reports whether k holds no key.
func (k Keys) Empty() bool { return len(k.pgp) == 0 && len(k.ssh) == 0 }

// Sources are where the keys were read from.
func (k Keys) Sources() []string { return k.sources }
