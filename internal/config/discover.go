package config

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

// clusterRoot is where discovery starts for one cluster.
type clusterRoot struct {
	Cluster
	sync *FluxObject // the flux-system sync Kustomization, if any
}

// discover finds targets the way Flux does: render each cluster's root;
// every Kustomization in a render (as patched) is a target, and its own
// render is searched again. Kustomization objects in files that no root
// reaches are targets too, found by a plain file scan.
func (r *Repo) discover(ctx context.Context) error {
	objs, inc, err := scanRepo(r.Root)
	if err != nil {
		return err
	}
	roots := findClusterRoots(r.Root, objs)
	roots = r.instanceChartRoots(ctx, objs, roots)
	roots = r.declaredRoots(roots)
	sort.Slice(roots, func(i, j int) bool { return roots[i].Name < roots[j].Name })
	if err := checkClusterNames(roots); err != nil {
		return err
	}
	r.artifacts = indexArtifacts(objs, inc, roots)
	r.self = selfSources(objs, roots)
	r.syncURLs, r.syncRefs = syncSourceRefs(objs, r.self)
	r.syncVerify = syncVerifyOf(objs, r.self)
	r.gitRepos = indexGitRepositories(objs, inc, roots)
	d := &discovery{
		r:       r,
		roots:   roots,
		self:    r.self,
		idx:     indexKustomizations(objs, roots),
		byKey:   map[string]*Target{},
		reached: map[string]bool{},
	}
	if err := d.renderRoots(ctx); err != nil {
		return err
	}
	d.renderTargets(ctx)
	d.addUnreached(ctx, inc)
	r.nameTargets()
	if err := checkDiscoveredNames(r.Targets, r.Skipped); err != nil {
		return err
	}
	r.forgetDiscoveryRenders()
	return nil
}

// discovery is one run of Repo.discover: what the file scan found, and
// the targets and files reached so far.
type discovery struct {
	r     *Repo
	roots []clusterRoot
	self  map[string]bool // selfSources
	idx   *kustomizationIndex
	// byKey holds the targets added, by cluster/namespace/name; nil for
	// one skipped.
	byKey map[string]*Target
	// reached holds the Kustomizations (file:line) a render holds, which
	// the fallback scan leaves alone.
	reached map[string]bool
	// queue holds the targets whose render is still to be searched.
	queue []*Target
}

// renderRoots renders each cluster's root and adds the Kustomizations in
// it, except the root's own sync Kustomization, as targets. A root whose
// source ferry cannot reach is skipped, which leaves the cluster's
// Kustomizations to the file scan.
func (d *discovery) renderRoots(ctx context.Context) error {
	r := d.r
	for _, root := range d.roots {
		r.Clusters = append(r.Clusters, root.Cluster)
		rootKs, dir, ok := d.rootSource(ctx, root)
		if !ok {
			continue
		}
		res, err := render.Build(ctx, render.Spec{Name: "cluster root " + root.Path, Root: dir, Kustomization: rootKs}, r.opts)
		if err == nil {
			res, err = r.expandResourceSets(ctx, root.Name, res, true)
		}
		if err != nil {
			return fmt.Errorf("discovering targets of cluster %q: %w", root.Name, err)
		}
		for _, s := range res.Skipped {
			_, name, _ := strings.Cut(strings.TrimPrefix(s.ID, "ResourceSet/"), "/")
			r.Skipped = append(r.Skipped, Skipped{Name: name, Cluster: root.Name, Origin: "cluster root " + root.Path, Reason: s.ID + ": " + s.Reason})
		}
		r.rootVars[root.Name] = substitutionSources(res.Set.Objects)
		r.rootObjs[root.Name] = rootKept(res.Set.Objects)
		for _, o := range res.Set.Objects {
			if resourceset.IsProvider(o) {
				r.rootRSIP[root.Name] = append(r.rootRSIP[root.Name], o)
			}
		}
		r.rootAPIs[root.Name] = definedAPIVersions(res.Set.Objects)
		r.rootAll[root.Name] = res.Set.Objects
		files := r.repoFiles(dir, res.Files)
		d.idx.markRead(d.reached, files)
		r.rootFiles[root.Name] = map[string]bool{}
		for _, f := range files {
			r.rootFiles[root.Name][f] = true
		}
		r.gitRepos.addRendered(root.Name, res.Set.Objects)
		for _, o := range res.Set.Objects {
			if !isKustomization(o) || (root.sync != nil && o.GetName() == root.sync.Object.GetName() && o.GetNamespace() == root.sync.Object.GetNamespace()) {
				continue
			}
			d.enqueue(d.add(ctx, root.Name, o, d.origin(root.Name, o, root.Path)))
		}
	}
	return nil
}

