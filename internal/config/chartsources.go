package config

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/origin"
	"github.com/ferry-ci/ferry/internal/render"
)

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
			// As in Flux, spec.verify applies to charts of an OCI
			// HelmRepository only.
			if src.Kind == helm.OCIRepository && c.Verify != nil {
				owner := c.VerifyOwner
				if owner == "" {
					owner = "HelmRelease/" + rel.Namespace + "/" + rel.Name + " spec.chart.spec.verify"
				}
				if src.Verify, err = r.chartVerification(ctx, t, res, owner, ref.Namespace, c.Verify); err != nil {
					return helm.ChartSource{}, "", err
				}
			}
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
	if src.Verify, err = r.chartVerification(ctx, t, res, id+" spec.verify", ref.Namespace, r.sourceVerify(ctx, t, repo)); err != nil {
		return helm.ChartSource{}, "", err
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
		Verify:                   r.sourceVerify(ctx, t, hc),
		VerifyOwner:              id + " spec.verify",
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
	data, err := secretStrings(s, secretID)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", id, err)
	}
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

// secretStrings is a Secret's data (decoded) and stringData.
func secretStrings(s *unstructured.Unstructured, secretID string) (map[string]string, error) {
	data := map[string]string{}
	encoded, _, _ := unstructured.NestedStringMap(s.Object, "data")
	for k, v := range encoded {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("secretRef %s: data key %q is not base64", secretID, k)
		}
		data[k] = string(b)
	}
	plain, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
	maps.Copy(data, plain)
	return data, nil
}
