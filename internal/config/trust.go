package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/render"
)

// A pull request's head is data, never configuration of ferry's reach.
// LoadProposed loads a revision that someone proposes (the head of a pull
// request) under the reach of a trusted one (its base): the folders its
// sources: map to, how its clusters are reached, which chart sources it
// may fetch from and which of them get credentials are the base's.

// LoadProposed loads the proposed revision at root the way Load does,
// with what decides its reach taken from trusted, the revision it would
// change: ferry.yaml's sources: and clusters: (a head that changes them
// is noted in Notes and rendered with the base's), each target's cluster
// access, and the chart sources that may be fetched (see allowFetch).
func LoadProposed(ctx context.Context, root string, opts render.Options, trusted *Repo) (*Repo, error) {
	return load(ctx, root, opts, trusted)
}

// LoadRevisions is Load of baseRoot and LoadProposed of headRoot with the
// base trusted, the two discovered side by side: the head reads what it
// needs of the base (its targets' access, the sources it trusts) once
// the base is discovered. The head renders under the base's budgets: a
// pull request cannot raise its own. The errors say which revision
// failed; the Repos of a failed load are closed.
func LoadRevisions(ctx context.Context, baseRoot, headRoot string, opts render.Options) (base, head *Repo, baseErr, headErr error) {
	if base, baseErr = prepare(baseRoot, opts, nil); baseErr != nil {
		return nil, nil, baseErr, nil
	}
	hopts := opts
	limits := base.Limits()
	hopts.Limits = &limits
	var wg sync.WaitGroup
	wg.Go(func() { baseErr = base.discoverTargets(ctx) })
	if head, headErr = prepare(headRoot, hopts, base); headErr == nil {
		headErr = head.discoverTargets(ctx)
	}
	wg.Wait()
	if baseErr != nil || headErr != nil {
		base.Close()
		head.Close()
		if baseErr != nil {
			return nil, nil, baseErr, nil
		}
		return nil, nil, nil, headErr
	}
	return base, head, nil, nil
}

// trustedTurn waits until the trusted revision is discovered and takes
// its turn (Repo.mu); call the returned function when done reading it.
func (r *Repo) trustedTurn() (done func()) {
	<-r.trusted.ready
	r.trusted.mu.Lock()
	return r.trusted.mu.Unlock
}

// reachFile returns f with the mappings that decide ferry's reach
// (sources:, clusters:, network:, inputProviderAPIs:) replaced by those
// of trusted, and
// notes saying which of them f changed.
func reachFile(f, trusted *File) (*File, []string) {
	var out File
	if f != nil {
		out = *f
	}
	var base File
	if trusted != nil {
		base = *trusted
	}
	var notes []string
	note := func(field string, changed bool) {
		if changed {
			notes = append(notes, fmt.Sprintf("%s changes %s: the diff uses the base's", FileName, field))
		}
	}
	note("sources", !reflect.DeepEqual(nilIfEmpty(out.Sources), nilIfEmpty(base.Sources)))
	note("clusters", !reflect.DeepEqual(nilIfEmpty(out.Clusters), nilIfEmpty(base.Clusters)))
	note("network", !reflect.DeepEqual(out.Network, base.Network))
	note("inputProviderAPIs", !reflect.DeepEqual(out.InputProviderAPIs, base.InputProviderAPIs))
	out.Sources, out.Clusters, out.Network = base.Sources, base.Clusters, base.Network
	out.InputProviderAPIs = base.InputProviderAPIs
	return &out, notes
}

func nilIfEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}

