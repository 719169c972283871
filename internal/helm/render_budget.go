package helm

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/ferry-ci/ferry/internal/budget"
)

// renderBeside is renderChart in a goroutine of its own, so that the
// caller gets its answer when ctx ends or the render passes
// limits.RenderTime, naming the stage it was at. Go cannot stop the
// goroutine: it runs on until it ends by itself, its result dropped. The
// Sandbox is what stops a render for good.
func renderBeside(ctx context.Context, r *Release, f *Fetched, values map[string]any, opts RenderOptions, limits budget.Limits) (*Rendered, error) {
	var at atomic.Value
	at.Store(stageLoad)
	type result struct {
		out *Rendered
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := renderChart(ctx, r, f, values, opts, limits, func(s string) { at.Store(s) })
		done <- result{out, err}
	}()
	timer := time.NewTimer(limits.RenderTime)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("chart %s %s: %w", f.Name, f.Version, context.Cause(ctx))
	case <-timer.C:
		return nil, fmt.Errorf("chart %s %s: %w", f.Name, f.Version, tooSlow(at.Load().(string), limits))
	}
}

// tooSlow is the error of a render stopped at stage by limits.RenderTime.
func tooSlow(stage string, limits budget.Limits) *budget.Exceeded {
	return &budget.Exceeded{What: stage, Doing: "rendering took longer than", Limit: "renderTime", Value: limits.RenderTime.String()}
}

// tooLarge is the error of a render stopped at stage by
// limits.RenderMemory.
func tooLarge(stage string, limits budget.Limits) *budget.Exceeded {
	return &budget.Exceeded{What: stage, Doing: "rendering took more memory than", Limit: "renderMemory", Value: budget.Size(limits.RenderMemory)}
}

// tooDeep is the error of a render whose templates recursed past
// limits.TemplateStack.
func tooDeep(stage string, limits budget.Limits) *budget.Exceeded {
	return &budget.Exceeded{What: stage, Doing: "include or tpl recursed deeper than a stack of", Limit: "templateStack", Value: budget.Size(limits.TemplateStack)}
}

// checkRendered refuses a release whose manifests and hooks together are
// larger than limits.RenderedBytes, naming its largest template.
func checkRendered(rel *release.Release, limits budget.Limits) error {
	size := map[string]int{}
	total := sourceSizes(rel.Manifest, size)
	for _, h := range rel.Hooks {
		total += len(h.Manifest)
		size[h.Path] += len(h.Manifest)
	}
	if int64(total) <= limits.RenderedBytes {
		return nil
	}
	largest := ""
	for name, n := range size {
		if largest == "" || n > size[largest] || n == size[largest] && name < largest {
			largest = name
		}
	}
	if largest == "" {
		return &budget.Exceeded{What: stageTemplates, Doing: fmt.Sprintf("the release renders %d bytes, more than", total), Limit: "renderedBytes", Value: budget.Size(limits.RenderedBytes)}
	}
	return &budget.Exceeded{What: largest, Doing: fmt.Sprintf("the release renders %d bytes (%d of them here), more than", total, size[largest]),
		Limit: "renderedBytes", Value: budget.Size(limits.RenderedBytes)}
}

// sourceLine is the comment Helm puts before each template's documents.
var sourceLine = regexp.MustCompile(`(?m)^# Source: (.+)$`)

// sourceSizes adds the bytes of each template's part of a release
// manifest to size and returns the manifest's length.
func sourceSizes(manifest string, size map[string]int) int {
	marks := sourceLine.FindAllStringSubmatchIndex(manifest, -1)
	for i, m := range marks {
		end := len(manifest)
		if i+1 < len(marks) {
			end = marks[i+1][0]
		}
		size[manifest[m[2]:m[3]]] += end - m[0]
	}
	return len(manifest)
}

// attribute renders ch's templates one at a time, in Helm's order, each
// with the partials of every chart beside it, telling at which template
// it is: run after a render stopped in its templates by a budget that
// cannot say where (time, memory, the stack), so that the next stop
// names the template. It returns the first template that renders more
// than limits.RenderedBytes on its own, and nil when each renders.
func attribute(ctx context.Context, r *Release, f *Fetched, values map[string]any, opts RenderOptions, limits budget.Limits, at stage) error {
	at(stageLoad)
	loaded, err := opts.Charts.load(f)
	if err != nil {
		return err
	}
	ch := cloneChart(loaded)
	if r.Chart != nil && len(r.Chart.ValuesFiles) > 0 {
		if ch.Values, err = chartValuesFiles(ch, f, r.Chart, opts.ValuesRoot); err != nil {
			return err
		}
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return err
	}
	in, err := newInstall(r, opts, limits, at)
	if err != nil {
		return err
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *in.KubeVersion
	caps.APIVersions = append(caps.APIVersions, in.APIVersions...)
	vals, err := util.ToRenderValuesWithSchemaValidation(ch, values, common.ReleaseOptions{
		Name: in.ReleaseName, Namespace: in.Namespace, Revision: 1, IsInstall: true,
	}, caps, true)
	if err != nil {
		return err
	}
	for _, name := range templateNames(ch) {
		at(name)
		out, err := engine.Engine{}.RenderWithContext(ctx, only(ch, name), vals)
		if err != nil {
			return err
		}
		if n := int64(len(out[name])); n > limits.RenderedBytes {
			return &budget.Exceeded{What: name, Doing: fmt.Sprintf("it renders %d bytes, more than", n), Limit: "renderedBytes", Value: budget.Size(limits.RenderedBytes)}
		}
	}
	return nil
}

// templateNames are the templates Helm renders of ch and its enabled
// subcharts, as Helm names them (chart/templates/x.yaml,
// chart/charts/sub/templates/y.yaml), partials and a library chart's
// templates left out, in Helm's order.
func templateNames(ch *chart.Chart) []string {
	var names []string
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, d := range c.Dependencies() {
			walk(d)
		}
		if c.Metadata != nil && c.Metadata.Type == "library" {
			return
		}
		for _, t := range c.Templates {
			if t != nil && !strings.HasPrefix(path.Base(t.Name), "_") {
				names = append(names, path.Join(c.ChartFullPath(), t.Name))
			}
		}
	}
	walk(ch)
	// Helm's order: deeper paths first, then by name.
	slices.SortStableFunc(names, func(a, b string) int {
		if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
			return db - da
		}
		return strings.Compare(b, a)
	})
	return names
}

// only is a copy of ch whose charts keep their partials and, of their
// other templates, name alone.
func only(ch *chart.Chart, name string) *chart.Chart {
	c := *ch
	c.Templates = nil
	for _, t := range ch.Templates {
		if t != nil && (strings.HasPrefix(path.Base(t.Name), "_") || path.Join(ch.ChartFullPath(), t.Name) == name) {
			c.Templates = append(c.Templates, t)
		}
	}
	deps := ch.Dependencies()
	copies := make([]*chart.Chart, len(deps))
	for i, d := range deps {
		copies[i] = only(d, name)
	}
	c.SetDependencies(copies...)
	return &c
}
