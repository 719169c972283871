package render

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/inputprovider"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/ocisig"
	"github.com/ferry-ci/ferry/internal/scratch"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// Options control how targets are built.
type Options struct {
	// Decryptor opens SOPS files; nil means no identity was given, and an
	// encrypted file fails the build unless NoDecrypt is set.
	Decryptor *secrets.Decryptor
	// NoDecrypt leaves SOPS-encrypted Secrets out of the output instead of
	// decrypting them, and reports them in Result.Omitted.
	NoDecrypt bool
	// AllowRemoteBases lets kustomization files reference remote bases.
	AllowRemoteBases bool
	// HelmCacheDir keeps the Helm charts fetched for HelmReleases (and
	// repository indexes) across runs, by digest; empty keeps them in
	// memory for one run. Read by config, which renders HelmReleases.
	HelmCacheDir string
	// HelmSources and HelmLoaded, when set, are shared by every Repo
	// loaded with these options (the two revisions of a diff), so a chart
	// is fetched and loaded once a run; else each Repo has its own, with
	// HelmCacheDir. Read by config.
	HelmSources *helm.Sources
	HelmLoaded  *helm.LoadedCharts
	// HelmRenders, when set, keeps chart renders by what they take, for
	// every Repo of the run and, with a folder, for later runs.
	HelmRenders *helm.RenderCache
	// Builds, when set, keeps builds by what they read for every Repo
	// loaded with these options. Read by config.
	Builds *Builds
	// BuildCache, when set, keeps kustomize builds on disk for later
	// runs, taken again when every file they read is the same.
	BuildCache *BuildCache
	// HelmReleases, when set, overrides the helmReleases setting of every
	// cluster in ferry.yaml: "render" or "controller". Read by config.
	HelmReleases string
	// ChartCredentials are the credentials of chart sources found
	// outside the renders (FERRY_SECRET_<NAME>_*, FERRY_REGISTRY_<HOST>_*,
	// the Docker config); nil looks for none. Read by config.
	ChartCredentials *images.EnvCredentials
	// InsecureHosts are chart repository and registry hosts reached over
	// plain HTTP, named on purpose. Read by config.
	InsecureHosts []string
	// Workspace is the folder every read outside the revision's own tree
	// stays under (sources: folders, artifact sources, chart folders),
	// after symlinks: GITHUB_WORKSPACE in Actions, --workspace, else the
	// parent of Checkout. Read by config.
	Workspace string
	// Checkout is the repository's folder in the workspace, which
	// ferry.yaml's sources: paths are relative to, when the revision
	// rendered is an export of it elsewhere (diff, plan); empty: the
	// revision's own folder. Read by config.
	Checkout string
	// Limits are the run's budgets; nil takes them from the repository's
	// ferry.yaml (config.Load fills them in). diff and plan set the base
	// revision's, so a pull request cannot raise its own.
	Limits *budget.Limits
	// HelmSandbox, when set, renders HelmReleases in a child process
	// bounded by Limits (see helm.Sandbox). Read by config.
	HelmSandbox *helm.Sandbox
	// Ahead, when set, holds kustomize builds run before their targets
	// are rendered (Ahead.Start); nil builds each when it is rendered.
	Ahead *Ahead
	// InputProviders, when set, is how the APIs of Flux Operator
	// ResourceSetInputProviders are reached: the forge the job runs on
	// and its token, the transport. What ferry.yaml allows
	// (inputProviderAPIs:) decides whether they are called. Read by
	// config.
	InputProviders *inputprovider.Options
	// SigstoreRoot is the trusted root keyless cosign signatures of OCI
	// charts are verified against (FERRY_SIGSTORE_TRUSTED_ROOT); nil
	// when the run has none. Read by config.
	SigstoreRoot *ocisig.Root
}

// limits are o's budgets, defaults filled in.
func (o Options) limits() budget.Limits {
	if o.Limits == nil {
		return budget.Defaults()
	}
	return o.Limits.Fill()
}

// Lookup finds a ConfigMap or Secret that the repository renders, for
// postBuild.substituteFrom. It returns nil, nil when there is none.
type Lookup func(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error)