// trustAccess gives every target of a proposed revision the cluster
// access of the trusted revision: that of the trusted target of the same
// name, else of its cluster in the trusted ferry.yaml, else none (the
// step's own kubeconfig input then applies). A pull request cannot point
// a target at another kubeconfig, variable or context.
func (r *Repo) trustAccess() {
	defer r.trustedTurn()()
	byName := map[string]*Target{}
	for _, t := range r.trusted.Targets {
		byName[t.Name] = t
	}
	for _, t := range r.Targets {
		t.Kubeconfig, t.KubeconfigEnv, t.Context, t.Access = "", "", "", Access{}
		if bt := byName[t.Name]; bt != nil {
			t.Kubeconfig, t.KubeconfigEnv, t.Context, t.Access = bt.Kubeconfig, bt.KubeconfigEnv, bt.Context, bt.Access
			if bt.Kubeconfig != "" && !filepath.IsAbs(bt.Kubeconfig) {
				t.Kubeconfig = filepath.Join(bt.Root, bt.Kubeconfig)
			}
			continue
		}
		if r.trusted.File == nil {
			continue
		}
		if c, ok := r.trusted.File.Clusters[t.Cluster]; ok && t.Cluster != "" {
			t.Kubeconfig, t.KubeconfigEnv, t.Context = c.Kubeconfig, c.KubeconfigEnv, c.Context
			t.Access = c.access(r.trusted.Root)
			if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
				t.Kubeconfig = filepath.Join(r.trusted.Root, c.Kubeconfig)
			}
		}
	}
}

// workspaceOf is the folder every read outside a revision's own tree
// must stay under: opts.Workspace, else the parent of the checkout; the
// checkout itself when opts.Workspace does not exist. It is returned
// with symlinks resolved.
func workspaceOf(opts render.Options, checkout string) (string, error) {
	ws := opts.Workspace
	if ws == "" {
		ws = filepath.Dir(checkout)
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		// A workspace that is not there (GITHUB_WORKSPACE of another
		// machine) holds nothing: reads stay in the checkout.
		return filepath.EvalSymlinks(checkout)
	}
	return real, nil
}

// mapSource resolves a sources: path of ferry.yaml: relative to the
// repository's checkout, a folder inside it is that folder of the
// revision being rendered; one outside must be, once symlinks are
// followed, inside the workspace. The error says why not.
func (r *Repo) mapSource(key, p string) (string, error) {
	dir := filepath.Join(r.checkout, filepath.FromSlash(p))
	if rel, err := filepath.Rel(r.checkout, dir); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		dir = filepath.Join(r.Root, rel)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%s sources %q says it is at %s, which is not a directory", FileName, key, p)
	}
	if !under(real, r.rootReal) && !under(real, r.workspace) {
		return "", &OutsideError{Key: key, Path: p, Workspace: r.workspace}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s sources %q says it is at %s, which is not a directory", FileName, key, p)
	}
	return dir, nil
}

// OutsideError is a sources: folder that lies outside the workspace
// (after symlinks): ferry reads no file there.
type OutsideError struct {
	Key, Path, Workspace string
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("%s sources %q: %s is outside the workspace %s (after following symlinks); ferry reads only the workspace: check the source out inside it (GITHUB_WORKSPACE, or --workspace)",
		FileName, e.Key, e.Path, e.Workspace)
}

// checkReach refuses, at load, a sources: entry of ferry.yaml that leads
// outside the workspace.
func (r *Repo) checkReach() error {
	if r.File == nil {
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(r.File.Sources)) {
		var oe *OutsideError
		if _, err := r.mapSource(key, r.File.Sources[key]); errors.As(err, &oe) {
			return oe
		}
	}
	return nil
}