// rootSource is the Kustomization a cluster root renders as, and the
// folder it renders from: its sync Kustomization over its sync source
// (this repository, or a folder ferry.yaml maps it to), or a synthetic one
// over the repository for a clusters/<name> folder. When ferry cannot
// reach the sync source it records the root as skipped and returns false.
func (d *discovery) rootSource(ctx context.Context, root clusterRoot) (*unstructured.Unstructured, string, bool) {
	r := d.r
	if root.sync == nil {
		return syntheticKustomization(root.Name, root.Path), r.Root, true
	}
	rootKs := root.sync.Object.DeepCopy()
	kind, ns, name := sourceRef(rootKs, namespaceOr(rootKs.GetNamespace()))
	dir, _, reason := r.sourceDir(ctx, root.Name, kind, ns, name, d.self)
	if reason != "" {
		r.Skipped = append(r.Skipped, Skipped{Name: rootKs.GetName(), Cluster: root.Name, Origin: root.Origin, Reason: "cluster root " + root.Path + ": " + reason})
		return nil, "", false
	}
	return rootKs, dir, true
}

// renderTargets renders each queued target, in the order found, and adds
// the Kustomizations in its render as targets of its cluster, which are
// rendered in turn. A target that fails to render is left for the error
// to be reported when it is rendered again.
func (d *discovery) renderTargets(ctx context.Context) {
	for len(d.queue) > 0 {
		t := d.queue[0]
		d.queue = d.queue[1:]
		if !d.r.declares(t).mayNest() {
			// No file it reads declares a Kustomization or a
			// GitRepository: it is built when it is rendered.
			continue
		}
		res, err := d.r.build(ctx, t)
		if err != nil {
			continue
		}
		// A render of another ref read files of that ref, not of the
		// checkout.
		if t.Revision == nil {
			d.idx.markRead(d.reached, res.Files) // repository-relative (Repo.Render)
		}
		d.r.gitRepos.addRendered(t.Cluster, res.Set.Objects)
		for _, o := range res.Set.Objects {
			if isKustomization(o) {
				d.enqueue(d.add(ctx, t.Cluster, o, d.origin(t.Cluster, o, t.Name)))
			}
		}
	}
}

// addUnreached adds as targets the Kustomization files no render reached
// (sync Kustomizations aside), in the namespace the kustomization that
// includes the file would give them.
func (d *discovery) addUnreached(ctx context.Context, inc *includes) {
	for _, k := range d.idx.all {
		if isSyncOf(k.FluxObject, d.roots) || d.reached[k.where] {
			continue
		}
		obj := k.Object.DeepCopy()
		if ns := inc.namespaceOf(k.File); ns != "" {
			obj.SetNamespace(ns)
		}
		d.add(ctx, k.cluster, obj, k.where)
	}
}

// enqueue queues a target just added for its render to be searched; nil
// (not added) is left out.
func (d *discovery) enqueue(t *Target) {
	if t != nil {
		d.queue = append(d.queue, t)
	}
}

// add makes a target of the Kustomization ks of cluster, found at origin,
// and returns it. It returns nil, adding nothing, when a target of that
// cluster, namespace and name was added (or skipped) already, and when
// ferry cannot reach the target's source, which it records as skipped.
func (d *discovery) add(ctx context.Context, cluster string, ks *unstructured.Unstructured, origin string) *Target {
	r := d.r
	ns := namespaceOr(ks.GetNamespace())
	key := cluster + "/" + ns + "/" + ks.GetName()
	if _, dup := d.byKey[key]; dup {
		return nil
	}
	t := &Target{
		Name:          ks.GetName(),
		Cluster:       cluster,
		Namespace:     ns,
		Origin:        origin,
		Kustomization: ks,
	}
	t.fillFromSpec()
	for _, dep := range dependsOn(ks) {
		if dep.Namespace == "" {
			dep.Namespace = ns
		}
		t.deps = append(t.deps, dep)
	}
	if reason := r.resolveSource(ctx, t, d.self); reason != "" {
		r.Skipped = append(r.Skipped, Skipped{Name: t.Name, Cluster: cluster, Origin: origin, Reason: reason})
		d.byKey[key] = nil
		return nil
	}
	if r.File != nil {
		if c, ok := r.File.Clusters[cluster]; ok {
			t.useCluster(c, r.Root)
		}
	}
	d.byKey[key] = t
	r.Targets = append(r.Targets, t)
	return t
}

