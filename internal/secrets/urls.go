package secrets

import (
	"net/url"
	"strings"
)

// A webhook's address is a secret as a whole, and so are its parts: a
// server that refuses a request often echoes its path ("Cannot POST
// /services/T0/B0/XXXX") or one of its segments ("unknown token XXXX").

// minPieceLen is the shortest path segment or query value of a secret URL
// masked on its own.
const minPieceLen = 8

// maxWordLen is the longest piece of lowercase letters, '-', '_' and '.'
// that is read as a word ("services", "webhooks", "incoming-webhook") and
// left alone: masking it would blank out ordinary text.
const maxWordLen = 20

// URLParts returns what of v is secret besides v itself, when v is a URL
// with a scheme and a host (a webhook's address, a registry URL with
// credentials): its userinfo and password, its path (escaped and decoded)
// and its query (as written and decoded) when at least minPieceLen long,
// and each path segment and query value that reads as a credential
// rather than a word (see credentialPiece). The host is not secret. Nil
// when v is not such a URL.
func URLParts(v string) []string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "://") {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(s string, whole bool) {
		if !seen[s] && (whole && len(s) >= minPieceLen || !whole && credentialPiece(s)) {
			seen[s] = true
			out = append(out, s)
		}
	}
	if u.User != nil {
		out = append(out, u.User.String())
		if p, ok := u.User.Password(); ok && p != "" && p != u.User.String() {
			out = append(out, p)
		}
		for _, s := range out {
			seen[s] = true
		}
	}
	add(u.EscapedPath(), true)
	add(u.Path, true)
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		add(seg, false)
		if s, err := url.PathUnescape(seg); err == nil && s != seg {
			add(s, false)
		}
	}
	if u.RawQuery != "" {
		add(u.RawQuery, true)
		if s, err := url.QueryUnescape(u.RawQuery); err == nil && s != u.RawQuery {
			add(s, true)
		}
		q, _ := url.ParseQuery(u.RawQuery)
		for _, vals := range q {
			for _, val := range vals {
				add(val, false)
			}
		}
	}
	return out
}

// credentialPiece reports whether a path segment or query value of a
// secret URL reads as a credential: at least minPieceLen long, and either
// longer than maxWordLen or holding anything but lowercase letters, '-',
// '_' and '.' (a digit, a capital: T0A1B2C3D, 1234567890, a token).
func credentialPiece(s string) bool {
	if len(s) < minPieceLen {
		return false
	}
	if len(s) > maxWordLen {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && r != '-' && r != '_' && r != '.'
	})
}
