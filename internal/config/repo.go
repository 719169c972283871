package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/render"
)

// DefaultNamespace is the namespace of a target declared in ferry.yaml
// without one: where its substituteFrom ConfigMaps and Secrets are looked up.
const DefaultNamespace = "flux-system"

// Target is one deployable unit: a path rendered with a Flux
// Kustomization's semantics.
type Target struct {
	// Name is unique in the repository: the Kustomization's name, or
	// <cluster>/<name> when the bare name would be ambiguous.
	Name string
	// Cluster is the cluster the target belongs to, "" when none.
	Cluster string
	// Namespace is the namespace of the Flux Kustomization object.
	Namespace string
	// Path is spec.path, relative to Root.
	Path            string
	Prune           bool
	TargetNamespace string
	// DependsOn lists the names of the targets this one depends on.
	DependsOn []string
	// Kubeconfig, KubeconfigEnv and Context say how to reach the cluster.
	Kubeconfig    string
	KubeconfigEnv string
	Context       string
	// Access reaches the cluster without a kubeconfig (ferry.yaml's
	// server and auth), zero otherwise.
	Access Access
	// HelmReleases is the cluster's helmReleases setting: HelmRender
	// (also when empty) expands the HelmReleases of the target's render
	// into their charts' objects; HelmController leaves them as objects.
	HelmReleases HelmMode
	// KubeVersion and APIVersions are the capabilities declared for the
	// cluster in ferry.yaml (see ClusterConfig), which its HelmReleases
	// are rendered with.
	KubeVersion string
	APIVersions []string
	// Origin says where the target was declared: ferry.yaml:LINE, a file
	// and line, or the render it was found in.
	Origin string
	// Root is the directory the path is rendered under: the repository, or
	// a checked-out source named in ferry.yaml.
	Root string
	// Kustomization is the Flux Kustomization object (as patched by the
	// render that produced it, or synthesized from ferry.yaml).
	Kustomization *unstructured.Unstructured
	// Revision is set when the target's source is this repository at
	// another ref than the one checked out (a GitRepository of this
	// repository's URL whose spec.ref names another branch, tag, semver
	// range or commit): Root is then an export of that commit, which the
	// Repo removes on Close.
	Revision *SourceRevision
	// Artifact is set when the target's source is an ExternalArtifact made
	// by an ArtifactGenerator of the repository: Path is then relative to
	// that artifact.
	Artifact *render.Artifact
	// Err is why the target cannot be resolved (a dependsOn that names
	// no target, a dependsOn cycle): an error of this target only. Render
	// returns it; Blocked reports it for the targets that depend on it.
	Err error

	deps []Dependency
}

// Skipped is a Kustomization ferry found but cannot render, with the reason.
type Skipped struct {
	Name    string
	Cluster string
	Origin  string
	Reason  string
}

// Cluster is a cluster of a fleet repository: the tree its Flux sync
// Kustomization points at, or a clusters/<name>/ folder.
type Cluster struct {
	Name   string
	Path   string
	Origin string
	// From says how the root was found: ClusterFromSync, ...
	From ClusterSource
}

// ClusterSource says how a cluster's root was found.
type ClusterSource string

// The ways a cluster's root is found, in the order they are tried.
const (
	// ClusterFromFile: ferry.yaml's clusters.<name>.path.
	ClusterFromFile ClusterSource = "ferry.yaml"
	// ClusterFromSync: a Flux sync Kustomization (flux-system, in
	// gotk-sync.yaml, or pointing into clusters/).
	ClusterFromSync ClusterSource = "sync Kustomization"
	// ClusterFromInstance: a Flux Operator FluxInstance's spec.sync.
	ClusterFromInstance ClusterSource = "FluxInstance"
	// ClusterFromInstanceChart: the values.instance.sync of a HelmRelease
	// of the Flux Operator's flux-instance chart.
	ClusterFromInstanceChart ClusterSource = "flux-instance HelmRelease"
	// ClusterFromFolder: a clusters/<name> folder with no sync.
	ClusterFromFolder ClusterSource = "clusters/ folder"
)