// Spec is one thing to build: a Flux Kustomization object (from the repo
// or synthesized from ferry.yaml) whose spec.path is rendered under Root.
type Spec struct {
	// Name names the target in errors.
	Name string
	// Root is the repository (or checked-out source) the path is in.
	Root string
	// Kustomization is a kustomize.toolkit.fluxcd.io Kustomization.
	Kustomization *unstructured.Unstructured
	// Lookup resolves postBuild.substituteFrom; nil finds nothing.
	Lookup Lookup
	// LeaveMissing renders a target whose postBuild.substituteFrom names
	// a ConfigMap or Secret that Lookup does not find (one only the
	// cluster holds) as flux build --dry-run does, instead of failing:
	// the variables nothing defines are left as written, and
	// Result.Without names the objects. Offline commands set it; those
	// with a cluster read the object from there.
	LeaveMissing bool
	// Artifact, when set, is what the path is rendered in instead of
	// Root: the ExternalArtifact an ArtifactGenerator makes. Result.Files
	// then name the source files the artifact's files were copied from.
	Artifact *Artifact
}

// Result is the rendered output of one target.
type Result struct {
	Name string
	Set  manifest.Set
	// Files lists the files the build read, relative to Root.
	Files []string
	// Encrypted lists the SOPS-encrypted files among Files.
	Encrypted []string
	// Omitted lists the encrypted Secrets left out because of NoDecrypt.
	Omitted []manifest.ID
	// Without lists the substituteFrom objects (Kind/namespace/name) the
	// render went without (Spec.LeaveMissing), and Unresolved the
	// variables it left as written for want of them.
	Without    []string
	Unresolved []string
	// Skipped lists the objects of the render that generate others and
	// were not expanded (a Flux Operator ResourceSet whose inputs ferry
	// cannot resolve), with why.
	Skipped []SkippedObject
	// Releases lists the Flux HelmReleases of the render that were
	// expanded into the objects of their charts, in the order of the
	// render (none when the target's cluster leaves them to a
	// helm-controller).
	Releases []Release
}

// SkippedObject is an object of a render that ferry left as it is.
type SkippedObject struct {
	// ID is its Kind/namespace/name.
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Release is a Flux HelmRelease a render expanded: which chart, at which
// version, it installs, and as which Helm release.
type Release struct {
	// ID is the HelmRelease's Kind/namespace/name.
	ID string `json:"id"`
	// Name and Namespace are the Helm release's.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Chart and Version are the chart's name and its version as
	// resolved (a range in the spec becomes the version it picked).
	Chart   string `json:"chart"`
	Version string `json:"version"`
	// Skipped says why the release was not rendered (its chart is in a
	// source ferry does not fetch); the HelmRelease stays an object.
	Skipped string `json:"skipped,omitempty"`
	// Objects are the identities of the objects (hooks included) the
	// chart rendered, so that a diff can leave them out when the other
	// side could not render the release.
	Objects []manifest.ID `json:"-"`
}

// Build renders one target: Flux's generator turns the Kustomization's
// spec into a kustomization (generated in memory when the path has none),
// kustomize builds it, then postBuild substitution and commonMetadata are
// applied as kustomize-controller applies them.
//
// kustomize cannot be interrupted, so the build runs beside the caller:
// when ctx is done Build returns at once with its error, and the build
// left behind ends on its own (its result is dropped).
func Build(ctx context.Context, spec Spec, opts Options) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("target %q: %w", spec.Name, err)
	}
	type built struct {
		res *Result
		err error
	}
	var tree *artifactTree
	if spec.Artifact != nil {
		// fluxcd/pkg/kustomize's generator reads the path from disk, so
		// the artifact is written to a private folder: the files as
		// committed (encrypted ones stay encrypted; they are decrypted as
		// kustomize reads them, like any other), in memory when it can
		// (package scratch), removed when Build returns, even when ctx
		// ends first.
		var err error
		if tree, err = spec.Artifact.build(ctx); err != nil {
			return nil, fmt.Errorf("target %q: %w", spec.Name, err)
		}
		dir, err := scratch.Fill("ferry-artifact-", tree.write)
		if err != nil {
			return nil, fmt.Errorf("target %q: artifact %q: %w", spec.Name, spec.Artifact.Name, err)
		}
		defer os.RemoveAll(dir)
		spec.Root = dir
	}
	done := make(chan built, 1)
	go func() {
		res, err := build(ctx, spec, opts)
		done <- built{res, err}
	}()
	select {
	case b := <-done:
		if b.err != nil {
			if tree != nil {
				return nil, fmt.Errorf("target %q: artifact %q (%s): %w", spec.Name, spec.Artifact.Name, spec.Artifact.Generator, relativize(b.err, spec.Root))
			}
			return nil, fmt.Errorf("target %q: %w", spec.Name, relativize(b.err, spec.Root))
		}
		if tree != nil {
			b.res.Files = tree.originsOf(b.res.Files)
			b.res.Encrypted = tree.originsOf(b.res.Encrypted)
		}
		return b.res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("target %q: %w", spec.Name, ctx.Err())
	}
}

