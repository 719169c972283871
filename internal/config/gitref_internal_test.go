package config

import "testing"

// The forms a fleet writes one repository's URL in compare equal; other
// repositories, hosts or paths do not.
func TestNormalURL(t *testing.T) {
	t.Parallel()
	same := []string{
		"https://github.com/acme/fleet",
		"https://github.com/acme/fleet.git",
		"https://GitHub.com/acme/fleet/",
		"http://github.com/acme/fleet.git/",
		"https://x-access-token:secret@github.com/acme/fleet.git",
		"ssh://git@github.com/acme/fleet",
		"ssh://git@github.com:22/acme/fleet.git",
		"git@github.com:acme/fleet.git",
		"git@github.com:/acme/fleet",
		"github.com:acme/fleet",
		" git@GITHUB.COM:acme/fleet.git ",
	}
	want := "github.com/acme/fleet"
	for _, u := range same {
		if got := normalURL(u); got != want {
			t.Errorf("normalURL(%q) = %q, want %q", u, got, want)
		}
	}
	for _, u := range []string{
		"https://github.com/acme/fleet-dev",
		"https://github.com/acme/Fleet",
		"https://gitlab.com/acme/fleet",
		"https://github.com/acme/fleet/sub",
		"oci://ghcr.io/acme/fleet",
		"/srv/git/acme/fleet",
		"",
	} {
		if got := normalURL(u); got == want {
			t.Errorf("normalURL(%q) = %q, the same as %s's", u, got, same[0])
		}
	}
	if a, b := normalURL("file:///srv/git/fleet/"), normalURL("/srv/git/fleet"); a != b {
		t.Errorf("a local path and its file:// URL: %q != %q", a, b)
	}
}

// FuzzNormalURL: any URL a repository may hold normalizes without
// panicking.
func FuzzNormalURL(f *testing.F) {
	for _, s := range []string{"https://github.com/acme/fleet.git", "git@h:o/r", "ssh://git@h:22/o/r", "file:///x", "a:b:c", "://", "@:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		normalURL(s)
	})
}
