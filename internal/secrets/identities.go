package secrets

import (
	"errors"
	"fmt"
	"strings"

	sopsage "github.com/getsops/sops/v3/age"
)

// Identities are parsed age identities (AGE-SECRET-KEY-1... lines).
type Identities struct {
	parsed sopsage.ParsedIdentities
}

// ParseIdentities parses one or more age identities, one per line. Empty
// lines and lines starting with "#" are ignored, as in an age key file.
// The error never contains key material.
func ParseIdentities(text string) (*Identities, error) {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.HasPrefix(l, "AGE-SECRET-KEY-1") {
			return nil, errors.New("age identities: a line is not an AGE-SECRET-KEY-1... identity")
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, errors.New("age identities: no AGE-SECRET-KEY-1... line found")
	}
	ids := &Identities{}
	if err := ids.parsed.Import(lines...); err != nil {
		// sops' message may quote the malformed line: keep it out.
		return nil, fmt.Errorf("age identities: %d line(s) given, at least one is malformed", len(lines))
	}
	return ids, nil
}

// Len returns the number of identities.
func (i *Identities) Len() int {
	if i == nil {
		return 0
	}
	return len(i.parsed)
}