// kustomizeInput is what the kustomize build of a target reads first:
// the repository, the folder and the kustomization Flux's generator makes
// of the folder's own and the Kustomization's spec.
type kustomizeInput struct {
	root, dir, kfile string
	kdata            []byte
}

func prepareKustomize(spec Spec) (*kustomizeInput, error) {
	root, err := filepath.Abs(spec.Root)
	if err != nil {
		return nil, err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, fmt.Errorf("repository %s: %w", spec.Root, err)
	}
	ks := spec.Kustomization
	path, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
	dir, err := resolvePath(root, path)
	if err != nil {
		return nil, err
	}

	// Flux's generator reads the path's kustomization file itself: bound
	// it as every other file is bounded, naming it.
	if err := checkKustomizationFile(root, dir); err != nil {
		return nil, err
	}
	gen := fluxkustomize.NewGenerator(root, *ks)
	kdata, kfile, _, err := gen.GenerateManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: generating kustomization: %w", path, err)
	}
	return &kustomizeInput{root: root, dir: dir, kfile: kfile, kdata: kdata}, nil
}

// kustomize runs the kustomize build of in through a new repoFS, which
// it returns with what the build read, or takes the build opts.BuildCache
// kept of the same files.
func (in *kustomizeInput) kustomize(opts Options) (*repoFS, []*resource.Resource, error) {
	base, err := securefs.MakeFsOnDiskSecure(in.root)
	if err != nil {
		return nil, nil, err
	}
	// A build that may be kept records what it asks of the files.
	key := opts.BuildCache.key(in, opts)
	var probes *probeFS
	if key != "" {
		probes = newProbeFS(base, in.root)
		base = probes
	}
	fs := &repoFS{
		FileSystem: base,
		root:       in.root,
		overlay:    map[string][]byte{filepath.Clean(in.kfile): in.kdata},
		decryptor:  opts.Decryptor,
		noDecrypt:  opts.NoDecrypt,
		remote:     opts.AllowRemoteBases,
		read:       map[string]struct{}{},
		encrypted:  map[string]struct{}{},
	}
	if fs.decryptor == nil {
		fs.decryptor = secrets.NewDecryptor(nil)
	}
	if kept, resources, ok := opts.BuildCache.get(key, fs, probes); ok {
		return kept, resources, nil
	}
	resources, err := kustomizeBuild(fs, in.dir, in.kdata, opts.limits().PatchCopySize)
	if err == nil {
		opts.BuildCache.put(key, fs, probes, resources)
	}
	return fs, resources, err
}

func build(ctx context.Context, spec Spec, opts Options) (*Result, error) {
	in, err := prepareKustomize(spec)
	if err != nil {
		return nil, err
	}
	ks := spec.Kustomization
	fs, resources, buildErr := opts.Ahead.take(in, opts)
	if fs == nil { // not built ahead
		if fs, resources, buildErr = in.kustomize(opts); fs == nil {
			return nil, buildErr
		}
	}
	// A failure recorded by the filesystem (decryption, a path escaping the
	// root, a remote base) is the real cause; kustomize may have turned it
	// into something vaguer.
	if err := fs.failures(); err != nil {
		return nil, err
	}
	var over *budget.Exceeded
	if errors.As(buildErr, &over) {
		over.What = fs.copyPatches()
		return nil, over
	}
	if buildErr != nil {
		if strings.Contains(buildErr.Error(), "MalformedYAMLError") {
			if err := fs.findMalformed(); err != nil {
				return nil, err
			}
		}
		return nil, describeBuildError(buildErr)
	}

	result := &Result{Files: fs.files(), Encrypted: fs.encryptedFiles()}
	subst, err := substitution(ctx, spec)
	if err != nil {
		return nil, err
	}
	objs, err := convertAll(ctx, resources, subst)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		if opts.NoDecrypt && isEncryptedSecret(u) {
			result.Omitted = append(result.Omitted, manifest.IDOf(u))
			continue
		}
		result.Set.Objects = append(result.Set.Objects, u)
	}
	if err := applyCommonMetadata(ks, result.Set.Objects); err != nil {
		return nil, err
	}
	if subst != nil {
		result.Without, result.Unresolved = subst.without, subst.unresolvedNames()
	}
	return result, nil
}

