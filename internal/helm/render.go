package helm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/manifest"
)

// DefaultKubeVersion is the Kubernetes version charts see when the
// caller names none: the version of the Kubernetes client ferry is built
// with (k8s.io/client-go v0.37 is Kubernetes 1.37), the version Helm's own
// client-only rendering would report, fixed here so renders do not
// depend on how the binary was built.
const DefaultKubeVersion = "v1.37.0"

// RenderOptions are the cluster facts a chart may ask about, and the
// loaded-chart cache.
//
// The capabilities rule: .Capabilities.KubeVersion is KubeVersion, or
// DefaultKubeVersion when empty; .Capabilities.APIVersions is Helm's
// built-in set (every group/version and group/version/Kind of the
// Kubernetes API compiled into ferry) plus APIVersions. A caller passes
// the capabilities declared for the cluster, and in APIVersions the
// group/versions (and group/version/Kinds) of the CRDs the cluster's own
// render defines, so a PR's diff and the apply render alike, without
// asking a cluster.
type RenderOptions struct {
	KubeVersion string
	APIVersions []string
	// Charts caches loaded charts across renders; nil loads the chart
	// for this render only.
	Charts *LoadedCharts
	// ValuesRoot is the root of the source a Folder chart was fetched
	// from (the Git checkout): spec.chart.spec.valuesFiles are relative
	// to it, as Flux reads them relative to the source. Empty: relative
	// to the chart, as for a packaged chart.
	ValuesRoot string
	// Limits bound the render; zero fields are the defaults.
	Limits budget.Limits
	// Sandbox, when set, renders in its child process, where the
	// memory and stack budgets hold and a runaway template is stopped
	// with the process. Nil renders in this process: the render is
	// abandoned at its time budget or when ctx ends, but runs on until it
	// finishes by itself, and memory is bounded only by the checks of
	// what it rendered.
	Sandbox *Sandbox
	// Cache, when set, keeps renders by what they take (RenderCache),
	// on disk only when Keep is set: the values hold no Secret's or
	// decrypted value.
	Cache *RenderCache
	Keep  bool
}

// Rendered is what one release installs.
type Rendered struct {
	// Chart and Version are the chart's name and version.
	Chart, Version string
	// Name and Namespace are the Helm release's. Namespaced objects the
	// chart leaves without a namespace belong in Namespace.
	Name, Namespace string
	// Objects are the chart's objects in Helm's install order, the CRDs
	// of its crds/ folders first (unless install.crds is Skip),
	// post-rendered.
	Objects []*unstructured.Unstructured
	// Sources name the chart file each of Objects was rendered from, by
	// index, relative to the chart: templates/deployment.yaml,
	// crds/widgets.yaml, charts/db/templates/db.yaml ("" when Helm did
	// not say).
	Sources []string
	// Hooks are the chart's hooks in Helm's execution order (by weight,
	// then name). Test hooks, and hooks that only run on delete or
	// rollback, are left out.
	Hooks []Hook
}

// Hook is one hook object of a release, with its helm.sh/hook
// annotations (the hook-delete-policy among them) and the phases it runs
// in. A hook on both pre and post events is one Hook of both phases, as
// it is one object that Helm runs twice.
type Hook struct {
	Object *unstructured.Unstructured
	// Pre: it runs before the objects (pre-install, pre-upgrade).
	Pre bool
	// Post: it runs after them (post-install, post-upgrade).
	Post bool
	// Source is the chart file it was rendered from, as in
	// Rendered.Sources.
	Source string
}

