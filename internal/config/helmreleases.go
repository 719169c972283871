package config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// HelmHookAnnotation marks the hook objects of a rendered HelmRelease
// with their phases, HookPre, HookPost or HookPrePost; kube.Client.Apply
// applies them in waves of their own (manifest.Wave).
const HelmHookAnnotation = manifest.HelmHookAnnotation

// The values of HelmHookAnnotation.
const (
	HookPre     = manifest.HookPre
	HookPost    = manifest.HookPost
	HookPrePost = manifest.HookPrePost
)

// expandReleases returns the build res of t with each Flux HelmRelease in
// it followed by the objects its chart renders: the HelmRelease stays, so
// that ActsOn can leave it out on a cluster without Flux's CRDs. The
// result's Releases name each release and the chart version it resolved
// to; origins say, for each object a chart rendered, which release,
// chart and chart file it came from (for errors). A build without
// HelmReleases, or of a cluster that leaves them to a helm-controller,
// is returned as it is. The first release that cannot be rendered fails
// the target, naming the HelmRelease and its chart.
func (r *Repo) expandReleases(ctx context.Context, t *Target, res *render.Result) (*render.Result, map[*unstructured.Unstructured]string, error) {
	if t.HelmReleases == HelmController || !slices.ContainsFunc(res.Set.Objects, helm.IsRelease) {
		return res, nil, nil
	}
	apiVersions := r.clusterAPIVersions(ctx, t, res)
	out := *res
	out.Set = manifest.Set{Objects: make([]*unstructured.Unstructured, 0, len(res.Set.Objects))}
	out.Files = slices.Clone(res.Files)
	origins := map[*unstructured.Unstructured]string{}
	for _, o := range res.Set.Objects {
		out.Set.Objects = append(out.Set.Objects, o)
		if !helm.IsRelease(o) {
			continue
		}
		objs, files, rel, err := r.renderRelease(ctx, t, res, o, apiVersions, origins)
		var skip *skippedRelease
		if errors.As(err, &skip) {
			out.Releases = append(out.Releases, render.Release{ID: "HelmRelease/" + o.GetNamespace() + "/" + o.GetName(), Skipped: skip.reason})
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("target %q: %w", t.Name, err)
		}
		for _, o := range objs {
			rel.Objects = append(rel.Objects, manifest.IDOf(o))
		}
		out.Releases = append(out.Releases, rel)
		out.Set.Objects = append(out.Set.Objects, objs...)
		out.Files = append(out.Files, files...)
	}
	slices.Sort(out.Files)
	out.Files = slices.Compact(out.Files)
	return &out, origins, nil
}