// convertAll substitutes the variables of each resource (subst nil: no
// postBuild) and converts it to an object, on every core: a target's
// objects are independent of each other. The first failure, in order,
// is the error.
func convertAll(ctx context.Context, resources []*resource.Resource, subst *substituter) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(resources))
	errs := make([]error, len(resources))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(resources)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(resources) {
					return
				}
				objs[i], errs[i] = convert(ctx, resources[i], subst)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// convert is one resource of convertAll.
func convert(ctx context.Context, r *resource.Resource, subst *substituter) (*unstructured.Unstructured, error) {
	id := resourceID(r)
	if subst != nil {
		sub, err := subst.apply(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("%s: postBuild substitution: %w", id, err)
		}
		if sub != nil { // nil: substitution disabled on this object
			r = sub
		}
	}
	b, err := objectJSON(&r.RNode)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return u, nil
}

var registeredID = regexp.MustCompile(`may not add resource with an already registered id: ([^.\s]+)\.([^/\s]+)/([^\s]+?)\.(\[noNs\]|[^.\s']+)`)

var missingFile = regexp.MustCompile(`open ([^:']+): no such file or directory`)

// describeBuildError puts what kustomize's error is about first: the
// missing file, or the duplicated object as Kind/namespace/name. It keeps
// kustomize's text after it.
func describeBuildError(err error) error {
	if m := missingFile.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s: file does not exist: %w", m[1], err)
	}
	m := registeredID.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	kind, gv, name, ns := m[1], m[2], m[3], m[4]
	if i := strings.Index(gv, "."); i >= 0 {
		kind += "." + gv[i+1:]
	}
	id := kind + "/" + name
	if ns != "[noNs]" {
		id = kind + "/" + ns + "/" + name
	}
	return fmt.Errorf("%s: the object is defined twice: %w", id, err)
}

// checkKustomizationFile refuses a kustomization file in dir that is too
// large or an alias bomb, before anything parses it.
func checkKustomizationFile(root, dir string) error {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		data, err := manifest.ReadFile(p, rel)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		return manifest.CheckAliases(rel, data)
	}
	return nil
}

// resolvePath turns spec.path into a directory under root, refusing
// anything that leaves it.
func resolvePath(root, path string) (string, error) {
	if filepath.IsAbs(path) {
		return "", fmt.Errorf("path %q must be relative to the repository", path)
	}
	dir := filepath.Join(root, filepath.FromSlash(path))
	if rel, err := filepath.Rel(root, dir); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q escapes the repository root", path)
	}
	evaluated, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("path %q does not exist", path)
	}
	if err != nil {
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	if rel, err := filepath.Rel(root, evaluated); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q escapes the repository root through a symlink", path)
	}
	if fi, err := os.Stat(evaluated); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("path %q is not a directory", path)
	}
	return dir, nil
}

// relativize rewrites absolute paths under root in an error message into
// repository-relative ones, so errors read the same on every machine.
func relativize(err error, root string) error {
	abs, aerr := filepath.Abs(root)
	if aerr != nil {
		return err
	}
	msg := err.Error()
	out := msg
	if ev, e := filepath.EvalSymlinks(abs); e == nil && ev != abs {
		out = strings.ReplaceAll(out, ev+string(filepath.Separator), "")
	}
	out = strings.ReplaceAll(out, abs+string(filepath.Separator), "")
	if out == msg {
		return err
	}
	return &rewordedError{msg: out, err: err}
}

type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }

// isEncryptedSecret reports a Secret that still carries SOPS content: the
// sops metadata of a manifest, or ENC[...] values from a generator source.
func isEncryptedSecret(u *unstructured.Unstructured) bool {
	if u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return false
	}
	if _, ok := u.Object["sops"]; ok {
		return true
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	for _, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err == nil && (strings.Contains(string(b), "ENC[AES256_GCM,") || strings.Contains(string(b), "sops_mac=")) {
			return true
		}
	}
	str, _, _ := unstructured.NestedStringMap(u.Object, "stringData")
	for _, v := range str {
		if strings.Contains(v, "ENC[AES256_GCM,") {
			return true
		}
	}
	return false
}

