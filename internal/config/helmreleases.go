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
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/origin"
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

// chartSource is where rel's chart comes from, as helm-controller
// resolves it: spec.chart.spec.sourceRef (a HelmRepository of type
// default or oci, or a GitRepository: a chart folder of the checkout or
// of the folder ferry.yaml sources: maps it to) or spec.chartRef (an
// OCIRepository). For a chart folder it also returns the source's root,
// which valuesFiles are relative to.
func (r *Repo) chartSource(ctx context.Context, t *Target, res *render.Result, rel *helm.Release) (helm.ChartSource, string, error) {
	if rel.Chart != nil {
		c, ref := rel.Chart, rel.Chart.SourceRef
		id := ref.Kind + "/" + ref.Namespace + "/" + ref.Name
		switch ref.Kind {
		case "HelmRepository":
			repo := r.clusterObject(ctx, t, res, SourceGroup, ref.Kind, ref.Namespace, ref.Name)
			if repo == nil {
				return helm.ChartSource{}, "", fmt.Errorf("chart %s: source %s is not in the renders of its cluster", c.Chart, id)
			}
			src, err := r.remoteSource(ctx, t, res, repo, id, sourceKind(repo))
			if err != nil {
				return helm.ChartSource{}, "", fmt.Errorf("chart %s: %w", c.Chart, err)
			}
			src.Chart, src.Version = c.Chart, c.Version
			return src, "", nil
		case "GitRepository", "Bucket":
			dir, _, reason := r.sourceDir(ctx, t.Cluster, ref.Kind, ref.Namespace, ref.Name, r.self)
			if reason != "" {
				return helm.ChartSource{}, "", &skippedRelease{reason: "chart " + c.Chart + ": " + reason}
			}
			p := path.Clean(strings.TrimPrefix(c.Chart, "./"))
			return helm.ChartSource{Kind: helm.Folder, Root: dir, Path: p, Chart: p}, dir, nil
		default:
			return helm.ChartSource{}, "", fmt.Errorf("chart %s: source %s: ferry does not fetch charts from a %s yet", c.Chart, id, ref.Kind)
		}
	}
	ref := *rel.ChartRef
	id := ref.Kind + "/" + ref.Namespace + "/" + ref.Name
	if ref.Kind != "OCIRepository" {
		return helm.ChartSource{}, "", fmt.Errorf("spec.chartRef %s: ferry does not fetch charts from a %s yet", id, ref.Kind)
	}
	repo := r.clusterObject(ctx, t, res, SourceGroup, ref.Kind, ref.Namespace, ref.Name)
	if repo == nil {
		return helm.ChartSource{}, "", fmt.Errorf("spec.chartRef %s is not in the renders of its cluster", id)
	}
	src, err := r.remoteSource(ctx, t, res, repo, id, helm.OCIRepository)
	if err != nil {
		return helm.ChartSource{}, "", fmt.Errorf("spec.chartRef: %w", err)
	}
	want, _, _ := unstructured.NestedStringMap(repo.Object, "spec", "ref")
	// OCIRepository's precedence: digest, then semver, then tag ("latest"
	// when none is given).
	switch {
	case want["digest"] != "":
		src.Digest = want["digest"]
	case want["semver"] != "":
		src.Version = want["semver"]
	case want["tag"] != "":
		src.Version = want["tag"]
	default:
		src.Version = "latest"
	}
	return src, "", nil
}

// remoteSource is what a HelmRepository or OCIRepository object gives
// every chart it serves (as a source of kind): its URL, whether plain
// HTTP is allowed (its spec.insecure, or a host named in
// render.Options.InsecureHosts) and its credentials (sourceCredentials).
// In a proposed revision, a source the trusted one lacks is not fetched
// (a skippedRelease saying how to allow it) and one it changed gets no
// credentials: see allowFetch.
func (r *Repo) remoteSource(ctx context.Context, t *Target, res *render.Result, source *unstructured.Unstructured, id string, kind helm.SourceKind) (helm.ChartSource, error) {
	src := helm.ChartSource{Kind: kind}
	src.URL, _, _ = unstructured.NestedString(source.Object, "spec", "url")
	if src.URL == "" {
		return src, fmt.Errorf("source %s has no spec.url", id)
	}
	u, err := url.Parse(src.URL)
	if err != nil || u.Host == "" {
		return src, fmt.Errorf("source %s: spec.url %q is not a URL with a host", id, src.URL)
	}
	decided := r.allowFetch(ctx, t, source)
	if !decided.fetch {
		return src, &skippedRelease{reason: decided.reason}
	}
	src.Insecure, _, _ = unstructured.NestedBool(source.Object, "spec", "insecure")
	src.Insecure = src.Insecure || slices.Contains(r.opts.InsecureHosts, u.Host)
	if !decided.credentials {
		// A source the proposed revision changed gets no credentials.
		src.Withheld = decided.withheld
		return src, nil
	}
	err = r.sourceCredentials(ctx, t, res, source, id, &src)
	return src, err
}