// Render renders release r of the fetched chart f with the values
// ComposeValues gave, as helm-controller would install it, offline:
// Helm's client-only install with the release name of ReleaseName, the
// release namespace, the capabilities of opts, CRDs as install.crds
// says, and r's kustomize post-renderers. lookup finds nothing. Errors
// name the HelmRelease and the chart; template errors also the template
// file and line.
//
// A chart is code from the repository: the render runs under opts.Limits
// (renderTime, renderedBytes, renderMemory, templateStack), in
// opts.Sandbox's child process when one is given, and returns as soon as
// ctx ends. A render that goes over a budget fails with a
// *budget.Exceeded naming the template or post-renderer.
func Render(ctx context.Context, r *Release, f *Fetched, values map[string]any, opts RenderOptions) (*Rendered, error) {
	limits := opts.Limits.Fill()
	if values == nil {
		values = map[string]any{}
	}
	var key string
	if opts.Cache != nil {
		if key = renderKey(r, f, values, opts, limits); key != "" {
			if out, ok := opts.Cache.get(key); ok {
				return out, nil
			}
		}
	}
	var (
		out *Rendered
		err error
	)
	if opts.Sandbox != nil {
		out, err = opts.Sandbox.render(ctx, r, f, values, opts, limits)
	} else {
		out, err = renderBeside(ctx, r, f, values, opts, limits)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.ID(), err)
	}
	if key != "" {
		opts.Cache.put(key, out, opts.Keep)
	}
	return out, nil
}

// stage is told what a render is doing, for an error about a budget
// that stops it there.
type stage func(what string)

// Stages a render goes through before and after its templates (the
// templates themselves are named by file when a budget stops them).
const (
	stageLoad      = "loading the chart"
	stageTemplates = "templates"
	stageParse     = "reading the rendered objects"
)

// renderChart is one render, in the calling goroutine. Errors name the
// chart, not the HelmRelease (Render adds it).
func renderChart(ctx context.Context, r *Release, f *Fetched, values map[string]any, opts RenderOptions, limits budget.Limits, at stage) (*Rendered, error) {
	at(stageLoad)
	loaded, err := opts.Charts.load(f)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s %s: %w", f.Name, f.Version, err)
	}
	ch := cloneChart(loaded)
	chartID := ch.Name() + " " + ch.Metadata.Version
	if r.Chart != nil && len(r.Chart.ValuesFiles) > 0 {
		ch.Values, err = chartValuesFiles(ch, f, r.Chart, opts.ValuesRoot)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", chartID, err)
		}
	}
	in, err := newInstall(r, opts, limits, at)
	if err != nil {
		return nil, err
	}
	at(stageTemplates)
	rr, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		var over *budget.Exceeded
		if errors.As(err, &over) {
			return nil, fmt.Errorf("chart %s: %w", chartID, over)
		}
		return nil, fmt.Errorf("rendering chart %s: %w", chartID, err)
	}
	rel, ok := rr.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("rendering chart %s: Helm returned a %T release", chartID, rr)
	}
	if err := checkRendered(rel, limits); err != nil {
		return nil, fmt.Errorf("chart %s: %w", chartID, err)
	}

	at(stageParse)
	out := &Rendered{Chart: ch.Name(), Version: ch.Metadata.Version, Name: in.ReleaseName, Namespace: in.Namespace}
	objs, err := parseSourced(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("chart %s: reading rendered objects: %w", chartID, err)
	}
	crdsFirst(objs)
	for _, o := range objs {
		out.Objects = append(out.Objects, o.u)
		out.Sources = append(out.Sources, chartFile(ch.Name(), o.source))
	}
	if r.DisableHooks {
		return out, nil
	}
	if out.Hooks, err = hooksOf(ch.Name(), rel.Hooks); err != nil {
		return nil, fmt.Errorf("chart %s: %w", chartID, err)
	}
	return out, nil
}

