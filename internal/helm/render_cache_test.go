package helm_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/helm"
)

// keptFiles lists the renders a cache folder holds.
func keptFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(filepath.Join(dir, "renders"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestRenderCacheKeepsRendersByWhatTheyTake: a render is kept on disk
// and read back by a later cache (a later run) without the chart being
// loaded: the archive handed in the second time is not a chart at all,
// only its digest is the same. Other values, a render not to be kept
// and a damaged file are not read.
func TestRenderCacheKeepsRendersByWhatTheyTake(t *testing.T) {
	f := packageChart(t, "umbrella")
	sum := sha256.Sum256(f.Archive)
	f.Digest = "sha256:" + hex.EncodeToString(sum[:])
	garbage := &helm.Fetched{Name: f.Name, Version: f.Version, Digest: f.Digest, Archive: []byte("not a chart")}
	r := parseRelease(t, "web", "apps", `chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}`)
	values := map[string]any{"replicaCount": 3}
	dir := t.TempDir()

	first := helm.NewRenderCache(dir, 0)
	want, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{Cache: first, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(keptFiles(t, dir)); n != 1 {
		t.Fatalf("%d renders kept, want 1", n)
	}
	// A caller may change what it got: the cache's copy stays.
	want.Objects[0].SetName("changed-by-the-caller")
	if again, err := helm.Render(t.Context(), r, garbage, values, helm.RenderOptions{Cache: first}); err != nil || again.Objects[0].GetName() == "changed-by-the-caller" {
		t.Fatalf("in-memory copy: %v, %v", err, again)
	}

	later := helm.NewRenderCache(dir, 0)
	got, err := helm.Render(t.Context(), r, garbage, values, helm.RenderOptions{Cache: later})
	if err != nil {
		t.Fatalf("kept render not read: %v", err)
	}
	fresh, _ := helm.Render(t.Context(), r, f, values, helm.RenderOptions{})
	if !slices.Equal(objectJSON(t, got.Objects), objectJSON(t, fresh.Objects)) || !slices.Equal(got.Sources, fresh.Sources) || got.Name != fresh.Name || got.Namespace != fresh.Namespace || len(got.Hooks) != len(fresh.Hooks) {
		t.Fatal("kept render differs from a fresh one")
	}

	// Other values are another key.
	if _, err := helm.Render(t.Context(), r, garbage, map[string]any{"replicaCount": 4}, helm.RenderOptions{Cache: later}); err == nil {
		t.Fatal("a render of other values was taken from the cache")
	}
	// A render not to be kept (values from a Secret) stays in memory.
	otherDir := t.TempDir()
	if _, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{Cache: helm.NewRenderCache(otherDir, 0), Keep: false}); err != nil {
		t.Fatal(err)
	}
	if n := len(keptFiles(t, otherDir)); n != 0 {
		t.Fatalf("a render not to be kept was written (%d files)", n)
	}

	// A damaged file is not trusted, and is written again.
	files := keptFiles(t, dir)
	b, _ := os.ReadFile(files[0])
	if err := os.WriteFile(files[0], []byte(strings.Replace(string(b), "web", "wex", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := helm.Render(t.Context(), r, garbage, values, helm.RenderOptions{Cache: helm.NewRenderCache(dir, 0)}); err == nil {
		t.Fatal("a damaged render was read")
	}
	if _, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{Cache: helm.NewRenderCache(dir, 0), Keep: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := helm.Render(t.Context(), r, garbage, values, helm.RenderOptions{Cache: helm.NewRenderCache(dir, 0)}); err != nil {
		t.Fatalf("the render written again is not read: %v", err)
	}
}

// TestRenderCacheStaysUnderItsSize: the renders least recently used go
// first once the folder is over its size.
func TestRenderCacheStaysUnderItsSize(t *testing.T) {
	f := packageChart(t, "umbrella")
	sum := sha256.Sum256(f.Archive)
	f.Digest = "sha256:" + hex.EncodeToString(sum[:])
	r := parseRelease(t, "web", "apps", `chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}`)
	dir := t.TempDir()
	keep := func(i int, max int64) {
		t.Helper()
		// One cache a run: a cache trims once a run.
		if _, err := helm.Render(t.Context(), r, f, map[string]any{"replicaCount": i}, helm.RenderOptions{Cache: helm.NewRenderCache(dir, max), Keep: true}); err != nil {
			t.Fatal(err)
		}
	}
	keep(0, 0)
	fi, err := os.Stat(keptFiles(t, dir)[0])
	if err != nil {
		t.Fatal(err)
	}
	first := keptFiles(t, dir)[0]
	for i := 1; i < 5; i++ {
		keep(i, fi.Size()*5/2)
	}
	files := keptFiles(t, dir)
	if len(files) != 2 || slices.Contains(files, first) {
		t.Fatalf("kept %v after 5 renders with room for 2; the first, %s, should be gone", files, first)
	}
}