// origin finds the file a rendered Kustomization came from: one of its
// own cluster's folder first, then one outside every cluster folder (an
// apps tree shared by clusters), and marks it reached, so that the
// fallback scan leaves it alone. A Kustomization in no file was
// "rendered from" via.
func (d *discovery) origin(cluster string, ks *unstructured.Unstructured, via string) string {
	for _, want := range []string{cluster, ""} {
		for _, k := range d.idx.byName[nameInCluster{ks.GetName(), want}] {
			// The file may leave the namespace to its kustomization.
			if ns := k.Object.GetNamespace(); ns == ks.GetNamespace() || ns == "" {
				d.reached[k.where] = true
				return k.where
			}
		}
	}
	return "rendered from " + via
}

// forgetDiscoveryRenders drops what discovery's renders cannot be trusted
// for: errors and results that looked up substituteFrom sources (more
// targets, which may hold them, were found afterwards). Results kept get
// the targets' final names.
func (r *Repo) forgetDiscoveryRenders() {
	r.errs = map[*Target]error{}
	for t, res := range r.results {
		if _, ok, _ := unstructured.NestedSlice(t.Kustomization.Object, "spec", "postBuild", "substituteFrom"); ok {
			delete(r.results, t)
			continue
		}
		if res.Name != t.Name {
			// A copy: the result may be shared (render.Builds).
			named := *res
			named.Name = t.Name
			r.results[t] = &named
		}
	}
}

// kustomizationIndex holds the Kustomizations of the file scan by name
// and cluster folder, and by file, so that each rendered Kustomization and
// each file a render read is looked up once instead of against every
// object of the repository: discovery stays linear in the fleet's size.
type kustomizationIndex struct {
	all    []*indexedKustomization // in file order
	byName map[nameInCluster][]*indexedKustomization
	byFile map[string][]*indexedKustomization
}

type indexedKustomization struct {
	FluxObject
	cluster string // clusterOfFile
	where   string // Where
}

// nameInCluster is a Kustomization's name and its cluster: the one whose
// folder holds its file ("" outside every cluster folder) in the scan's
// index, the target's cluster among targets.
type nameInCluster struct{ name, cluster string }

func indexKustomizations(objs []FluxObject, roots []clusterRoot) *kustomizationIndex {
	idx := &kustomizationIndex{
		byName: map[nameInCluster][]*indexedKustomization{},
		byFile: map[string][]*indexedKustomization{},
	}
	for _, o := range objs {
		if !isKustomization(o.Object) {
			continue
		}
		k := &indexedKustomization{FluxObject: o, cluster: clusterOfFile(o.File, roots), where: o.Where()}
		key := nameInCluster{o.Object.GetName(), k.cluster}
		idx.all = append(idx.all, k)
		idx.byName[key] = append(idx.byName[key], k)
		idx.byFile[o.File] = append(idx.byFile[o.File], k)
	}
	return idx
}

// markRead marks as reached every Kustomization in a file a render read:
// the render holds it, as patched (renamed, moved to another namespace),
// so the fallback scan must not add it a second time.
func (idx *kustomizationIndex) markRead(reached map[string]bool, files []string) {
	for _, f := range files {
		for _, k := range idx.byFile[f] {
			reached[k.where] = true
		}
	}
}