// Repo is a repository with its targets. Renders are cached, so a target
// rendered during discovery or as a substituteFrom source is built once.
//
// Footprint, Build, Render and RendersReleases may be called from
// several goroutines: they take turns on one Repo. A proposed
// revision (LoadProposed) reads its trusted one in the trusted Repo's
// turn, so the two revisions of a diff render side by side. The other
// methods are not safe for concurrent use.
type Repo struct {
	Root     string
	File     *File
	Targets  []*Target
	Skipped  []Skipped
	Clusters []Cluster
	// Charts fetches the charts of HelmReleases, each chart version once
	// per Repo (and from render.Options.HelmCacheDir when set).
	Charts *helm.Sources

	opts      render.Options
	loaded    *helm.LoadedCharts
	self      map[string]bool                                     // GitRepository names that stand for this repository (selfSources)
	artifacts []*generatedArtifact                                // the ExternalArtifacts generators make (indexArtifacts)
	rootFiles map[string]map[string]bool                          // by cluster: the files its root's render read
	rootVars  map[string]map[objectKey]*unstructured.Unstructured // by cluster: substituteFrom sources its root renders
	rootObjs  map[string][]*unstructured.Unstructured             // by cluster: Flux sources its root renders
	rootRSIP  map[string][]*unstructured.Unstructured             // by cluster: ResourceSetInputProviders its root renders
	rootAPIs  map[string][]string                                 // by cluster: API versions of the CRDs its root renders
	rootAll   map[string][]*unstructured.Unstructured             // by cluster: every object its root renders
	declared  map[*Target]*declared                               // what each target's files may declare (declares)
	watches   map[*Target]render.Watch                            // render.Inputs of each target's spec (watch)
	results   map[*Target]*render.Result                          // builds, HelmReleases not expanded
	errs      map[*Target]error
	busy      map[*Target]bool
	expanded  map[*Target]*render.Result // Render: builds with their HelmReleases expanded
	expandErr map[*Target]error
	// readCluster, when set, reads the substituteFrom sources no render
	// holds from the target's cluster (ReadFromClusters); nil renders
	// without them.
	readCluster ClusterReader
	clusterVars map[string]*unstructured.Unstructured // readCluster's answers, by cluster/Kind/namespace/name
	// notifyFiles caches mayNotify.
	notifyFiles *bool
	// Notes are what a proposed revision changed of its reach and was
	// not given (LoadProposed): "ferry.yaml changes sources: ...".
	Notes []string

	// mu gives the methods that may run at once their turns (see Repo),
	// and a proposed revision its reads of this one (trustedTurn).
	mu sync.Mutex

	// ready is closed when discoverTargets is done: a proposed revision
	// loaded beside its trusted one (LoadRevisions) waits for it.
	ready chan struct{}

	trusted                       *Repo  // the revision that decides this one's reach; nil when it is trusted itself
	checkout, rootReal, workspace string // see locate

	// Other refs of this repository (gitref.go).
	gitRepos *gitRepositories // the GitRepositories discovery saw
	syncURLs []string         // of the GitRepositories that stand for the checkout
	// syncVerify is their spec.verify.
	syncVerify []gitVerify
	syncRefs   map[string]bool   // their refs (gitRef.key)
	urls       map[string]bool   // selfURLs
	clone      *selfGit          // the clone holding the checkout
	exports    map[string]string // export folders by commit (exportCommit)
}

// Load reads ferry.yaml and, when it declares no targets, discovers them
// from the repository's Flux objects (which renders the cluster roots and
// the targets that may hold nested Kustomizations). The revision at root
// is trusted: its ferry.yaml decides ferry's reach (see LoadProposed).
// Close the Repo when done with it: targets that render another ref of
// the repository render from folders it owns.
func Load(ctx context.Context, root string, opts render.Options) (*Repo, error) {
	return load(ctx, root, opts, nil)
}