// newInstall is Helm's client-only install of r, as Render describes it.
func newInstall(r *Release, opts RenderOptions, limits budget.Limits, at stage) (*action.Install, error) {
	kube := opts.KubeVersion
	if kube == "" {
		kube = DefaultKubeVersion
	}
	kv, err := common.ParseKubeVersion(kube)
	if err != nil {
		return nil, fmt.Errorf("kubernetes version %q: %w", kube, err)
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	in := action.NewInstall(cfg)
	in.DryRunStrategy = action.DryRunClient
	in.Replace = true
	in.ReleaseName = ReleaseName(r)
	in.Namespace = r.ReleaseNamespace()
	in.KubeVersion = kv
	in.APIVersions = common.VersionSet(slices.Clone(opts.APIVersions))
	in.IncludeCRDs = r.InstallCRDs != SkipCRDs
	if len(r.PostRenderers) > 0 {
		in.PostRenderer = &postRenderer{kustomizations: r.PostRenderers, limits: limits, at: at}
		in.PostRenderStrategy = action.PostRenderStrategy(r.PostRenderStrategy)
	}
	return in, nil
}

// crdsFirst moves CustomResourceDefinitions to the front, keeping the
// order otherwise.
func crdsFirst(objs []sourced) {
	sort.SliceStable(objs, func(i, j int) bool {
		return manifest.IsCRD(objs[i].u) && !manifest.IsCRD(objs[j].u)
	})
}

// chartFile is a file Helm names by its path in the chart's tree
// (web/templates/x.yaml) relative to the chart: templates/x.yaml.
func chartFile(chartName, path string) string {
	return strings.TrimPrefix(path, chartName+"/")
}

// hooksOf reads Helm's hooks in execution order, each once with the
// phases it runs in.
func hooksOf(chartName string, hooks []*release.Hook) ([]Hook, error) {
	sorted := slices.Clone(hooks)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Weight != sorted[j].Weight {
			return sorted[i].Weight < sorted[j].Weight
		}
		return sorted[i].Name < sorted[j].Name
	})
	var out []Hook
	for _, h := range sorted {
		pre := slices.Contains(h.Events, release.HookPreInstall) || slices.Contains(h.Events, release.HookPreUpgrade)
		post := slices.Contains(h.Events, release.HookPostInstall) || slices.Contains(h.Events, release.HookPostUpgrade)
		if !pre && !post {
			continue
		}
		objs, err := parseObjects(h.Manifest)
		if err != nil {
			return nil, fmt.Errorf("reading hook %s: %w", h.Path, err)
		}
		for _, o := range objs {
			out = append(out, Hook{Object: o, Pre: pre, Post: post, Source: chartFile(chartName, h.Path)})
		}
	}
	return out, nil
}

// sourced is a rendered object and the chart file Helm says it came
// from.
type sourced struct {
	u      *unstructured.Unstructured
	source string
}

// sourceComment starts the line by which Helm names the template a
// document of a release's manifest was rendered from.
const sourceComment = "# Source: "

// parseSourced reads a release's manifest, each object with the file
// its document's "# Source:" line names.
func parseSourced(stream string) ([]sourced, error) {
	var out []sourced
	err := eachObject(stream, func(doc []byte, u *unstructured.Unstructured) {
		source := ""
		for line := range strings.SplitSeq(string(doc), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), sourceComment); ok {
				source = strings.TrimSpace(rest)
				break
			}
		}
		out = append(out, sourced{u: u, source: source})
	})
	return out, err
}

// parseObjects reads a YAML stream of objects, skipping empty documents.
// A stream whose aliases expand past manifest.MaxExpandedNodes is
// refused before anything expands them.
func parseObjects(stream string) ([]*unstructured.Unstructured, error) {
	if err := manifest.CheckAliases("the rendered manifests", []byte(stream)); err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	err := eachObject(stream, func(_ []byte, u *unstructured.Unstructured) { out = append(out, u) })
	return out, err
}

// eachObject calls fn with each document of a YAML stream that holds an
// object, and the object, skipping empty documents.
func eachObject(stream string, fn func(doc []byte, u *unstructured.Unstructured)) error {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		if t := bytes.TrimSpace(j); bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return fmt.Errorf("%w:\n%s", err, bytes.TrimSpace(doc))
		}
		fn(doc, u)
	}
}

// cloneChart copies what rendering changes of a chart (its dependencies,
// their metadata and values, as conditions and import-values are
// processed) so a cached chart can be rendered by many releases at once;
// templates and files are shared.
func cloneChart(c *chart.Chart) *chart.Chart {
	out := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = slices.Clone(c.Metadata.Dependencies)
		for i, d := range md.Dependencies {
			dc := *d
			dc.Tags = slices.Clone(d.Tags)
			dc.ImportValues = slices.Clone(d.ImportValues)
			md.Dependencies[i] = &dc
		}
		out.Metadata = &md
	}
	if c.Lock != nil {
		lock := *c.Lock
		lock.Dependencies = slices.Clone(c.Lock.Dependencies)
		out.Lock = &lock
	}
	out.Values = copyMap(c.Values)
	deps := c.Dependencies()
	clones := make([]*chart.Chart, len(deps))
	for i, d := range deps {
		clones[i] = cloneChart(d)
	}
	out.SetDependencies(clones...)
	return &out
}