// findClusterRoots returns the clusters of a repository: the trees that
// Flux sync Kustomizations point at (a Kustomization whose path contains
// its own file: flux-system, or one in gotk-sync.yaml or pointing into
// clusters/), and otherwise each clusters/<name>/ folder.
func findClusterRoots(root string, objs []FluxObject) []clusterRoot {
	var roots []clusterRoot
	covered := map[string]bool{}
	for i := range objs {
		o := &objs[i]
		if !isKustomization(o.Object) {
			continue
		}
		p, _, _ := unstructured.NestedString(o.Object.Object, "spec", "path")
		p = path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./"))
		if p == "." || p == "" || !strings.HasPrefix(o.File, p+"/") || covered[p] {
			continue
		}
		// Only a sync Kustomization (Flux's bootstrap names it flux-system,
		// in gotk-sync.yaml, pointing at clusters/<name>) starts a cluster;
		// any other that happens to sit in its own path is a target.
		if o.Object.GetName() != "flux-system" && path.Base(o.File) != "gotk-sync.yaml" && !strings.HasPrefix(p, "clusters/") {
			continue
		}
		covered[p] = true
		roots = append(roots, clusterRoot{Cluster: Cluster{Name: path.Base(p), Path: p, Origin: o.Where(), From: ClusterFromSync}, sync: o})
	}
	// A Flux Operator FluxInstance declares its cluster's sync itself.
	for _, o := range objs {
		if sync := instanceSync(o); sync != nil {
			p, _, _ := unstructured.NestedString(sync.Object.Object, "spec", "path")
			p = path.Clean(strings.TrimPrefix(p, "./"))
			if p == "." || covered[p] {
				continue
			}
			covered[p] = true
			roots = append(roots, clusterRoot{Cluster: Cluster{Name: path.Base(p), Path: p, Origin: o.Where(), From: ClusterFromInstance}, sync: sync})
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, "clusters"))
	for _, e := range entries {
		p := "clusters/" + e.Name()
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || covered[p] {
			continue
		}
		roots = append(roots, clusterRoot{Cluster: Cluster{Name: e.Name(), Path: p, Origin: p + "/", From: ClusterFromFolder}})
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].Name < roots[j].Name })
	return roots
}

// instanceSync is the sync Kustomization the Flux Operator makes of a
// FluxInstance's spec.sync, or nil for any other object.
func instanceSync(o FluxObject) *FluxObject {
	gvk := o.Object.GroupVersionKind()
	if gvk.Group != OperatorGroup || gvk.Kind != "FluxInstance" {
		return nil
	}
	sync, _, _ := unstructured.NestedMap(o.Object.Object, "spec", "sync")
	return syncKustomization(namespaceOr(o.Object.GetNamespace()), sync, o.File, o.Line)
}

// syncKustomization is the sync Kustomization the Flux Operator makes of
// a FluxInstance's spec.sync in namespace ns: named sync.name, or the
// namespace, over a source of sync.kind (GitRepository) of that name; nil
// when sync has no path.
func syncKustomization(ns string, sync map[string]any, file string, line int) *FluxObject {
	field := func(f string) string {
		v, _ := sync[f].(string)
		return v
	}
	if field("path") == "" {
		return nil
	}
	name := field("name")
	if name == "" {
		name = ns
	}
	kind := field("kind")
	if kind == "" {
		kind = "GitRepository"
	}
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KustomizeGroup + "/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"path":      "./" + strings.TrimPrefix(path.Clean(strings.TrimPrefix(field("path"), "./")), "/"),
			"prune":     true,
			"sourceRef": map[string]any{"kind": kind, "name": name},
		},
	}}
	return &FluxObject{Object: ks, File: file, Line: line}
}

func clusterOfFile(file string, roots []clusterRoot) string {
	for _, r := range roots {
		if strings.HasPrefix(file, r.Path+"/") {
			return r.Name
		}
	}
	return ""
}

func isSyncOf(o FluxObject, roots []clusterRoot) bool {
	for _, r := range roots {
		if r.sync != nil && r.sync.File == o.File && r.sync.Line == o.Line {
			return true
		}
	}
	return false
}

// selfSources names the GitRepository objects that stand for this
// repository: those the sync Kustomizations use, flux-system, and the only
// GitRepository when there is just one.
func selfSources(objs []FluxObject, roots []clusterRoot) map[string]bool {
	self := map[string]bool{"flux-system": true}
	for _, r := range roots {
		if r.sync != nil {
			if n, ok, _ := unstructured.NestedString(r.sync.Object.Object, "spec", "sourceRef", "name"); ok {
				self[n] = true
			}
		}
	}
	names := map[string]bool{}
	for _, o := range objs {
		if gvk := o.Object.GroupVersionKind(); gvk.Group == SourceGroup && gvk.Kind == "GitRepository" {
			names[o.Object.GetName()] = true
		}
	}
	if len(names) == 1 {
		for n := range names {
			self[n] = true
		}
	}
	return self
}

// resolveSource sets the directory a target renders from (and the
// revision, when that is another ref of this repository), or returns why
// it cannot be rendered.
func (r *Repo) resolveSource(ctx context.Context, t *Target, self map[string]bool) string {
	kind, ns, name := sourceRef(t.Kustomization, t.Namespace)
	if kind == "ExternalArtifact" && name != "" {
		return r.resolveArtifact(ctx, t, ns, name, self)
	}
	dir, rev, reason := r.sourceDir(ctx, t.Cluster, kind, ns, name, self)
	t.Root, t.Revision = dir, rev
	return reason
}

