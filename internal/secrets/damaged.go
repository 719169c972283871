package secrets

import (
	"bytes"
	"fmt"
	"regexp"

	"github.com/getsops/sops/v3/cmd/sops/formats"
)

// sopsMarkers are what only a SOPS document carries: a value encrypted by
// SOPS, the top-level sops metadata of a YAML or JSON document, the
// metadata lines of a dotenv or INI one.
var sopsMarkers = map[formats.Format]*regexp.Regexp{
	formats.Yaml:   regexp.MustCompile(`ENC\[AES256_GCM,|(?m)^sops:`),
	formats.Json:   regexp.MustCompile(`ENC\[AES256_GCM,|"sops"\s*:\s*\{`),
	formats.Dotenv: regexp.MustCompile(`ENC\[AES256_GCM,|(?m)^sops_[a-z_]+=`),
	formats.Ini:    regexp.MustCompile(`ENC\[AES256_GCM,|(?m)^\[sops\]`),
	formats.Binary: regexp.MustCompile(`ENC\[AES256_GCM,`),
}

// CheckPlaintext refuses a file that IsEncrypted does not take for a SOPS
// document but that carries SOPS ciphertext or metadata: a SOPS file cut
// short, or with its MAC or metadata removed. Rendered as plaintext, its
// ciphertext would become a Secret's data and its tampering go unnoticed.
func CheckPlaintext(path string, data []byte) error {
	if !bytes.Contains(data, []byte("ENC[")) && !bytes.Contains(data, []byte("sops")) {
		return nil
	}
	re := sopsMarkers[Format(path)]
	if re == nil || !re.Match(data) {
		return nil
	}
	_, err := loadTree(path, data)
	reason := "its sops metadata is missing or incomplete"
	if err == nil {
		reason = "its MAC is missing"
	}
	return &DecryptError{Path: path, Reason: fmt.Sprintf("the file carries SOPS ciphertext or metadata but is not a complete SOPS document (%s): it was cut short or modified after encryption", reason)}
}
