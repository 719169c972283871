package helm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
)

// Charts pushed with Helm's registry client to Debian's docker-registry
// (htpasswd authentication), fetched by tag, range and digest.
func TestFetchOCI(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	archives := map[string][]byte{}
	pushed := map[string]helmtest.Pushed{}
	for _, v := range []string{"1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1"} {
		archives[v], _ = helmtest.Package(t, demoChart(t), v)
		pushed[v] = helmtest.Push(t, reg.Host, "charts", archives[v], reg.Username, reg.Password)
		if pushed[v].Chart != sha(archives[v]) {
			t.Fatalf("chart layer %s of %s is not the archive's digest %s", pushed[v].Chart, v, sha(archives[v]))
		}
	}
	creds := &helm.Credentials{Origin: "http://" + reg.Host, Username: reg.Username, Password: reg.Password}
	repoURL := "oci://" + reg.Host + "/charts"
	s := helm.NewSources(helm.SourcesOptions{})
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		src  helm.ChartSource
		want string
	}{
		{"range", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "^1.0.0"}, "1.10.0"},
		{"newest", helm.ChartSource{URL: repoURL, Chart: "demo"}, "1.10.0"},
		{"star", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "*"}, "1.10.0"},
		{"exact", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "1.2.0"}, "1.2.0"},
		{"prerelease range", helm.ChartSource{URL: repoURL, Chart: "demo", Version: ">=2.0.0-0"}, "2.0.0-rc.1"},
		{"digest", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "^1", Digest: pushed["1.0.0"].Manifest}, "1.0.0"},
		// An OCIRepository object: the URL names the artifact.
		{"artifact URL", helm.ChartSource{URL: repoURL + "/demo", Version: "~1.2"}, "1.2.0"},
		{"insecure", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "1.0.0", Insecure: true}, "1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			src.Kind = helm.OCIRepository
			src.Credentials = creds
			f, err := s.Fetch(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			want := fetchedSummary{Name: "demo", Version: tc.want, Digest: sha(archives[tc.want]), HasArchive: true}
			if diff := cmp.Diff(want, summary(f)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}

	for _, tc := range []struct {
		name   string
		src    helm.ChartSource
		target error
		names  []string
	}{
		{"no version matches", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "^5.0.0", Credentials: creds}, helm.ErrNotFound, []string{"demo", `"^5.0.0"`, reg.Host, "1.10.0"}},
		{"no such tag", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "9.9.9", Credentials: creds}, helm.ErrNotFound, []string{"demo", `"9.9.9"`, reg.Host}},
		{"no such chart", helm.ChartSource{URL: repoURL, Chart: "nothere", Version: "1.0.0", Credentials: creds}, helm.ErrNotFound, []string{"nothere", reg.Host}},
		{"wrong password", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "^1", Credentials: &helm.Credentials{Origin: "http://" + reg.Host, Username: reg.Username, Password: "wrong-pass"}}, helm.ErrUnauthorized, []string{"demo", reg.Host, "the registry refused the credentials"}},
		{"wrong password, exact tag", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "1.0.0", Credentials: &helm.Credentials{Origin: "http://" + reg.Host, Username: reg.Username, Password: "wrong-pass"}}, helm.ErrUnauthorized, []string{"demo", reg.Host, "the registry refused the credentials"}},
		{"no credentials", helm.ChartSource{URL: repoURL, Chart: "demo", Version: "^1"}, helm.ErrUnauthorized, []string{"demo", reg.Host, "without credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			src.Kind = helm.OCIRepository
			_, err := helm.NewSources(helm.SourcesOptions{}).Fetch(ctx, src)
			wantError(t, err, tc.target, tc.names, "wrong-pass", reg.Password)
		})
	}

	t.Run("oversized", func(t *testing.T) {
		small := helm.NewSources(helm.SourcesOptions{MaxArchiveSize: 200})
		_, err := small.Fetch(ctx, helm.ChartSource{Kind: helm.OCIRepository, URL: repoURL, Chart: "demo", Version: "1.0.0", Credentials: creds})
		wantError(t, err, helm.ErrTooLarge, []string{"demo", `"1.0.0"`})
	})

}

// However many releases ask for a chart version of a registry, and
// however concurrently, its tags are listed once and its chart layer is
// pulled once; a second run on the same cache folder reads the manifest
// again (tags move) but not the layer.
func TestFetchOCIFetchesOnce(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	var layer string
	for _, v := range []string{"1.0.0", "1.2.0"} {
		archive, _ := helmtest.Package(t, demoChart(t), v)
		layer = helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password).Chart
	}
	proxy := helmtest.NewProxy(t, reg.Host)
	cache := t.TempDir()
	ctx := context.Background()
	creds := &helm.Credentials{Origin: "http://" + proxy.Host, Username: reg.Username, Password: reg.Password}

	run := func(t *testing.T) {
		t.Helper()
		s := helm.NewSources(helm.SourcesOptions{CacheDir: cache})
		versions := []string{"^1.0.0", "1.2.0", "~1.2"}
		var wg sync.WaitGroup
		errs := make([]error, 30)
		got := make([]*helm.Fetched, 30)
		for i := range errs {
			wg.Go(func() {
				got[i], errs[i] = s.Fetch(ctx, helm.ChartSource{Kind: helm.OCIRepository, URL: "oci://" + proxy.Host + "/charts", Chart: "demo", Version: versions[i%len(versions)], Credentials: creds})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
			if got[i].Version != "1.2.0" || got[i].Digest != layer {
				t.Fatalf("fetch %d: %+v", i, summary(got[i]))
			}
		}
	}
	requests := func() [3]int {
		return [3]int{
			proxy.Requests("GET", "/v2/charts/demo/tags/list"),
			proxy.Requests("GET", "/v2/charts/demo/manifests/1.2.0"),
			proxy.Requests("GET", "/v2/charts/demo/blobs/"+layer),
		}
	}
	run(t)
	if diff := cmp.Diff([3]int{1, 1, 1}, requests()); diff != "" {
		t.Errorf("first run: requests for tags, manifest, layer (-want +got)\n%s", diff)
	}
	run(t)
	if diff := cmp.Diff([3]int{2, 2, 1}, requests()); diff != "" {
		t.Errorf("second run on the same cache: requests for tags, manifest, layer (-want +got)\n%s", diff)
	}
}