// sourceRef is a Kustomization's spec.sourceRef: kind (GitRepository when
// unset), namespace (ns when unset) and name ("" when there is none).
func sourceRef(ks *unstructured.Unstructured, ns string) (kind, namespace, name string) {
	ref, _, _ := unstructured.NestedStringMap(ks.Object, "spec", "sourceRef")
	kind, namespace, name = ref["kind"], ref["namespace"], ref["name"]
	if kind == "" {
		kind = "GitRepository"
	}
	if namespace == "" {
		namespace = ns
	}
	return kind, namespace, name
}

// sourceDir is the folder that holds the content of the source kind
// ns/name of cluster: this repository (no source, or a GitRepository
// that stands for it), the folder ferry.yaml sources: maps it to, or, for
// a GitRepository of this repository's URL at another ref, an export of
// that ref (see otherRef), which it returns the revision of. Otherwise it
// returns why there is none, with the line to add to ferry.yaml or the
// ref to fetch.
func (r *Repo) sourceDir(ctx context.Context, cluster, kind, ns, name string, self map[string]bool) (string, *SourceRevision, string) {
	if name == "" || kind == "GitRepository" && self[name] {
		return r.Root, nil, ""
	}
	id := kind + "/" + ns + "/" + name
	if r.File != nil {
		key, p, ok := kind+"/"+name, "", false
		if p, ok = r.File.Sources[key]; !ok && kind == "GitRepository" {
			key = name
			p, ok = r.File.Sources[key]
		}
		if ok {
			dir, err := r.mapSource(key, p)
			if err != nil {
				return "", nil, fmt.Sprintf("source %s: %v", id, err)
			}
			return dir, nil, ""
		}
	}
	if kind == "GitRepository" {
		if dir, rev, reason, ok := r.otherRef(ctx, cluster, ns, name); ok {
			return dir, rev, reason
		}
	}
	switch kind {
	case "GitRepository":
		return "", nil, fmt.Sprintf("source %s is another repository: check it out beside this one and add it to ferry.yaml: sources: {%s: ../<checkout>}", id, name)
	case "OCIRepository", "Bucket":
		return "", nil, fmt.Sprintf("source %s is an artifact ferry does not fetch: if CI builds it from a folder of this repository, add it to ferry.yaml: sources: {%s/%s: ./<folder>}", id, kind, name)
	}
	return "", nil, "source " + id + ": source kind " + kind + " is not supported yet"
}

// namespaceOr is ns, or DefaultNamespace when ns is empty.
func namespaceOr(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

func dependsOn(ks *unstructured.Unstructured) []Dependency {
	list, _, _ := unstructured.NestedSlice(ks.Object, "spec", "dependsOn")
	var out []Dependency
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			n, _ := m["name"].(string)
			ns, _ := m["namespace"].(string)
			out = append(out, Dependency{Name: n, Namespace: ns})
		}
	}
	return out
}

func syntheticKustomization(name, p string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KustomizeGroup + "/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": DefaultNamespace},
		"spec":       map[string]any{"path": "./" + p},
	}}
}

// nameTargets gives each target its bare name when that is unique, and
// <cluster>/<name> otherwise; names that still collide (same cluster,
// another namespace) take the full [<cluster>/]<namespace>/<name>. A
// shorter name may equal another's full one by chance, hence the last pass.
func (r *Repo) nameTargets() {
	renameCollisions(r.Targets, func(t *Target) string {
		if t.Cluster == "" {
			return t.Name
		}
		return t.Cluster + "/" + t.Name
	})
	renameCollisions(r.Targets, fullName)
	renameCollisions(r.Targets, fullName)
}

// renameCollisions renames, with name, every target whose name another
// target shares.
func renameCollisions(targets []*Target, name func(*Target) string) {
	count := map[string]int{}
	for _, t := range targets {
		count[t.Name]++
	}
	for _, t := range targets {
		if count[t.Name] > 1 {
			t.Name = name(t)
		}
	}
}

// fullName is [<cluster>/]<namespace>/<name>, unique in a repository.
func fullName(t *Target) string {
	n := t.Namespace + "/" + t.Kustomization.GetName()
	if t.Cluster != "" {
		n = t.Cluster + "/" + n
	}
	return n
}

func toMap(v any, out *map[string]any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
