package benchkit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/bench/benchkit"
)

func TestMedian(t *testing.T) {
	if got := benchkit.Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("Median of 3 = %v, want 2", got)
	}
	if got := benchkit.Median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Errorf("Median of 4 durations = %v, want 2 (as Duration division rounds)", got)
	}
	if got := benchkit.Median[float64](nil); got != 0 {
		t.Errorf("Median of none = %v", got)
	}
	type round struct {
		wall time.Duration
		name string
	}
	rs := []round{{3, "c"}, {1, "a"}, {4, "d"}, {2, "b"}}
	if got := benchkit.MedianBy(rs, func(r round) time.Duration { return r.wall }); got.name != "c" {
		t.Errorf("MedianBy = %v, want the upper middle, c", got)
	}
	if rs[0].name != "c" {
		t.Error("MedianBy reordered its argument")
	}
}

func TestByVerb(t *testing.T) {
	if got, want := benchkit.ByVerb(map[string]float64{"patch": 10, "get": 3, "patch(dry-run)": 2}), "get 3, patch 10, patch(dry-run) 2"; got != want {
		t.Errorf("ByVerb = %q, want %q", got, want)
	}
}

func TestWriteTarget(t *testing.T) {
	dir := t.TempDir()
	if err := benchkit.WriteTarget(dir, "bench", []benchkit.File{{Name: "b.yaml", Content: "b"}, {Name: "a.yaml", Content: "a"}}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"ferry.yaml":             "targets:\n  - name: bench\n    path: app\n",
		"app/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - b.yaml\n  - a.yaml\n",
		"app/a.yaml":             "a",
	} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
}