func load(ctx context.Context, root string, opts render.Options, trusted *Repo) (*Repo, error) {
	r, err := prepare(root, opts, trusted)
	if err != nil {
		return nil, err
	}
	if err := r.discoverTargets(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// prepare reads the revision at root's ferry.yaml and makes its Repo, its
// targets not found yet (discoverTargets).
func prepare(root string, opts render.Options, trusted *Repo) (_ *Repo, err error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repository %s: not a directory", root)
	}
	// A proposed revision's sources: are replaced by the trusted ones
	// below, and checked then.
	f, err := readFile(abs, trusted == nil)
	if err != nil {
		return nil, err
	}
	if err := HelmMode(opts.HelmReleases).Check(); err != nil {
		return nil, fmt.Errorf("helmReleases: %w", err)
	}
	limits := limitsOf(f)
	if opts.Limits != nil {
		limits = opts.Limits.Fill()
	}
	opts.Limits = &limits
	r := &Repo{
		Root:      abs,
		File:      f,
		opts:      opts,
		Charts:    opts.HelmSources,
		loaded:    opts.HelmLoaded,
		trusted:   trusted,
		self:      map[string]bool{"flux-system": true},
		rootVars:  map[string]map[objectKey]*unstructured.Unstructured{},
		rootObjs:  map[string][]*unstructured.Unstructured{},
		rootRSIP:  map[string][]*unstructured.Unstructured{},
		rootAPIs:  map[string][]string{},
		rootAll:   map[string][]*unstructured.Unstructured{},
		declared:  map[*Target]*declared{},
		watches:   map[*Target]render.Watch{},
		rootFiles: map[string]map[string]bool{},
		results:   map[*Target]*render.Result{},
		errs:      map[*Target]error{},
		busy:      map[*Target]bool{},
		expanded:  map[*Target]*render.Result{},
		expandErr: map[*Target]error{},
		ready:     make(chan struct{}),
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if err := r.locate(); err != nil {
		return nil, err
	}
	if trusted != nil {
		r.File, r.Notes = reachFile(f, trusted.File)
		if err := checkSources(r.Root, r.File.Sources); err != nil {
			return nil, err
		}
	}
	if err := r.checkReach(); err != nil {
		return nil, err
	}
	if r.Charts == nil {
		r.Charts = helm.NewSources(helm.SourcesOptions{CacheDir: opts.HelmCacheDir})
	}
	if r.loaded == nil {
		r.loaded = helm.NewLoadedCharts()
	}
	return r, nil
}

// discoverTargets finds the targets of a prepared Repo: ferry.yaml's, or
// those its Flux objects declare. A proposed revision waits for its
// trusted one's where it reads them.
func (r *Repo) discoverTargets(ctx context.Context) error {
	defer close(r.ready)
	if r.File != nil && len(r.File.Targets) > 0 {
		if err := r.fromFile(); err != nil {
			return err
		}
	} else if err := r.discover(ctx); err != nil {
		return err
	}
	if r.opts.HelmReleases != "" {
		for _, t := range r.Targets {
			t.HelmReleases = HelmMode(r.opts.HelmReleases)
		}
	}
	if r.trusted != nil {
		r.trustAccess()
	}
	r.resolveDependencies()
	return nil
}

// locate finds the folders reads are checked against: the revision's own
// (Root, symlinks resolved), the checkout that sources: paths are
// relative to, and the workspace.
func (r *Repo) locate() error {
	var err error
	if r.rootReal, err = filepath.EvalSymlinks(r.Root); err != nil {
		return fmt.Errorf("repository %s: %w", r.Root, err)
	}
	r.checkout = r.Root
	if r.opts.Checkout != "" {
		if r.checkout, err = filepath.Abs(r.opts.Checkout); err != nil {
			return err
		}
		if real, err := filepath.EvalSymlinks(r.checkout); err == nil {
			r.checkout = real
		}
	}
	r.workspace, err = workspaceOf(r.opts, r.checkout)
	return err
}

// fromFile turns ferry.yaml's targets into Targets.
func (r *Repo) fromFile() error {
	for i, tc := range r.File.Targets {
		ns := tc.Namespace
		if ns == "" {
			ns = DefaultNamespace
		}
		spec := map[string]any{}
		if err := toMap(tc, &spec); err != nil {
			return fmt.Errorf("%s: target %q: %w", FileName, tc.Name, err)
		}
		for _, k := range []string{"name", "cluster", "namespace", "kubeconfig", "kubeconfigEnv", "dependsOn"} {
			delete(spec, k)
		}
		ks := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": KustomizeGroup + "/v1",
			"kind":       "Kustomization",
			"metadata":   map[string]any{"name": tc.Name, "namespace": ns},
			"spec":       spec,
		}}
		t := &Target{
			Name:          tc.Name,
			Cluster:       tc.Cluster,
			Namespace:     ns,
			Origin:        fmt.Sprintf("%s targets[%d]", FileName, i),
			Root:          r.Root,
			Kustomization: ks,
			Kubeconfig:    tc.Kubeconfig,
			KubeconfigEnv: tc.KubeconfigEnv,
			deps:          tc.DependsOn,
		}
		t.fillFromSpec()
		if c, ok := r.File.Clusters[tc.Cluster]; ok && tc.Cluster != "" {
			t.useCluster(c, r.Root)
		}
		r.Targets = append(r.Targets, t)
	}
	return nil
}

func (t *Target) fillFromSpec() {
	o := t.Kustomization.Object
	t.Path, _, _ = unstructured.NestedString(o, "spec", "path")
	t.Path = path.Clean(strings.TrimPrefix(filepath.ToSlash(t.Path), "./"))
	t.Prune, _, _ = unstructured.NestedBool(o, "spec", "prune")
	t.TargetNamespace, _, _ = unstructured.NestedString(o, "spec", "targetNamespace")
}

