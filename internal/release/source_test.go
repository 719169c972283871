package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitRepo makes a repository with one commit in a temporary folder.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-12-01T10:00:00Z", "GIT_COMMITTER_DATE=2026-12-01T10:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	run("config", "user.name", "t")
	run("config", "user.email", "t@example.com")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "one")
	return dir
}

func tag(t *testing.T, dir string, tags ...string) {
	t.Helper()
	for _, tg := range tags {
		if out, err := exec.Command("git", "-C", dir, "tag", tg).CombinedOutput(); err != nil {
			t.Fatalf("git tag %s: %v\n%s", tg, err, out)
		}
	}
}

func TestResolveSource(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tags    []string
		dirty   bool
		want    string
		version string // a regexp
		tagged  bool
		err     string // a part of the error
	}{
		{name: "tag at HEAD", tags: []string{"v1.2.3"}, version: `^v1\.2\.3$`, tagged: true},
		{name: "the tag asked for", tags: []string{"v1.2.3"}, want: "v1.2.3", version: `^v1\.2\.3$`, tagged: true},
		{name: "pre-release tag", tags: []string{"v2.0.0-rc.1"}, version: `^v2\.0\.0-rc\.1$`, tagged: true},
		{name: "untagged: a snapshot", version: `^v0\.0\.0-20261201100000-[0-9a-f]{12}$`},
		{name: "other tags are not releases", tags: []string{"latest", "v1"}, version: `^v0\.0\.0-20261201100000-`},
		{name: "a version that is not the tag", want: "v1.2.3", err: "version v1.2.3 is not a tag of HEAD"},
		{name: "a version that is another tag", tags: []string{"v1.2.4"}, want: "v1.2.3", err: "has the tags v1.2.4"},
		{name: "not a release version", tags: []string{"v1.2"}, want: "v1.2", err: `version "v1.2" is not a release tag`},
		{name: "two release tags", tags: []string{"v1.0.0", "v1.0.1"}, err: "several release tags (v1.0.0, v1.0.1)"},
		{name: "dirty tree", tags: []string{"v1.2.3"}, dirty: true, err: "uncommitted changes (go.mod, new.txt)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t)
			tag(t, dir, tc.tags...)
			if tc.dirty {
				os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module y\n"), 0o644)
				os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644)
			}
			src, err := ResolveSource(t.Context(), dir, tc.want)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(tc.version).MatchString(src.Version) || src.Tagged != tc.tagged {
				t.Errorf("version %q tagged %v, want %s tagged %v", src.Version, src.Tagged, tc.version, tc.tagged)
			}
			if len(src.Commit) != 40 || src.Time.Format("2006-01-02T15:04:05Z07:00") != "2026-12-01T10:00:00Z" {
				t.Errorf("commit %q at %v", src.Commit, src.Time)
			}
		})
	}
}

func TestParsePlatforms(t *testing.T) {
	ps, err := ParsePlatforms("linux/amd64, windows/arm64")
	if err != nil || len(ps) != 2 || ps[1] != (Platform{"windows", "arm64"}) {
		t.Fatalf("got %v, %v", ps, err)
	}
	for _, bad := range []string{"", "linux", "linux/", "/amd64", "linux/arm/v7"} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
