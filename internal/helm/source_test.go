package helm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
)

// demoChart is the folder of the chart the source tests package.
func demoChart(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "sources", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fetchedSummary is what a test compares of a Fetched: everything but
// the archive's bytes, which only its digest stands for.
type fetchedSummary struct {
	Name, Version, Digest string
	HasArchive            bool
	Dir                   string
}

func summary(f *helm.Fetched) fetchedSummary {
	return fetchedSummary{Name: f.Name, Version: f.Version, Digest: f.Digest, HasArchive: len(f.Archive) > 0, Dir: f.Dir}
}

func sha(b []byte) string { return "sha256:" + helmtest.Digest(b) }

// wantError checks that err is target and that its message names every
// one of names and none of hidden.
func wantError(t *testing.T, err, target error, names []string, hidden ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", target)
	}
	if !errors.Is(err, target) {
		t.Fatalf("error %q is not %q", err, target)
	}
	t.Log(err)
	var fe *helm.FetchError
	if !errors.As(err, &fe) {
		t.Errorf("error %q is no *helm.FetchError", err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
	for _, h := range hidden {
		if strings.Contains(err.Error(), h) {
			t.Errorf("error %q shows %q", err, h)
		}
	}
}

var demoVersions = []string{"1.0.0", "1.2.0", "1.10.0", "1.11.0-rc.1", "2.0.0"}

func TestFetchHTTPPicksVersions(t *testing.T) {
	t.Parallel()
	for _, abs := range []bool{false, true} {
		r := helmtest.NewRepo(t, helmtest.RepoOptions{AbsoluteURLs: abs})
		archives := r.Add(t, demoChart(t), demoVersions...)
		s := helm.NewSources(helm.SourcesOptions{})
		for _, tc := range []struct{ version, want string }{
			{"^1.0.0", "1.10.0"}, // 1.10 > 1.2: semver order, not string order
			{"~1.2", "1.2.0"},
			{"", "2.0.0"},
			{"*", "2.0.0"},
			{"1.2.0", "1.2.0"},
			{">=1.11.0-0 <2.0.0", "1.11.0-rc.1"}, // a prerelease only when the range asks
			{"1.11.0-rc.1", "1.11.0-rc.1"},
		} {
			t.Run(fmt.Sprintf("absolute=%v/%s", abs, tc.version), func(t *testing.T) {
				f, err := s.Fetch(context.Background(), helm.ChartSource{Kind: helm.HTTPRepository, URL: r.URL + "/", Chart: "demo", Version: tc.version})
				if err != nil {
					t.Fatal(err)
				}
				want := fetchedSummary{Name: "demo", Version: tc.want, Digest: sha(archives[tc.want]), HasArchive: true}
				if diff := cmp.Diff(want, summary(f)); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
			})
		}
	}
}

func TestFetchHTTPErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := helmtest.NewRepo(t, helmtest.RepoOptions{})
	archives := r.Add(t, demoChart(t), "1.0.0", "1.1.0", "1.2.0")
	other, _ := helmtest.Package(t, demoChart(t), "9.9.9")
	// 1.1.0's file is replaced after indexing: the index's digest no
	// longer matches.
	r.Put(t, "demo-1.1.0.tgz", other)
	// 1.2.0 is no gzip at all, and the index says so honestly.
	garbage := []byte("this is not a chart archive")
	r.Put(t, "demo-1.2.0.tgz", garbage)
	_, md := helmtest.Package(t, demoChart(t), "1.3.0")
	r.AddArchive(t, md, garbage, helmtest.Digest(garbage))
	// 1.4.0 is cut short after 100 bytes; the index has no digest.
	_, md = helmtest.Package(t, demoChart(t), "1.4.0")
	r.AddArchive(t, md, archives["1.0.0"][:100], "")

	s := helm.NewSources(helm.SourcesOptions{})
	src := func(chart, version string) helm.ChartSource {
		return helm.ChartSource{Kind: helm.HTTPRepository, URL: r.URL, Chart: chart, Version: version}
	}
	for _, tc := range []struct {
		name   string
		src    helm.ChartSource
		target error
		names  []string
	}{
		{"no version matches", src("demo", "^3.0.0"), helm.ErrNotFound, []string{"demo", `"^3.0.0"`, r.URL, "1.2.0"}},
		{"no such version", src("demo", "1.0.7"), helm.ErrNotFound, []string{"demo", "1.0.7"}},
		{"no such chart", src("nothere", ""), helm.ErrNotFound, []string{"nothere", r.URL}},
		{"digest mismatch", src("demo", "1.1.0"), helm.ErrDigestMismatch, []string{"demo", `"1.1.0"`, helmtest.Digest(archives["1.1.0"]), helmtest.Digest(other)}},
		{"not gzip", src("demo", "1.3.0"), helm.ErrCorrupt, []string{"demo", `"1.3.0"`}},
		{"truncated", src("demo", "1.4.0"), helm.ErrCorrupt, []string{"demo", `"1.4.0"`}},
		{"no repository", helm.ChartSource{Kind: helm.HTTPRepository, URL: r.URL + "/missing", Chart: "demo"}, helm.ErrNotFound, []string{"demo", r.URL + "/missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Fetch(ctx, tc.src)
			wantError(t, err, tc.target, tc.names)
		})
	}

	t.Run("oversized", func(t *testing.T) {
		small := helm.NewSources(helm.SourcesOptions{MaxArchiveSize: 200})
		_, err := small.Fetch(ctx, src("demo", "1.0.0"))
		wantError(t, err, helm.ErrTooLarge, []string{"demo", `"1.0.0"`})
	})
}

func TestFetchHTTPBasicAuth(t *testing.T) {
	t.Parallel()
	const user, pass = "reader", "s3cret-pass"
	r := helmtest.NewRepo(t, helmtest.RepoOptions{Username: user, Password: pass})
	archives := r.Add(t, demoChart(t), "1.0.0")
	ctx := context.Background()
	src := helm.ChartSource{Kind: helm.HTTPRepository, URL: r.URL, Chart: "demo", Version: "^1"}

	for _, tc := range []struct {
		name  string
		creds *helm.Credentials
	}{
		{"no credentials", nil},
		{"wrong password", &helm.Credentials{Origin: r.URL, Username: user, Password: "wrong-pass"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := src
			src.Credentials = tc.creds
			_, err := helm.NewSources(helm.SourcesOptions{}).Fetch(ctx, src)
			wantError(t, err, helm.ErrUnauthorized, []string{"demo", r.URL, "refused", "127.0.0.1"}, "wrong-pass", pass)
		})
	}
	t.Run("credentials", func(t *testing.T) {
		s := helm.NewSources(helm.SourcesOptions{})
		// A refusal is not kept: the same Sources tries again.
		if _, err := s.Fetch(ctx, src); !errors.Is(err, helm.ErrUnauthorized) {
			t.Fatalf("without credentials: %v", err)
		}
		src := src
		src.Credentials = &helm.Credentials{Origin: r.URL, Username: user, Password: pass}
		f, err := s.Fetch(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if f.Digest != sha(archives["1.0.0"]) {
			t.Errorf("digest %s, want %s", f.Digest, sha(archives["1.0.0"]))
		}
	})
}

// An index that sends the archive to another host gets no credentials
// sent there, as Helm does unless told to pass them on.
func TestFetchHTTPCredentialsStayOnTheRepositoryHost(t *testing.T) {
	t.Parallel()
	files := helmtest.NewRepo(t, helmtest.RepoOptions{AbsoluteURLs: true})
	archive, md := helmtest.Package(t, demoChart(t), "1.0.0")
	files.Put(t, "demo-1.0.0.tgz", archive)

	// The index lives on a repository with credentials; its URL for the
	// archive is on files' host (localhost instead of 127.0.0.1).
	index := helmtest.NewRepo(t, helmtest.RepoOptions{Username: "u", Password: "p", AbsoluteURLs: true})
	md.Version = "1.0.0"
	index.AddArchive(t, md, archive, helmtest.Digest(archive))
	// Rewrite the URL to point at files' server by name.
	b, err := os.ReadFile(filepath.Join(index.Dir, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := strings.Replace(files.URL, "127.0.0.1", "localhost", 1)
	index.Put(t, "index.yaml", []byte(strings.ReplaceAll(string(b), index.URL, elsewhere)))

	s := helm.NewSources(helm.SourcesOptions{})
	f, err := s.Fetch(context.Background(), helm.ChartSource{Kind: helm.HTTPRepository, URL: index.URL, Chart: "demo", Credentials: &helm.Credentials{Origin: index.URL, Username: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != "1.0.0" {
		t.Errorf("version %s", f.Version)
	}
	if n := files.Requests("/demo-1.0.0.tgz"); n != 1 {
		t.Errorf("%d requests for the archive, want 1", n)
	}
	if n := files.AuthorizationSeen("/demo-1.0.0.tgz"); n != 0 {
		t.Errorf("credentials sent to another host %d times", n)
	}
}

// However many releases ask for a chart version, and however
// concurrently, the index and the archive are fetched once; a second run
// on the same cache folder fetches neither while the index is fresh, and
// only the index once it is stale.
func TestFetchHTTPFetchesOnce(t *testing.T) {
	t.Parallel()
	r := helmtest.NewRepo(t, helmtest.RepoOptions{})
	archives := r.Add(t, demoChart(t), "1.0.0", "1.2.0", "2.0.0")
	cache := t.TempDir()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx := context.Background()

	run := func(t *testing.T) {
		t.Helper()
		s := helm.NewSources(helm.SourcesOptions{CacheDir: cache, Now: clock})
		versions := []string{"^1.0.0", "1.2.0", "~1.2", ">=1.1 <2", "1.x"}
		var wg sync.WaitGroup
		errs := make([]error, 40)
		got := make([]*helm.Fetched, 40)
		for i := range errs {
			wg.Go(func() {
				got[i], errs[i] = s.Fetch(ctx, helm.ChartSource{Kind: helm.HTTPRepository, URL: r.URL, Chart: "demo", Version: versions[i%len(versions)]})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
			if got[i].Version != "1.2.0" || got[i].Digest != sha(archives["1.2.0"]) {
				t.Fatalf("fetch %d: %+v", i, summary(got[i]))
			}
		}
	}
	requests := func() [2]int { return [2]int{r.Requests("/index.yaml"), r.Requests("/demo-1.2.0.tgz")} }

	run(t)
	if diff := cmp.Diff([2]int{1, 1}, requests()); diff != "" {
		t.Errorf("first run: requests for index.yaml, archive (-want +got)\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(cache, "charts", "sha256", helmtest.Digest(archives["1.2.0"])+".tgz")); err != nil {
		t.Errorf("archive not in the cache by its digest: %v", err)
	}
	run(t)
	if diff := cmp.Diff([2]int{1, 1}, requests()); diff != "" {
		t.Errorf("second run, fresh index: (-want +got)\n%s", diff)
	}
	mu.Lock()
	now = now.Add(helm.DefaultIndexTTL + time.Second)
	mu.Unlock()
	run(t)
	if diff := cmp.Diff([2]int{2, 1}, requests()); diff != "" {
		t.Errorf("third run, stale index: (-want +got)\n%s", diff)
	}
}

func TestFetchFolder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	copyChart(t, demoChart(t), filepath.Join(root, "charts", "demo"))
	copyChart(t, demoChart(t), filepath.Join(outside, "demo"))
	mkdir(t, filepath.Join(root, "links"))
	mkdir(t, filepath.Join(root, "empty"))
	symlink(t, filepath.Join(outside, "demo"), filepath.Join(root, "links", "away"))
	symlink(t, filepath.Join(root, "charts", "demo"), filepath.Join(root, "links", "here"))
	copyChart(t, demoChart(t), filepath.Join(root, "charts", "leaky"))
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("not for charts"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, secret, filepath.Join(root, "charts", "leaky", "files.txt"))

	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	s := helm.NewSources(helm.SourcesOptions{})
	for _, path := range []string{"charts/demo", "./charts/demo/", "links/here"} {
		t.Run(path, func(t *testing.T) {
			f, err := s.Fetch(context.Background(), helm.ChartSource{Kind: helm.Folder, Root: root, Path: path})
			if err != nil {
				t.Fatal(err)
			}
			want := fetchedSummary{Name: "demo", Version: "0.1.0", Dir: filepath.Join(realRoot, "charts", "demo")}
			if diff := cmp.Diff(want, summary(f)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	for _, tc := range []struct {
		path   string
		target error
	}{
		{"../" + filepath.Base(outside) + "/demo", helm.ErrEscapes},
		{"charts/../../x", helm.ErrEscapes},
		{"links/away", helm.ErrEscapes},
		{"charts/leaky", helm.ErrEscapes},
		{"charts/missing", helm.ErrNotFound},
		{"empty", helm.ErrNotFound}, // a folder without Chart.yaml
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, err := s.Fetch(context.Background(), helm.ChartSource{Kind: helm.Folder, Root: root, Path: tc.path})
			wantError(t, err, tc.target, []string{tc.path})
		})
	}
}

func copyChart(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