// renderRelease renders the HelmRelease o of t's build res: its chart
// fetched from its source (found among the cluster's renders), its
// values composed with valuesFrom looked up there too.
//
// The pre hooks (those of both phases among them) come before the
// chart's objects and the post hooks after them, each annotated with
// HelmHookAnnotation, which puts them in apply waves of their own; their
// helm.sh/hook-weight and helm.sh/hook-delete-policy annotations are
// kept for the apply.
//
// It also returns the files of a chart folder of this repository
// (relative to it), which the render read, and the release it rendered;
// it records in origins where each object came from.
func (r *Repo) renderRelease(ctx context.Context, t *Target, res *render.Result, o *unstructured.Unstructured, apiVersions []string, origins map[*unstructured.Unstructured]string) ([]*unstructured.Unstructured, []string, render.Release, error) {
	var none render.Release
	pr, err := r.prepareRelease(ctx, t, res, o)
	if err != nil {
		return nil, nil, none, err
	}
	rel := pr.rel
	fetched, err := r.Charts.Fetch(ctx, pr.src)
	if err != nil {
		return nil, nil, none, fmt.Errorf("%s: %w", rel.ID(), err)
	}
	if pr.valuesErr != nil {
		return nil, nil, none, withholdValues(fmt.Errorf("%s: chart %s %s: %w", rel.ID(), fetched.Name, fetched.Version, pr.valuesErr), pr.secrets)
	}
	// A chart may copy a value from a Secret into any object (a
	// ConfigMap, an argument): what ferry prints hides those values as
	// it hides decrypted ones.
	r.opts.Decryptor.Hide(secretLeaves(pr.secrets)...)
	rendered, err := helm.Render(ctx, rel, fetched, pr.values, helm.RenderOptions{
		KubeVersion: t.KubeVersion,
		APIVersions: apiVersions,
		Charts:      r.loaded,
		ValuesRoot:  pr.valuesRoot,
		Limits:      r.Limits(),
		Sandbox:     r.opts.HelmSandbox,
		Cache:       r.opts.HelmRenders,
		Keep:        pr.keepable(r.opts.Decryptor),
	})
	if err != nil {
		return nil, nil, none, withholdValues(err, pr.secrets)
	}
	origin := func(u *unstructured.Unstructured, source string) *unstructured.Unstructured {
		origins[u] = chartOrigin(rel.ID(), rendered, source)
		return u
	}
	var objs []*unstructured.Unstructured
	for _, h := range rendered.Hooks {
		if h.Pre {
			objs = append(objs, origin(hook(h), h.Source))
		}
	}
	for i, u := range rendered.Objects {
		objs = append(objs, origin(u, rendered.Sources[i]))
	}
	for _, h := range rendered.Hooks {
		if !h.Pre {
			objs = append(objs, origin(hook(h), h.Source))
		}
	}
	crds := crdKinds(res.Set.Objects, objs)
	for _, u := range objs {
		if u.GetNamespace() == "" && namespaced(u, crds) {
			u.SetNamespace(rendered.Namespace)
		}
	}
	return objs, pr.files, render.Release{
		ID:        rel.ID(),
		Name:      rendered.Name,
		Namespace: rendered.Namespace,
		Chart:     rendered.Chart,
		Version:   rendered.Version,
	}, nil
}

// preparedRelease is everything a HelmRelease's render takes but its
// chart's content: the release, where its chart comes from, its composed
// values and the Secrets they took values from, and the files of a
// chart folder of this repository.
type preparedRelease struct {
	rel        *helm.Release
	src        helm.ChartSource
	valuesRoot string
	values     map[string]any
	secrets    []*unstructured.Unstructured
	files      []string
	// valuesErr is why the values could not be composed: the release
	// fails with it once its chart is known (the error names it).
	valuesErr error
}

// prepareRelease resolves the HelmRelease o of t's build res up to its
// render: its chart source (found among the cluster's renders) and its
// values, composed with valuesFrom looked up there too. Nothing is
// fetched. A release whose source the revision may not fetch is a
// skippedRelease.
func (r *Repo) prepareRelease(ctx context.Context, t *Target, res *render.Result, o *unstructured.Unstructured) (*preparedRelease, error) {
	rel, err := helm.ParseRelease(o)
	if err != nil {
		return nil, err
	}
	if rel.ChartRef != nil && rel.ChartRef.Kind == "HelmChart" {
		if rel.Chart, err = r.helmChart(ctx, t, res, *rel.ChartRef); err != nil {
			return nil, fmt.Errorf("%s: %w", rel.ID(), err)
		}
		rel.ChartRef = nil
	}
	src, valuesRoot, err := r.chartSource(ctx, t, res, rel)
	var skip *skippedRelease
	if errors.As(err, &skip) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel.ID(), err)
	}
	src.Limits = r.Limits()
	pr := &preparedRelease{rel: rel, src: src, valuesRoot: valuesRoot}
	if src.Kind == helm.Folder {
		if pr.files, err = r.folderFiles(filepath.Join(src.Root, filepath.FromSlash(src.Path))); err != nil {
			return nil, fmt.Errorf("%s: chart folder %s: %w", rel.ID(), src.Path, err)
		}
		if rel.Chart != nil {
			// valuesFiles are relative to the source's root.
			for _, f := range rel.Chart.ValuesFiles {
				if in, ok := r.within(filepath.Join(valuesRoot, filepath.FromSlash(f))); ok {
					pr.files = append(pr.files, in)
				}
			}
		}
	}
	if r.opts.NoDecrypt {
		// Rendering without the age key (render --list, --no-decrypt,
		// diff without SOPS_AGE_KEY) leaves encrypted Secrets out of the
		// builds: their values are left out of the chart's too, rather
		// than failing the release.
		for i := range rel.ValuesFrom {
			if rel.ValuesFrom[i].Kind == "Secret" {
				rel.ValuesFrom[i].Optional = true
			}
		}
	}
	pr.values, pr.valuesErr = helm.ComposeValues(rel, func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
		u := r.clusterObject(ctx, t, res, "", kind, namespace, name)
		if u != nil && kind == "Secret" {
			pr.secrets = append(pr.secrets, u)
		}
		return u, u != nil
	})
	return pr, nil
}

