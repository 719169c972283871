package secrets

import (
	"strings"
	"sync"
)

// minMaskLen is the shortest value masked: shorter ones would blank out
// ordinary words of messages and reveal little.
const minMaskLen = 3

// Masker replaces decrypted values in text meant for people: errors, logs,
// summaries. It reads the values of the decryptors it watches when asked,
// so values decrypted later are masked too.
type Masker struct {
	mu   sync.Mutex
	from []*Decryptor
}

// NewMasker returns a masker that watches no decryptor yet.
func NewMasker() *Masker { return &Masker{} }

// Watch adds a decryptor whose values are masked from now on.
func (m *Masker) Watch(d *Decryptor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.from = append(m.from, d)
}

// Values returns every value the masker hides, longest first.
func (m *Masker) Values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range m.from {
		out = append(out, d.Values()...)
	}
	return out
}

// Mask replaces every watched value in s with "***".
func (m *Masker) Mask(s string) string {
	for _, v := range m.Values() {
		for _, line := range strings.Split(v, "\n") {
			if len(strings.TrimSpace(line)) >= minMaskLen {
				s = strings.ReplaceAll(s, line, "***")
			}
		}
	}
	return s
}