// under says whether path is dir or below it (both absolute and clean).
func under(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// fetchDecision is whether a chart source of a proposed revision may be
// fetched (else reason says why not), and with its credentials (else
// withheld says why not).
type fetchDecision struct {
	fetch, credentials bool
	reason, withheld   string
}

// allowFetch decides, for a proposed revision, whether the chart source
// object (kind, namespace, name and spec.url) of t's cluster may be
// fetched: when the trusted revision's renders of that cluster hold the
// same object with the same URL (then with credentials, if it names the
// same secretRef), or when the URL's host:port is listed in the trusted
// ferry.yaml's network.allowHosts (then without credentials). A trusted
// revision (r.trusted nil) fetches everything it names.
func (r *Repo) allowFetch(ctx context.Context, t *Target, source *unstructured.Unstructured) fetchDecision {
	if r.trusted == nil {
		return fetchDecision{fetch: true, credentials: true}
	}
	u, _, _ := unstructured.NestedString(source.Object, "spec", "url")
	if b := r.trustedSourceObject(ctx, t.Cluster, t.Name, source); b != nil {
		bu, _, _ := unstructured.NestedString(b.Object, "spec", "url")
		if bu == u {
			// The same spec (secretRef, insecure, type, provider, ...)
			// gets the credentials it has at the base; any change of it
			// is fetched anonymously. spec.verify does not say where
			// credentials go, and the base's is kept (sourceVerify);
			// nor does an OCIRepository's spec.ref, which picks an
			// artifact of the same repository (a chart bump moves it).
			same := reflect.DeepEqual(specBut(b, "verify", "ref"), specBut(source, "verify", "ref"))
			return fetchDecision{fetch: true, credentials: same, withheld: "the pull request changed the spec of " + sourceID(source) + ": its credentials are the base revision's"}
		}
	}
	if pu, err := url.Parse(u); err == nil && pu.Host != "" && r.trusted.File != nil && r.trusted.File.Network != nil &&
		(slices.Contains(r.trusted.File.Network.AllowHosts, hostPort(pu)) || slices.Contains(r.trusted.File.Network.AllowHosts, pu.Host)) {
		return fetchDecision{fetch: true, withheld: sourceID(source) + " is new in the pull request: it is fetched without credentials (its host is in network.allowHosts)"}
	}
	return fetchDecision{reason: fmt.Sprintf("not rendered: new chart source %s (allow it in %s on the base branch: network: {allowHosts: [%s]})", u, FileName, hostPortOf(u))}
}

// sourceObject finds, among what cluster renders in r, the Flux source
// object of the same group, kind, namespace and name as o. The target
// named first, when there is one, is searched before the others: a
// source is most often beside what uses it.
func (r *Repo) sourceObject(ctx context.Context, cluster, first string, o *unstructured.Unstructured) *unstructured.Unstructured {
	gvk := o.GroupVersionKind()
	match := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		for _, c := range objs {
			g := c.GroupVersionKind()
			if g.Group == gvk.Group && g.Kind == gvk.Kind && c.GetNamespace() == o.GetNamespace() && c.GetName() == o.GetName() {
				return c
			}
		}
		return nil
	}
	if c := match(r.rootObjs[cluster]); c != nil {
		return c
	}
	targets := r.Targets
	if i := slices.IndexFunc(targets, func(t *Target) bool { return t.Name == first && t.Cluster == cluster }); i > 0 {
		targets = slices.Concat([]*Target{targets[i]}, targets[:i], targets[i+1:])
	}
	for _, t := range targets {
		if t.Cluster != cluster || t.Err != nil || !r.declares(t).may(gvk.Kind) {
			continue
		}
		res, err := r.build(ctx, t)
		if err != nil {
			continue
		}
		if c := match(res.Set.Objects); c != nil {
			return c
		}
	}
	return nil
}

// hostPort is u's host with its port, the scheme's default when none is
// written: what network.allowHosts lists.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return u.Host + ":80"
	case "oci", "https":
		return u.Host + ":443"
	}
	return u.Host
}

func hostPortOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<host:port>"
	}
	return hostPort(u)
}

// sourceID is Kind/namespace/name of a source object.
func sourceID(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// trustedSourceObject is sourceObject of the trusted revision, in its
// turn (the trusted Repo may be discovering or rendering beside this
// one).
func (r *Repo) trustedSourceObject(ctx context.Context, cluster, first string, o *unstructured.Unstructured) *unstructured.Unstructured {
	defer r.trustedTurn()()
	return r.trusted.sourceObject(ctx, cluster, first, o)
}

// specBut is o's spec without the fields.
func specBut(o *unstructured.Unstructured, fields ...string) map[string]any {
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	for _, f := range fields {
		delete(spec, f)
	}
	return spec
}
