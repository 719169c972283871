package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	giteatest.Stop()
	os.Exit(code)
}

// TestReleaseOnGitea publishes a release of a pushed tag with two files on
// a real Gitea, then runs again (a re-run of the release job) with one
// file changed: one release, each file attached once, the second run's
// content served.
func TestReleaseOnGitea(t *testing.T) {
	g := giteatest.Require(t)
	owner := giteatest.Unique("rel")
	token := g.CreateUser(t, owner)
	g.CreateRepo(t, owner, "ferry")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("ferry\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit := g.PushDir(t, owner, "ferry", src, "main")
	c := g.Client(t, token)
	if _, _, err := c.CreateTag(owner, "ferry", gitea.CreateTagOption{TagName: "v1.2.3", Target: commit}); err != nil {
		t.Fatal(err)
	}

	dist := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dist, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	archive := write("ferry_v1.2.3_linux_amd64.tar.gz", "archive one")
	sums := write("ferry_v1.2.3_checksums.txt", "sums one\n")
	notes := write("notes.md", "the notes\n")
	api := strings.TrimSuffix(g.URL, "/") + "/api/v1"
	args := []string{"--api", api, "--repo", owner + "/ferry", "--tag", "v1.2.3", "--title", "ferry v1.2.3", "--notes-file", notes, archive, sums}

	var out bytes.Buffer
	if err := run(context.Background(), args, token, &out); err != nil {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	write("ferry_v1.2.3_checksums.txt", "sums two\n")
	out.Reset()
	if err := run(context.Background(), args, token, &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "attached ferry_v1.2.3_checksums.txt") {
		t.Errorf("output:\n%s", out.String())
	}
	noToken(t, out.String(), token)

	rels, _, err := c.ListReleases(owner, "ferry", gitea.ListReleasesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 {
		t.Fatalf("%d releases, want 1", len(rels))
	}
	rel := rels[0]
	if rel.TagName != "v1.2.3" || rel.Title != "ferry v1.2.3" || rel.Note != "the notes\n" || rel.IsDraft || rel.IsPrerelease {
		t.Errorf("release %+v", rel)
	}
	var names []string
	bodies := map[string]string{}
	for _, a := range rel.Attachments {
		names = append(names, a.Name)
		bodies[a.Name] = download(t, a.DownloadURL)
	}
	sort.Strings(names)
	if want := []string{"ferry_v1.2.3_checksums.txt", "ferry_v1.2.3_linux_amd64.tar.gz"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("attachments %v, want %v once each", names, want)
	}
	if got := bodies["ferry_v1.2.3_checksums.txt"]; got != "sums two\n" {
		t.Errorf("the checksums attachment holds %q, want the second run's", got)
	}
}

func download(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %d", url, err, resp.StatusCode)
	}
	return string(b)
}

func noToken(t *testing.T, text, token string) {
	t.Helper()
	if strings.Contains(text, token) {
		t.Errorf("the output holds the token")
	}
}

// TestBadInput: each mistake is an error naming it, before any request.
func TestBadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(other, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Port 9 (discard): a request would fail with another error.
	base := []string{"--api", "http://127.0.0.1:9/api/v1", "--repo", "o/r", "--tag", "v1.0.0"}
	for _, tc := range []struct {
		name  string
		args  []string
		token string
		want  string
	}{
		{"no token", append(base, file), "", "GITEA_TOKEN is empty"},
		{"no api", []string{"--repo", "o/r", "--tag", "v1", file}, "t", "--api is required"},
		{"bad api", []string{"--api", "ftp://x", "--repo", "o/r", "--tag", "v1", file}, "t", "not an http(s) URL"},
		{"bad repo", []string{"--api", "http://x", "--repo", "o", "--tag", "v1", file}, "t", "want OWNER/NAME"},
		{"no tag", []string{"--api", "http://x", "--repo", "o/r", file}, "t", "--tag is required"},
		{"no files", base, "t", "no files to attach"},
		{"missing file", append(base, file+".missing"), "t", "a.txt.missing"},
		{"same name twice", append(base, file, other), "t", "two attachments named a.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, tc.token, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
