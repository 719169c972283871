package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReasonProgressing is the reason of an event about work under way.
const ReasonProgressing = "Progressing"

// statusUpdate is one commit status a github or gitea provider sets.
type statusUpdate struct {
	SHA    string       `json:"sha"`
	Status CommitStatus `json:"status"`
}

// StatusContext is the context of the commit status a provider sets for
// an event, as notification-controller's default: kind/name/<id>,
// lower-cased, where Flux's <id> is the first group of the Provider's UID.
// A rendered Provider has no UID, so ferry uses the first 8 hex digits of
// the SHA-256 of "namespace/name": stable from run to run, and distinct
// for two providers of one repository.
func StatusContext(p *Provider, e *Event) string {
	sum := sha256.Sum256([]byte(p.Namespace + "/" + p.Name))
	id := fmt.Sprintf("%s/%s/%s", e.InvolvedObject.Kind, e.InvolvedObject.Name, hex.EncodeToString(sum[:4]))
	return strings.ToLower(id)
}

// commitStatus builds the status a provider sets for e, as
// notification-controller does: the state from the severity (info:
// success, error: failure; a Progressing event is pending on gitea and
// not posted at all on github, as Flux skips it), the description the
// reason in lower-case words ("reconciliation succeeded"), and the commit
// from the metadata revision (originRevision first), stripped of a
// "branch@sha1:" or legacy "branch/" prefix. skip says why nothing is to
// be posted.
func commitStatus(p *Provider, e *Event) (u *statusUpdate, skip string, err error) {
	if p.Type == TypeGitHub && e.Reason == ReasonProgressing {
		return nil, "github providers do not post Progressing events (as Flux)", nil
	}
	rev, ok := e.Metadata["originRevision"]
	if !ok {
		rev, ok = e.Metadata["revision"]
	}
	if !ok {
		return nil, "", errors.New("the event has no revision metadata: no commit to set a status on")
	}
	sha, err := commitOf(rev)
	if err != nil {
		return nil, "", err
	}
	var state string
	switch {
	case p.Type == TypeGitea && e.Reason == ReasonProgressing:
		state = "pending"
	case e.Severity == SeverityInfo:
		state = "success"
	case e.Severity == SeverityError:
		state = "failure"
	default:
		return nil, "", fmt.Errorf("severity %q has no commit status state", e.Severity)
	}
	return &statusUpdate{SHA: sha, Status: CommitStatus{
		State:       state,
		Context:     StatusContext(p, e),
		Description: strings.ToLower(strings.Join(splitCamelCase(e.Reason), " ")),
	}}, "", nil
}

// commitOf extracts the commit of a revision: main@sha1:<hex>, sha1:<hex>,
// main/<hex> (the format before Flux 2.0) or a bare hash.
func commitOf(rev string) (string, error) {
	r := rev
	if i := strings.LastIndex(r, "@"); i >= 0 {
		r = r[i+1:]
	} else if i := strings.LastIndex(r, "/"); i >= 0 {
		r = r[i+1:]
	}
	if _, h, ok := strings.Cut(r, ":"); ok {
		r = h
	}
	if (len(r) == 40 || len(r) == 64) && isHex(r) {
		return r, nil
	}
	return "", fmt.Errorf("no commit hash in revision %q", rev)
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// duplicate says whether the newest status of statuses with s's context
// (statuses come newest first, as both forges list them) has its state
// and description, so that posting s would change nothing.
func duplicate(statuses []CommitStatus, s CommitStatus) bool {
	for _, have := range statuses {
		if have.Context == "" || have.State == "" || have.Description == "" {
			continue
		}
		if have.Context == s.Context {
			return have.State == s.State && have.Description == s.Description
		}
	}
	return false
}

// splitCamelCase splits a reason into words where the class of its
// characters (lower, upper, digit, other) changes, keeping an upper-case
// letter with the lower-case run that follows it: "HTTPServerFailed" is
// HTTP Server Failed.
func splitCamelCase(src string) []string {
	if !utf8.ValidString(src) {
		return []string{src}
	}
	class := func(r rune) int {
		switch {
		case unicode.IsLower(r):
			return 1
		case unicode.IsUpper(r):
			return 2
		case unicode.IsDigit(r):
			return 3
		}
		return 4
	}
	var runs [][]rune
	last := 0
	for _, r := range src {
		c := class(r)
		if c == last {
			runs[len(runs)-1] = append(runs[len(runs)-1], r)
		} else {
			runs = append(runs, []rune{r})
		}
		last = c
	}
	for i := 0; i < len(runs)-1; i++ {
		if unicode.IsUpper(runs[i][0]) && unicode.IsLower(runs[i+1][0]) {
			runs[i+1] = append([]rune{runs[i][len(runs[i])-1]}, runs[i+1]...)
			runs[i] = runs[i][:len(runs[i])-1]
		}
	}
	words := make([]string, 0, len(runs))
	for _, r := range runs {
		if len(r) > 0 {
			words = append(words, string(r))
		}
	}
	return words
}