// applyCommonMetadata sets spec.commonMetadata labels and annotations on
// every object's own metadata, as kustomize-controller does.
func applyCommonMetadata(ks *unstructured.Unstructured, objs []*unstructured.Unstructured) error {
	labels, _, err := unstructured.NestedStringMap(ks.Object, "spec", "commonMetadata", "labels")
	if err != nil {
		return fmt.Errorf("spec.commonMetadata.labels: %w", err)
	}
	annotations, _, err := unstructured.NestedStringMap(ks.Object, "spec", "commonMetadata", "annotations")
	if err != nil {
		return fmt.Errorf("spec.commonMetadata.annotations: %w", err)
	}
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	for _, o := range objs {
		if len(labels) > 0 {
			l := o.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			for k, v := range labels {
				l[k] = v
			}
			o.SetLabels(l)
		}
		if len(annotations) > 0 {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			for k, v := range annotations {
				a[k] = v
			}
			o.SetAnnotations(a)
		}
	}
	return nil
}

func resourceID(r interface {
	GetKind() string
	GetNamespace() string
	GetName() string
}) string {
	if ns := r.GetNamespace(); ns != "" {
		return r.GetKind() + "/" + ns + "/" + r.GetName()
	}
	return r.GetKind() + "/" + r.GetName()
}

// varClient is the smallest client Flux's variable loader needs: Get of a
// ConfigMap or Secret, answered from what the repository renders.
type varClient struct {
	client.Client
	ctx    context.Context
	lookup Lookup
}

func (c *varClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	var kind string
	switch obj.(type) {
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	case *corev1.Secret:
		kind = "Secret"
	default:
		return fmt.Errorf("unsupported lookup of %T", obj)
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, key.Name)
	if c.lookup == nil {
		return notFound
	}
	u, err := c.lookup(c.ctx, kind, key.Namespace, key.Name)
	if err != nil {
		return err
	}
	if u == nil {
		return notFound
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("%s/%s/%s: %w", kind, key.Namespace, key.Name, err)
	}
	if s, ok := obj.(*corev1.Secret); ok {
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
	}
	return nil
}

// objectJSON is RNode.MarshalJSON of an object without its detour through
// YAML text: kustomize prints the node and parses the text again before
// decoding it, which costs more than the rest of the conversion; decoding
// the node itself gives the same map. The JSON then becomes an
// Unstructured, so numbers are int64/float64 as everywhere else in
// client-go (kustomize's maps hold int, which DeepCopy rejects).
func objectJSON(rn *kyaml.RNode) ([]byte, error) {
	if rn.YNode() == nil || rn.YNode().Kind != kyaml.MappingNode {
		return rn.MarshalJSON()
	}
	m := map[string]any{}
	if err := rn.YNode().Decode(&m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Builds keeps builds by a key of everything they read (config computes
// it: the target's definition, its files' content, its variables), for
// every Repo loaded with the same Options: the two revisions of a diff
// build a target they hold alike once, even when they build side by
// side (Claim, Await). Safe for concurrent use. A Result kept here is
// shared: nothing may change it.
type Builds struct {
	mu      sync.Mutex
	kept    map[string]*Result
	claimed map[string]chan struct{} // closed when the claim ends
}

// NewBuilds returns an empty Builds.
func NewBuilds() *Builds {
	return &Builds{kept: map[string]*Result{}, claimed: map[string]chan struct{}{}}
}

// Claim says the caller builds key now, so that Await waits for its
// result; it reports false when key is kept or claimed already. The
// caller ends the claim with Put or Release. Only a party that never
// waits itself may claim (the trusted revision of a diff): then no two
// parties wait for each other.
func (b *Builds) Claim(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.kept[key]; ok {
		return false
	}
	if _, ok := b.claimed[key]; ok {
		return false
	}
	b.claimed[key] = make(chan struct{})
	return true
}

// Release ends a claim on key without a result (the build failed); a
// claim already ended is left alone.
func (b *Builds) Release(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endClaim(key)
}

func (b *Builds) endClaim(key string) {
	if c, ok := b.claimed[key]; ok {
		close(c)
		delete(b.claimed, key)
	}
}

// Await returns the build kept under key, waiting while it is claimed:
// false when none is kept (then the caller builds it), or ctx ended.
func (b *Builds) Await(ctx context.Context, key string) (*Result, bool) {
	b.mu.Lock()
	c, ok := b.claimed[key]
	b.mu.Unlock()
	if ok {
		select {
		case <-c:
		case <-ctx.Done():
			return nil, false
		}
	}
	return b.Get(key)
}

// Get returns the build kept under key.
func (b *Builds) Get(key string) (*Result, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.kept[key]
	return r, ok
}

// Put keeps res under key, ending a claim on it.
func (b *Builds) Put(key string, res *Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kept[key] = res
	b.endClaim(key)
}