// sourceKind is the kind of chart source a HelmRepository (of spec.type
// default or oci) or OCIRepository object is.
func sourceKind(source *unstructured.Unstructured) helm.SourceKind {
	if typ, _, _ := unstructured.NestedString(source.Object, "spec", "type"); source.GetKind() == "HelmRepository" && typ != "oci" {
		return helm.HTTPRepository
	}
	return helm.OCIRepository
}

// skippedRelease is why a HelmRelease is not rendered: its chart is in a
// source ferry does not fetch (another Git repository, a Bucket) that
// ferry.yaml does not map to a folder. Like a target of such a source,
// the release is reported as skipped, not as an error.
type skippedRelease struct{ reason string }

func (e *skippedRelease) Error() string { return e.reason }

// helmChart reads the HelmChart object a spec.chartRef names (among the
// cluster's renders) as the chart template it stands for: its chart,
// version, sourceRef (in the HelmChart's namespace) and valuesFiles.
func (r *Repo) helmChart(ctx context.Context, t *Target, res *render.Result, ref helm.ChartRef) (*helm.ChartTemplate, error) {
	id := ref.Kind + "/" + ref.Namespace + "/" + ref.Name
	hc := r.clusterObject(ctx, t, res, SourceGroup, ref.Kind, ref.Namespace, ref.Name)
	if hc == nil {
		return nil, fmt.Errorf("spec.chartRef %s is not in the renders of its cluster", id)
	}
	var spec struct {
		Chart     string `json:"chart"`
		Version   string `json:"version"`
		SourceRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"sourceRef"`
		ValuesFiles              []string `json:"valuesFiles"`
		IgnoreMissingValuesFiles bool     `json:"ignoreMissingValuesFiles"`
	}
	m, _, _ := unstructured.NestedMap(hc.Object, "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
		return nil, fmt.Errorf("spec.chartRef %s: spec: %w", id, err)
	}
	if spec.Chart == "" || spec.SourceRef.Kind == "" || spec.SourceRef.Name == "" {
		return nil, fmt.Errorf("spec.chartRef %s: spec.chart and spec.sourceRef are required", id)
	}
	if spec.Version == "" {
		spec.Version = "*"
	}
	return &helm.ChartTemplate{
		Chart:                    spec.Chart,
		Version:                  spec.Version,
		SourceRef:                helm.ObjectRef{Kind: spec.SourceRef.Kind, Name: spec.SourceRef.Name, Namespace: hc.GetNamespace()},
		ValuesFiles:              spec.ValuesFiles,
		IgnoreMissingValuesFiles: spec.IgnoreMissingValuesFiles,
	}, nil
}

// sourceCredentials sets the basic credentials of src, the chart
// source the object source (id) stands for, bound to the origin src is
// reached at (helm.ChartSource.Origin). They are the first found of:
//   - the Secret its spec.secretRef names, in the source's namespace,
//     found (decrypted) among the cluster's renders: its username and
//     password keys;
//   - the variables standing for that secretRef,
//     FERRY_SECRET_<NAME>_USERNAME and _PASSWORD;
//   - the host's, FERRY_REGISTRY_<HOST>_USERNAME and _PASSWORD, or its
//     entry in the Docker config.json;
//
// as ferry bump finds an ImageRepository's. None (anonymous) when the
// source names no secretRef and the host has none; an error when it
// names one and none is found. Errors name the Secret and
// the source, never a value.
func (r *Repo) sourceCredentials(ctx context.Context, t *Target, res *render.Result, source *unstructured.Unstructured, id string, src *helm.ChartSource) error {
	o, err := src.Origin()
	if err != nil {
		return fmt.Errorf("source %s: %w", id, err)
	}
	creds, err := r.findCredentials(ctx, t, res, source, id, origin.HostKey(o))
	if creds != nil {
		creds.Origin = o
	}
	src.Credentials = creds
	return err
}

// findCredentials looks for the credentials of source (id) at host in
// the places sourceCredentials lists.
func (r *Repo) findCredentials(ctx context.Context, t *Target, res *render.Result, source *unstructured.Unstructured, id, host string) (*helm.Credentials, error) {
	name, _, _ := unstructured.NestedString(source.Object, "spec", "secretRef", "name")
	secretID := "Secret/" + source.GetNamespace() + "/" + name
	if name != "" {
		if s := r.clusterObject(ctx, t, res, "", "Secret", source.GetNamespace(), name); s != nil {
			return secretCredentials(s, id, secretID)
		}
	}
	env := r.opts.ChartCredentials
	if env != nil && name != "" {
		if b, ok := env.Secret(name, func() []string { return r.credentialNames(ctx).Secrets }); ok {
			return &helm.Credentials{Username: b.Username, Password: b.Password}, nil
		}
	}
	if env != nil {
		b, ok, err := env.Registry(host, func() []string { return r.credentialNames(ctx).Hosts })
		if err != nil {
			return nil, fmt.Errorf("source %s: credentials of %s: %w", id, host, err)
		}
		if ok {
			return &helm.Credentials{Username: b.Username, Password: b.Password}, nil
		}
	}
	if name != "" {
		hint := "no variable can stand for it"
		if v, ok := images.SecretEnv(name); ok {
			hint = "neither " + v + "_USERNAME"
		}
		return nil, fmt.Errorf("source %s: its secretRef %s is not in the renders of its cluster, and %s nor credentials of %s are in the environment",
			id, secretID, hint, host)
	}
	return nil, nil
}

// credentialNames are the hosts and Secret names of every chart source
// the repository renders (every cluster's root, every target's build):
// those the former spelling of a credential variable must not also
// stand for (images.EnvCredentials). Built only when such a variable is
// about to be read.
func (r *Repo) credentialNames(ctx context.Context) images.Names {
	var n images.Names
	add := func(objs []*unstructured.Unstructured) {
		for _, o := range fluxSources(objs) {
			if k := o.GetKind(); k != "HelmRepository" && k != "OCIRepository" {
				continue
			}
			if s, _, _ := unstructured.NestedString(o.Object, "spec", "secretRef", "name"); s != "" {
				n.Secrets = append(n.Secrets, s)
			}
			src := helm.ChartSource{Kind: sourceKind(o)}
			src.URL, _, _ = unstructured.NestedString(o.Object, "spec", "url")
			src.Insecure, _, _ = unstructured.NestedBool(o.Object, "spec", "insecure")
			if u, err := url.Parse(src.URL); err == nil {
				src.Insecure = src.Insecure || slices.Contains(r.opts.InsecureHosts, u.Host)
			}
			if o, err := src.Origin(); err == nil {
				n.Hosts = append(n.Hosts, origin.HostKey(o))
			}
		}
	}
	for _, objs := range r.rootObjs {
		add(objs)
	}
	for _, t := range r.Targets {
		if r.busy[t] {
			continue
		}
		if res, err := r.build(ctx, t); err == nil {
			add(res.Set.Objects)
		}
	}
	return n
}

// secretCredentials reads the username and password keys of a Secret
// (data or stringData).
func secretCredentials(s *unstructured.Unstructured, id, secretID string) (*helm.Credentials, error) {
	data := map[string]string{}
	encoded, _, _ := unstructured.NestedStringMap(s.Object, "data")
	for k, v := range encoded {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("source %s: secretRef %s: data key %q is not base64", id, secretID, k)
		}
		data[k] = string(b)
	}
	plain, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
	maps.Copy(data, plain)
	if data["username"] == "" || data["password"] == "" {
		return nil, fmt.Errorf("source %s: secretRef %s has no username and password (other kinds of credentials are not supported yet)", id, secretID)
	}
	return &helm.Credentials{Username: data["username"], Password: data["password"]}, nil
}

// clusterObject finds an object of group ("" for the core group, v1),
// kind, namespace and name among what t's cluster renders: its root
// first, then t's own build own, then its other targets (as lookup finds
// substituteFrom sources, and as a helm-controller would find them in
// the cluster). It returns nil when none has it.
func (r *Repo) clusterObject(ctx context.Context, t *Target, own *render.Result, group, kind, namespace, name string) *unstructured.Unstructured {
	match := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			if gvk.Group == group && (group != "" || gvk.Version == "v1") && gvk.Kind == kind && o.GetName() == name && o.GetNamespace() == namespace {
				return o
			}
		}
		return nil
	}
	if group == "" {
		if o := r.rootVars[t.Cluster][objectKey{kind, namespace, name}]; o != nil {
			return o
		}
	} else if o := match(r.rootObjs[t.Cluster]); o != nil {
		return o
	}
	if o := match(own.Set.Objects); o != nil {
		return o
	}
	for res := range r.siblingBuilds(ctx, t, kind) {
		if o := match(res.Set.Objects); o != nil {
			return o
		}
	}
	return nil
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