func (t *Target) useCluster(c ClusterConfig, root string) {
	if t.Kubeconfig == "" && t.KubeconfigEnv == "" {
		t.Kubeconfig, t.KubeconfigEnv = c.Kubeconfig, c.KubeconfigEnv
		t.Access = c.access(root)
	}
	if t.Context == "" {
		t.Context = c.Context
	}
	t.HelmReleases = c.HelmReleases
	t.KubeVersion, t.APIVersions = c.KubeVersion, c.APIVersions
}

// Select returns the named targets in dependency order, or all targets
// when no name is given. A name may be bare or <cluster>/<name>.
func (r *Repo) Select(names []string) ([]*Target, error) {
	if len(names) == 0 {
		return r.Targets, nil
	}
	want := map[*Target]bool{}
	var errs []error
	for _, n := range names {
		t, err := r.Target(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		want[t] = true
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []*Target
	for _, t := range r.Targets {
		if want[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Target finds one target by name.
func (r *Repo) Target(name string) (*Target, error) {
	for _, t := range r.Targets {
		if t.Name == name {
			return t, nil // names are unique
		}
	}
	var found []*Target
	for _, t := range r.Targets {
		if t.Cluster+"/"+bareName(t.Name) == name {
			found = append(found, t)
		}
	}
	if len(found) == 0 {
		for _, t := range r.Targets {
			if bareName(t.Name) == name {
				found = append(found, t)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		for _, s := range r.Skipped {
			if s.Name == name || s.Cluster+"/"+s.Name == name {
				return nil, fmt.Errorf("target %q is skipped: %s", name, s.Reason)
			}
		}
		return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(r.names(), ", "))
	default:
		var ns []string
		for _, t := range found {
			ns = append(ns, t.Name)
		}
		return nil, fmt.Errorf("target name %q is ambiguous: %s", name, strings.Join(ns, ", "))
	}
}

// objectKey is a core (v1) object's kind, namespace and name.
type objectKey struct{ kind, namespace, name string }

// substitutionSources indexes the core objects of a render, the first of
// each kind, namespace and name: every target that substitutes from its
// cluster's root looks it up, so a lookup must not walk the whole root.
func substitutionSources(objs []*unstructured.Unstructured) map[objectKey]*unstructured.Unstructured {
	m := map[objectKey]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetAPIVersion() != "v1" {
			continue
		}
		k := objectKey{o.GetKind(), o.GetNamespace(), o.GetName()}
		if _, ok := m[k]; !ok {
			m[k] = o
		}
	}
	return m
}

func (r *Repo) names() []string {
	var out []string
	for _, t := range r.Targets {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

func bareName(n string) string {
	if i := strings.LastIndex(n, "/"); i >= 0 {
		return n[i+1:]
	}
	return n
}

// Inputs is what the target's render may read, found without rendering.
// A target that substitutes from other objects (postBuild.substituteFrom)
// may depend on anything its cluster renders, so its inputs are unbounded;
// so are those of a target that holds HelmReleases it renders (their
// charts and values come from the cluster's renders and chart folders).
func (r *Repo) Inputs(t *Target) render.Watch {
	if from, _, _ := unstructured.NestedSlice(t.Kustomization.Object, "spec", "postBuild", "substituteFrom"); len(from) > 0 {
		return render.Watch{Unknown: true}
	}
	if t.Revision == nil && t.HelmReleases != HelmController {
		if w := r.watch(t); !w.Unknown && holdsReleases(t.Root, w) {
			return render.Watch{Unknown: true}
		}
	}
	return r.OwnInputs(t)
}

// watch is render.Inputs of t's spec, walked once per target: the
// copy returned is the caller's to change.
func (r *Repo) watch(t *Target) render.Watch {
	w, ok := r.watches[t]
	if !ok {
		w = render.Inputs(r.spec(t))
		r.watches[t] = w
	}
	return render.Watch{Files: slices.Clone(w.Files), Dirs: slices.Clone(w.Dirs), Unknown: w.Unknown}
}

// OwnInputs is what the target's kustomization files may read, found
// without rendering: Inputs without the objects its variables and
// HelmReleases come from.
func (r *Repo) OwnInputs(t *Target) render.Watch {
	if t.Revision != nil {
		// Another ref of the repository: no file of this revision is
		// read (which ref and commit it is, is part of the target).
		return render.Watch{}
	}
	w := r.watch(t)
	w.Files = r.repoFiles(t.Root, w.Files)
	if rel, ok := r.within(t.Root); ok && rel != "." {
		for i, d := range w.Dirs {
			if d == "." {
				w.Dirs[i] = rel
			} else {
				w.Dirs[i] = rel + "/" + d
			}
		}
	}
	return w
}
