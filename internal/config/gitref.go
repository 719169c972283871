package config

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/scratch"
)

// A GitRepository whose spec.url is this repository's, but whose
// spec.ref names another branch, tag, semver range or commit than the
// one checked out (a tenant of a multi-tenancy fleet on its own branch),
// is rendered from that ref as the clone holds it: its commit is
// exported from the local Git objects into a folder the Repo owns until
// Close. Nothing is fetched: a ref the clone lacks skips the target,
// saying what to fetch.

// SourceRevision is the commit of this repository a target renders
// from when its GitRepository is this repository at another ref than
// the checked-out one.
type SourceRevision struct {
	// Source is the GitRepository: GitRepository/<namespace>/<name>.
	Source string `json:"source"`
	// Ref is its spec.ref as Flux acts on it: "branch dev-team", "tag
	// v1.2.0", "semver >=1.0.0 <2.0.0", "commit <hash>" or "name
	// refs/...".
	Ref string `json:"ref"`
	// Name is the reference of the clone that was read
	// (refs/remotes/origin/dev-team, refs/tags/v1.2.0); "" for a commit.
	Name string `json:"name,omitempty"`
	// Commit is the commit rendered.
	Commit string `json:"commit"`
}

// gitRef is the field of a GitRepository's spec.ref that Flux acts on,
// by its precedence: commit, name, semver, tag, branch. The zero gitRef
// is no ref.
type gitRef struct{ kind, value string }

func refOf(repo *unstructured.Unstructured) gitRef {
	ref, _, _ := unstructured.NestedStringMap(repo.Object, "spec", "ref")
	return refOfMap(ref)
}

func refOfMap(ref map[string]string) gitRef {
	for _, k := range []string{"commit", "name", "semver", "tag", "branch"} {
		if v := strings.TrimSpace(ref[k]); v != "" {
			return gitRef{k, v}
		}
	}
	return gitRef{}
}

func (g gitRef) String() string { return g.kind + " " + g.value }

// key is the same for the same ref written two ways (branch main, name
// refs/heads/main).
func (g gitRef) key() string {
	switch g.kind {
	case "branch":
		return "refs/heads/" + g.value
	case "tag":
		return "refs/tags/" + g.value
	case "name":
		return g.value
	case "commit":
		return "commit " + strings.ToLower(g.value)
	}
	return g.String()
}

// normalURL reduces a Git URL to what names the repository, so that the
// forms a fleet writes for one repository compare equal:
// https://GitHub.com/acme/fleet.git, ssh://git@github.com:22/acme/fleet
// and git@github.com:acme/fleet are github.com/acme/fleet. The host is
// lower-cased, user and port are dropped, and so are a trailing slash and
// .git; a local path is cleaned. "" for no URL.
func normalURL(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	var host, p string
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		if u.Scheme == "file" {
			return path.Clean(u.Path)
		}
		host, p = u.Hostname(), u.Path
	} else if before, after, ok := strings.Cut(s, ":"); ok && !strings.Contains(before, "/") {
		// scp-like: [user@]host:path
		host, p = before, after
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
	} else {
		return path.Clean(filepath.ToSlash(s))
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	return strings.ToLower(host) + "/" + strings.Trim(p, "/")
}

// gitRepositories holds the GitRepository objects discovery saw, by
// cluster and namespace/name: those a cluster's renders hold (as
// patched), and those of the file scan by the cluster folder their file
// is in ("" outside every cluster folder).
type gitRepositories struct {
	rendered map[string]*unstructured.Unstructured
	scanned  map[string]*unstructured.Unstructured
}

func gitRepoKey(cluster, ns, name string) string { return cluster + "\x00" + ns + "/" + name }

func isGitRepository(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == SourceGroup && gvk.Kind == "GitRepository"
}

// indexGitRepositories indexes the GitRepositories of the file scan, in
// the namespace the kustomization including the file gives them.
func indexGitRepositories(objs []FluxObject, inc *includes, roots []clusterRoot) *gitRepositories {
	g := &gitRepositories{rendered: map[string]*unstructured.Unstructured{}, scanned: map[string]*unstructured.Unstructured{}}
	for _, o := range objs {
		if !isGitRepository(o.Object) {
			continue
		}
		ns := o.Object.GetNamespace()
		if n := inc.namespaceOf(o.File); n != "" {
			ns = n
		}
		k := gitRepoKey(clusterOfFile(o.File, roots), namespaceOr(ns), o.Object.GetName())
		if _, dup := g.scanned[k]; !dup {
			g.scanned[k] = o.Object
		}
	}
	return g
}

// addRendered indexes the GitRepositories of a render of cluster.
func (g *gitRepositories) addRendered(cluster string, objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if isGitRepository(o) {
			k := gitRepoKey(cluster, namespaceOr(o.GetNamespace()), o.GetName())
			if _, dup := g.rendered[k]; !dup {
				g.rendered[k] = o
			}
		}
	}
}

