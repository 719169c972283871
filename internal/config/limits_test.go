package config_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// TestParseLimits: each budget of limits: in its own notation; the
// fields left out keep their defaults.
func TestParseLimits(t *testing.T) {
	t.Parallel()
	f, err := config.ParseFile([]byte(`limits:
  renderedBytes: 128Mi
  renderTime: 1m30s
  renderMemory: 1Gi
  templateStack: 8Mi
  chartFiles: 500
  patchCopySize: 1000000
`))
	if err != nil {
		t.Fatal(err)
	}
	want := budget.Limits{RenderedBytes: 128 << 20, RenderTime: 90 * time.Second, RenderMemory: 1 << 30, TemplateStack: 8 << 20,
		ChartFiles: 500, ChartSize: budget.DefaultChartSize, PatchCopySize: 1_000_000}
	if diff := cmp.Diff(want, f.Limits.Fill()); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

func TestParseLimitsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown budget", "limits:\n  renderTime: 1s\n  templateDepth: 10\n", []string{"ferry.yaml", "line 3", `unknown field "templateDepth"`, "renderTime"}},
		{"size that is no size", "limits:\n  renderedBytes: lots\n", []string{"ferry.yaml", "line 2", "limits.renderedBytes", `"lots" is not a size`}},
		{"negative size", "limits:\n  chartSize: -1Mi\n", []string{"line 2", "limits.chartSize", "positive"}},
		{"time without a unit", "limits:\n  renderTime: 30\n", []string{"line 2", "limits.renderTime", "not a positive duration"}},
		{"count that is a size", "limits:\n  chartFiles: 10k\n", []string{"line 2", "limits.chartFiles", "not a positive whole number"}},
		{"empty budget", "limits:\n  renderTime:\n", []string{"line 2", "limits.renderTime", "want a value"}},
		{"limits that is a list", "limits: [renderTime]\n", []string{"line 1", "want a mapping"}},
		{"budget set twice", "limits:\n  renderTime: 1s\n  renderTime: 2s\n", []string{"line 3", "renderTime is set twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := config.ParseFile([]byte(tc.yaml))
			if f != nil {
				t.Errorf("ParseFile returned %+v along with the error", f)
			}
			wantError(t, err, tc.want...)
		})
	}
}

// TestRepoLimits: a repository renders under its ferry.yaml's limits,
// unless the caller gives others (a diff gives the base's to the head).
func TestRepoLimits(t *testing.T) {
	t.Parallel()
	root := testtree.New(t, map[string]string{
		"ferry.yaml":             "targets: [{name: app, path: app}]\nlimits: {renderTime: 5s}\n",
		"app/kustomization.yaml": "resources: []\n",
	})
	r, err := config.Load(context.Background(), root, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Limits().RenderTime; got != 5*time.Second {
		t.Errorf("ferry.yaml's renderTime: got %v, want 5s", got)
	}
	if got := r.Limits().RenderMemory; got != budget.DefaultRenderMemory {
		t.Errorf("renderMemory left out: got %d, want the default", got)
	}
	base := budget.Limits{RenderTime: time.Second}
	r, err = config.Load(context.Background(), root, render.Options{Limits: &base})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Limits().RenderTime; got != time.Second {
		t.Errorf("the caller's renderTime: got %v, want 1s", got)
	}
}