// keepable reports whether the release's render may be kept on disk
// (helm.RenderCache): its values took nothing from a Secret and hold no
// decrypted value, so neither does what the chart renders from them.
func (pr *preparedRelease) keepable(d *secrets.Decryptor) bool {
	if len(pr.secrets) > 0 {
		return false
	}
	b, err := json.Marshal(pr.values)
	if err != nil {
		return false
	}
	if d == nil {
		return true
	}
	for _, v := range d.Values() {
		if v != "" && bytes.Contains(b, []byte(v)) {
			return false
		}
	}
	return true
}

// key is the identity of everything the release's render takes but the
// chart's content, the same for two revisions whose release would
// render alike from the same chart: its spec as parsed, its source
// (chart folders by their path: their files are compared as files), its
// values, and the cluster's Kubernetes and API versions.
func (pr *preparedRelease) key(kubeVersion string, apiVersions []string) string {
	src := pr.src
	src.Root, src.Limits = "", budget.Limits{}
	if src.Credentials != nil {
		c := *src.Credentials
		src.Credentials = &c
	}
	b, err := json.Marshal(struct {
		Release     *helm.Release
		Source      helm.ChartSource
		Values      map[string]any
		KubeVersion string
		APIVersions []string
	}{pr.rel, src, pr.values, kubeVersion, apiVersions})
	if err != nil {
		return "unkeyed: " + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ChartKubeVersion is the Kubernetes version t's HelmReleases are
// rendered for (its cluster's kubeVersion in ferry.yaml, else
// helm.DefaultKubeVersion), and whether its render (res) expanded any.
func (t *Target) ChartKubeVersion(res *render.Result) (string, bool) {
	v := t.KubeVersion
	if v == "" {
		v = helm.DefaultKubeVersion
	}
	return v, t.HelmReleases != HelmController && slices.ContainsFunc(res.Set.Objects, helm.IsRelease)
}

// withholdValues returns err with every string the values took from
// the Secrets replaced by "***": a chart's template error may quote a
// value (`fail`, `required` with a printf), and a value from a Secret is
// one of the strings of the YAML document under its key, which the
// masker of decrypted values does not know by itself.
func withholdValues(err error, secrets []*unstructured.Unstructured) error {
	msg := err.Error()
	for _, l := range secretLeaves(secrets) {
		msg = strings.ReplaceAll(msg, l, "***")
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// secretLeaves are the values of the Secrets' data and stringData, and
// the strings of each that is a YAML document, three characters or
// longer (the masker's bound), longest first so that a value holding
// another is replaced whole.
func secretLeaves(secrets []*unstructured.Unstructured) []string {
	var values []string
	for _, s := range secrets {
		data, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
		encoded, _, _ := unstructured.NestedStringMap(s.Object, "data")
		for _, v := range encoded {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil {
				values = append(values, string(b))
			}
		}
		for _, v := range data {
			values = append(values, v)
		}
	}
	var leaves []string
	for _, v := range values {
		leaves = append(leaves, v)
		var doc any
		if yaml.Unmarshal([]byte(v), &doc) == nil {
			leaves = stringLeaves(doc, leaves)
		}
	}
	leaves = slices.DeleteFunc(leaves, func(l string) bool { return len(strings.TrimSpace(l)) < 3 })
	slices.SortFunc(leaves, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(leaves)
}

// stringLeaves appends the strings of a decoded YAML document to out.
func stringLeaves(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case map[string]any:
		for _, e := range v {
			out = stringLeaves(e, out)
		}
	case []any:
		for _, e := range v {
			out = stringLeaves(e, out)
		}
	}
	return out
}

// folderFiles lists the regular files under dir relative to the
// repository; none when dir is in another checkout.
func (r *Repo) folderFiles(dir string) ([]string, error) {
	rel, ok := r.within(dir)
	if !ok {
		return nil, nil
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, path.Join(rel, filepath.ToSlash(f)))
		return nil
	})
	return out, err
}

// releaseLine finds a HelmRelease in a YAML file.
var releaseLine = regexp.MustCompile(`(?m)^\s*kind:\s*["']?HelmRelease["']?\s*$`)

// holdsReleases reports whether a file a target's render reads (w, under
// root) declares a HelmRelease: the render then depends on its chart and
// values sources, which may be anywhere in the cluster's renders.
func holdsReleases(root string, w render.Watch) bool {
	holds := func(p string) bool {
		b, err := os.ReadFile(p)
		return err == nil && releaseLine.Match(b)
	}
	for _, f := range w.Files {
		if holds(filepath.Join(root, filepath.FromSlash(f))) {
			return true
		}
	}
	for _, d := range w.Dirs {
		found := false
		_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(d)), func(p string, e fs.DirEntry, err error) error {
			if found {
				return filepath.SkipAll
			}
			if err != nil {
				return nil // a folder that cannot be read holds nothing ferry renders
			}
			if ext := filepath.Ext(p); e.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") && holds(p) {
				found = true
			}
			return nil
		})
		if found {
			return true
		}
	}
	return false
}