// find is the GitRepository ns/name of cluster: as a render of the
// cluster holds it, else from a file of its folder, else from a file
// outside every cluster folder; nil when discovery saw none.
func (g *gitRepositories) find(cluster, ns, name string) *unstructured.Unstructured {
	if g == nil {
		return nil
	}
	if o := g.rendered[gitRepoKey(cluster, ns, name)]; o != nil {
		return o
	}
	if o := g.scanned[gitRepoKey(cluster, ns, name)]; o != nil {
		return o
	}
	return g.scanned[gitRepoKey("", ns, name)]
}

// selfGit is what a Repo knows of the clone it is in, read once.
type selfGit struct {
	g      *gitrepo.Repo
	err    error  // why there is no clone to read
	folder string // the repository's folder in the clone (Export's prefix)
	// head and branch are the checked-out commit and branch, when the
	// Repo renders the work tree itself (not an export of a revision).
	head, branch string
}

// git opens the clone holding the checkout, once.
func (r *Repo) git() *selfGit {
	if r.clone != nil {
		return r.clone
	}
	s := &selfGit{}
	r.clone = s
	if s.g, s.err = gitrepo.Open(r.checkout); s.err != nil {
		return s
	}
	if s.folder, s.err = s.g.Folder(r.checkout); s.err != nil {
		return s
	}
	if r.opts.Checkout == "" {
		s.head, _ = s.g.Head()
		s.branch = s.g.HeadBranch()
	}
	return s
}

// selfURLs are the normalized URLs of this repository: those of the
// GitRepositories that stand for it (selfSources, and a FluxInstance's
// sync URL), of a proposed revision those of the trusted one, and those
// of the clone's origin remote.
func (r *Repo) selfURLs() map[string]bool {
	if r.urls != nil {
		return r.urls
	}
	r.urls = map[string]bool{}
	if r.trusted != nil {
		done := r.trustedTurn()
		trusted := r.trusted.selfURLs()
		done()
		for u := range trusted {
			r.urls[u] = true
		}
	} else {
		for _, u := range r.syncURLs {
			r.urls[normalURL(u)] = true
		}
	}
	if s := r.git(); s.g != nil {
		for _, u := range s.g.RemoteURLs("origin") {
			r.urls[normalURL(u)] = true
		}
	}
	delete(r.urls, "")
	return r.urls
}

// otherRef decides whether the GitRepository ns/name of cluster is this
// repository (its URL is one of selfURLs) and, when it is, where it
// renders from: the checkout when its ref is the one checked out (no
// ref; the ref of a GitRepository that stands for the checkout, the
// branch HEAD is on, or HEAD's commit), else an export of the commit its
// ref names in the clone, with that revision. A ref the clone lacks is a
// reason, saying what to fetch. ok is false for any other GitRepository.
func (r *Repo) otherRef(ctx context.Context, cluster, ns, name string) (dir string, rev *SourceRevision, reason string, ok bool) {
	obj := r.gitRepos.find(cluster, ns, name)
	if obj == nil {
		return "", nil, "", false
	}
	u, _, _ := unstructured.NestedString(obj.Object, "spec", "url")
	if nu := normalURL(u); nu == "" || !r.selfURLs()[nu] {
		return "", nil, "", false
	}
	id := "GitRepository/" + ns + "/" + name
	ref := refOf(obj)
	if ref == (gitRef{}) || r.syncRefs[ref.key()] {
		return r.Root, nil, "", true
	}
	s := r.git()
	if s.g == nil {
		return "", nil, fmt.Sprintf("source %s is this repository at %s, which ferry reads from the clone's Git objects: %v", id, ref, s.err), true
	}
	if ref.kind == "branch" && ref.value == s.branch {
		return r.Root, nil, "", true
	}
	commit, refName, err := resolveRef(s.g, ref)
	if err != nil {
		return "", nil, fmt.Sprintf("source %s: spec.ref.%s: %v", id, ref.kind, err), true
	}
	if commit == "" {
		return "", nil, fmt.Sprintf("source %s is this repository at %s, which this clone lacks: fetch it before ferry runs (%s), or check out with actions/checkout fetch-depth: 0", id, ref, fetchLine(ref)), true
	}
	if commit == s.head {
		return r.Root, nil, "", true
	}
	dir, err = r.exportCommit(ctx, s, commit)
	if err != nil {
		return "", nil, fmt.Sprintf("source %s at %s: %v", id, ref, err), true
	}
	return dir, &SourceRevision{Source: id, Ref: ref.String(), Name: refName, Commit: commit}, "", true
}

