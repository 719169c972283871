package diff

import (
	"fmt"
	"sort"
	"strings"
)

// Signatures is how the head's commits verify with the base's trusted
// keys: how many, how many a trusted key signed, and each refused one.
type Signatures struct {
	Commits int                `json:"commits"`
	Trusted int                `json:"trusted"`
	Refused []SignatureRefusal `json:"refused,omitempty"`
}

// SignatureRefusal is a commit that does not verify, and why.
type SignatureRefusal struct {
	Commit string `json:"commit"`
	Author string `json:"author"`
	Signer string `json:"signer,omitempty"`
	Reason string `json:"reason"`
}

// OK reports whether every commit verified.
func (s *Signatures) OK() bool { return len(s.Refused) == 0 }

// Line says it in one line: "3 commits, 2 signed by trusted keys, 1
// unsigned: a1b2c3d".
func (s *Signatures) Line() string {
	commits := "commits"
	if s.Commits == 1 {
		commits = "commit"
	}
	parts := []string{fmt.Sprintf("%d %s, %d signed by trusted keys", s.Commits, commits, s.Trusted)}
	byReason := map[string][]string{}
	for _, r := range s.Refused {
		byReason[r.Reason] = append(byReason[r.Reason], r.Commit)
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s: %s", len(byReason[r]), r, strings.Join(byReason[r], ", ")))
	}
	return strings.Join(parts, ", ")
}
