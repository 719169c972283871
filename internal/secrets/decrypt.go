package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"google.golang.org/grpc"
)

// ErrNoIdentity is returned when a file is encrypted and no age identity
// was given.
var ErrNoIdentity = errors.New("the file is SOPS-encrypted and no age identity was given (set SOPS_AGE_KEY or SOPS_AGE_KEY_FILE, or render with --no-decrypt)")

// DecryptError is a failure to decrypt one file. Its message names the
// file and the reason and never carries plaintext, key material or MACs.
type DecryptError struct {
	Path   string
	Reason string
	Err    error
}

// FilePath is the file the error is about, relative to the repository.
func (e *DecryptError) FilePath() string { return e.Path }

func (e *DecryptError) Error() string {
	return fmt.Sprintf("%s: decrypting: %s", e.Path, e.Reason)
}

func (e *DecryptError) Unwrap() error { return e.Err }

// Decryptor decrypts SOPS documents with the identities it was given, and
// remembers every value it decrypted so callers can mask them.
type Decryptor struct {
	ids *Identities

	mu     sync.Mutex
	values map[string]struct{}
}

// NewDecryptor returns a decryptor for the given identities; ids may be
// nil, in which case every encrypted file fails with ErrNoIdentity.
func NewDecryptor(ids *Identities) *Decryptor {
	return &Decryptor{ids: ids, values: map[string]struct{}{}}
}

// Format is the SOPS store format of a file, chosen from its name as the
// sops CLI does: .yaml/.yml, .json, .env, .ini, anything else binary.
func Format(path string) formats.Format {
	return formats.FormatForPath(path)
}

// IsEncrypted reports whether data, read from path, is a SOPS document.
func IsEncrypted(path string, data []byte) bool {
	if !bytes.Contains(data, []byte("sops")) || !bytes.Contains(data, []byte("mac")) {
		return false
	}
	_, err := loadTree(path, data)
	return err == nil
}

func storeFor(path string) common.Store {
	return common.StoreForFormat(Format(path), config.NewStoresConfig())
}

func loadTree(path string, data []byte) (sops.Tree, error) {
	tree, err := storeFor(path).LoadEncryptedFile(data)
	if err != nil {
		return tree, err
	}
	if tree.Metadata.Version == "" && len(tree.Metadata.KeyGroups) == 0 {
		return tree, sops.MetadataNotFound
	}
	return tree, nil
}

// Decrypt returns the plaintext of a SOPS document, in the same format.
// The MAC is verified on the document as given. path is the file's name
// relative to the repository and is used for the format and in errors.
func (d *Decryptor) Decrypt(path string, data []byte) ([]byte, error) {
	tree, err := loadTree(path, data)
	if err != nil {
		return nil, &DecryptError{Path: path, Reason: "not a valid SOPS document", Err: err}
	}
	if d.ids.Len() == 0 {
		return nil, &DecryptError{Path: path, Reason: ErrNoIdentity.Error(), Err: ErrNoIdentity}
	}
	svc := ageKeyService{ids: d.ids}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{svc}, nil)
	if err != nil {
		return nil, &DecryptError{Path: path,
			Reason: "none of the given age identities can open it (recipients: " + recipients(tree) + ")", Err: err}
	}
	before := leaves(tree.Branches)
	cipher := aes.NewCipher()
	computed, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, &DecryptError{Path: path, Reason: "a value does not decrypt: the ciphertext was modified after encryption"}
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, &DecryptError{Path: path, Reason: "the MAC does not decrypt: the sops metadata was modified after encryption"}
	}
	if stored != computed {
		return nil, &DecryptError{Path: path, Reason: "MAC mismatch: the file was modified after encryption"}
	}
	d.remember(before, leaves(tree.Branches))
	out, err := storeFor(path).EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, &DecryptError{Path: path, Reason: "emitting plaintext failed"}
	}
	return out, nil
}

// Values returns every value this decryptor has decrypted so far, longest
// first, so a masker replaces the longest match first.
func (d *Decryptor) Values() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.values))
	for v := range d.values {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// Hide has the decryptor remember values as if it had decrypted them,
// so that maskers watching it hide them: values taken out of a Secret
// and copied elsewhere (a chart's values). A nil Decryptor ignores them.
func (d *Decryptor) Hide(values ...string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range values {
		if v != "" {
			d.values[v] = struct{}{}
		}
	}
}

func (d *Decryptor) remember(before, after []any) {
	if len(before) != len(after) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, b := range before {
		s, ok := b.(string)
		if !ok || !bytes.HasPrefix([]byte(s), []byte("ENC[")) {
			continue
		}
		if v := leafString(after[i]); v != "" {
			d.values[v] = struct{}{}
		}
	}
}

func leafString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []byte:
		return string(t)
	case int:
		return strconv.Itoa(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	default:
		return ""
	}
}

// leaves lists the leaf values of a tree in document order; the shape of a
// tree does not change when it is decrypted, so two lists line up.
func leaves(branches sops.TreeBranches) []any {
	var out []any
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case sops.TreeBranch:
			for _, item := range t {
				if _, isComment := item.Key.(sops.Comment); isComment {
					continue
				}
				walk(item.Value)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		case sops.Comment:
		default:
			out = append(out, t)
		}
	}
	for _, b := range branches {
		walk(b)
	}
	return out
}

func recipients(tree sops.Tree) string {
	var rs []string
	for _, g := range tree.Metadata.KeyGroups {
		for _, k := range g {
			if ak, ok := k.(*sopsage.MasterKey); ok {
				rs = append(rs, ak.Recipient)
			} else {
				rs = append(rs, k.TypeToIdentifier())
			}
		}
	}
	if len(rs) == 0 {
		return "none"
	}
	var b bytes.Buffer
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r)
	}
	return b.String()
}

// ageKeyService is an in-process sops key service that opens age-wrapped
// data keys with explicitly given identities, never the environment.
type ageKeyService struct {
	ids *Identities
}

var _ keyservice.KeyServiceClient = ageKeyService{}

func (s ageKeyService) Decrypt(_ context.Context, req *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	k, ok := req.GetKey().GetKeyType().(*keyservice.Key_AgeKey)
	if !ok {
		return nil, errors.New("only age keys are supported")
	}
	mk := &sopsage.MasterKey{Recipient: k.AgeKey.GetRecipient(), EncryptedKey: string(req.GetCiphertext())}
	s.ids.parsed.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, errors.New("no matching age identity")
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

func (s ageKeyService) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encryption is not supported")
}