// fluxSources are the Flux source objects of a render.
func fluxSources(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().Group == SourceGroup {
			out = append(out, o)
		}
	}
	return out
}

// rootKept are the objects of a cluster root kept after discovery: its
// Flux sources (for clusterObject) and its notification objects (for
// Notifications).
func rootKept(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := fluxSources(objs)
	for _, o := range objs {
		if isNotification(o) {
			out = append(out, o)
		}
	}
	return out
}

// hook is h's object marked with its phases: HookPre, HookPost, or
// HookPrePost for a hook that runs in both.
func hook(h helm.Hook) *unstructured.Unstructured {
	phase := HookPre
	switch {
	case h.Pre && h.Post:
		phase = HookPrePost
	case h.Post:
		phase = HookPost
	}
	u := h.Object
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[HelmHookAnnotation] = phase
	u.SetAnnotations(a)
	return u
}

// clusterAPIVersions are the API versions t's charts see beside
// Kubernetes' own: those declared for its cluster in ferry.yaml, and
// those of the CRDs the cluster's renders define (its root, t's own build
// res, and the builds of its other targets), so a chart renders the same
// whichever of the cluster's targets holds its CRDs and whichever
// targets a run renders.
func (r *Repo) clusterAPIVersions(ctx context.Context, t *Target, res *render.Result) []string {
	out := slices.Clone(t.APIVersions)
	out = append(out, r.rootAPIs[t.Cluster]...)
	out = append(out, definedAPIVersions(res.Set.Objects)...)
	for b := range r.siblingBuilds(ctx, t, "CustomResourceDefinition") {
		out = append(out, definedAPIVersions(b.Set.Objects)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// definedAPIVersions are the group/versions and group/version/Kinds of
// the CRDs among objs, the APIs a chart sees as available beside
// Kubernetes' own (helm.RenderOptions).
func definedAPIVersions(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, c := range manifest.CRDs(objs) {
		out = append(out, c.APIVersions()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// crdKinds maps group/Kind to each CRD among the object lists.
func crdKinds(lists ...[]*unstructured.Unstructured) map[string]manifest.CRD {
	m := map[string]manifest.CRD{}
	for _, c := range manifest.CRDs(lists...) {
		m[c.Group+"/"+c.Kind] = c
	}
	return m
}

// namespaced reports whether u belongs in a namespace: as kustomize's
// built-in Kubernetes schema says, else as a CRD of the render says, else
// yes (kustomize's and Helm's assumption for an unknown kind; apply sets
// it right from the cluster's REST mapping).
func namespaced(u *unstructured.Unstructured, crds map[string]manifest.CRD) bool {
	if ns, known := render.NamespaceScoped(u.GetAPIVersion(), u.GetKind()); known {
		return ns
	}
	if c, ok := crds[u.GroupVersionKind().Group+"/"+u.GetKind()]; ok {
		return c.Namespaced()
	}
	return true
}