// resolveRef finds the commit ref names in the clone, reading only
// local references: a branch as the origin remote had it at the last
// fetch (refs/remotes/origin/<branch>), else the local branch; a tag; the
// highest tag in a semver range (of equal versions, the latest commit,
// as Flux's source-controller picks); a commit; a full reference name.
// It returns "" when the clone has none, and an error for a semver range
// that does not parse.
func resolveRef(g *gitrepo.Repo, ref gitRef) (commit, name string, err error) {
	first := func(names ...string) (string, string, error) {
		for _, n := range names {
			if c, ok := g.Commit(n); ok {
				return c, n, nil
			}
		}
		return "", "", nil
	}
	switch ref.kind {
	case "branch":
		return first("refs/remotes/origin/"+ref.value, "refs/heads/"+ref.value)
	case "tag":
		return first("refs/tags/" + ref.value)
	case "name":
		if b, ok := strings.CutPrefix(ref.value, "refs/heads/"); ok {
			return first("refs/remotes/origin/"+b, ref.value)
		}
		return first(ref.value)
	case "commit":
		if g.HasCommit(strings.ToLower(ref.value)) {
			return strings.ToLower(ref.value), "", nil
		}
		return "", "", nil
	case "semver":
		c, err := semver.NewConstraint(ref.value)
		if err != nil {
			return "", "", fmt.Errorf("semver range %q: %w", ref.value, err)
		}
		tags, err := g.Tags()
		if err != nil {
			return "", "", err
		}
		var best *gitrepo.Tag
		var bestV *semver.Version
		for i := range tags {
			v, err := semver.NewVersion(tags[i].Name)
			if err != nil || !c.Check(v) {
				continue
			}
			if best == nil || v.GreaterThan(bestV) || v.Equal(bestV) && tags[i].When.After(best.When) {
				best, bestV = &tags[i], v
			}
		}
		if best == nil {
			return "", "", nil
		}
		return best.Commit, "refs/tags/" + best.Name, nil
	}
	return "", "", nil
}

// fetchLine is the git command that brings ref into the clone.
func fetchLine(ref gitRef) string {
	switch ref.kind {
	case "branch":
		return "git fetch origin " + ref.value + ":refs/remotes/origin/" + ref.value
	case "tag":
		return "git fetch origin tag " + ref.value
	case "semver":
		return "git fetch origin --tags"
	case "commit":
		return "git fetch origin " + ref.value
	}
	if b, ok := strings.CutPrefix(ref.value, "refs/heads/"); ok {
		return "git fetch origin " + ref.value + ":refs/remotes/origin/" + b
	}
	return "git fetch origin " + ref.value + ":" + ref.value
}

// exportCommit writes the repository's folder of commit into a folder
// of the Repo's own (each commit once, in memory when it can: package
// scratch), removed by Close.
func (r *Repo) exportCommit(ctx context.Context, s *selfGit, commit string) (string, error) {
	if dir, ok := r.exports[commit]; ok {
		return dir, nil
	}
	dir, err := scratch.Fill("ferry-ref-", func(dir string) error {
		return s.g.Export(ctx, commit, s.folder, dir)
	})
	if err != nil {
		return "", err
	}
	if r.exports == nil {
		r.exports = map[string]string{}
	}
	r.exports[commit] = dir
	return dir, nil
}

// Close removes what the Repo wrote: the exports of other refs of the
// repository its targets render from. Their renders fail afterwards;
// what was rendered stays readable.
func (r *Repo) Close() error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, dir := range r.exports {
		errs = append(errs, os.RemoveAll(dir))
	}
	r.exports = nil
	return errors.Join(errs...)
}

// syncSourceRefs are the URLs and the refs of the GitRepositories that
// stand for the checkout (self, by name) and of the FluxInstances'
// syncs: a GitRepository of this repository at one of those refs is the
// checkout as well.
func syncSourceRefs(objs []FluxObject, self map[string]bool) (urls []string, refs map[string]bool) {
	refs = map[string]bool{}
	for _, o := range objs {
		switch gvk := o.Object.GroupVersionKind(); {
		case isGitRepository(o.Object) && self[o.Object.GetName()]:
			u, _, _ := unstructured.NestedString(o.Object.Object, "spec", "url")
			urls = append(urls, u)
			if ref := refOf(o.Object); ref != (gitRef{}) {
				refs[ref.key()] = true
			}
		case gvk.Group == OperatorGroup && gvk.Kind == "FluxInstance":
			sync, _, _ := unstructured.NestedStringMap(o.Object.Object, "spec", "sync")
			if k := sync["kind"]; k != "" && k != "GitRepository" {
				continue
			}
			urls = append(urls, sync["url"])
			if sync["ref"] != "" {
				refs[gitRef{"name", sync["ref"]}.key()] = true
			}
		}
	}
	return urls, refs
}
