package diff

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/confine"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/risk"
	"github.com/ferry-ci/ferry/internal/scratch"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// Options says what to compare.
type Options struct {
	// Repo is the repository folder (the root of ferry.yaml or of the Flux
	// objects); it may be a folder inside a larger Git work tree.
	Repo string
	// Base and Head are revisions; Head defaults to HEAD.
	Base, Head string
	// Render carries the decryptor. Without identities, encrypted Secrets
	// are compared by their SOPS metadata only.
	Render render.Options
	// FetchToken, when set, lets a shallow clone fetch a missing base.
	FetchToken string
	// Targets limits the comparison to these names (all when empty).
	Targets []string
	// AllTargets confirms every target, not only those whose files or
	// definition a change may reach, and renders in full each one the
	// analysis finds unaffected: a target whose renders still differ is
	// affected ("rendered output differs"). The plan is the same as
	// without it, only slower: it is the check of the changed-only
	// analysis (diff --all-targets).
	AllTargets bool
	// Live, when set, compares a target's head render with its cluster
	// (diff --live); it is called for every affected target that renders.
	Live func(ctx context.Context, t *config.Target, objs []*unstructured.Unstructured) ([]Object, error)
	// OnRevisions, when set, is called with both revisions' repositories
	// and the finished report, before their checkouts are removed: what
	// they render can still be read (the base's Flux Alerts and
	// Providers, which decide where notifications go; the head's targets,
	// which the events are about).
	OnRevisions func(ctx context.Context, base, head *config.Repo, r *Report)
	// ReadCluster, when set (diff --live), reads the substituteFrom
	// sources that no render holds from the target's cluster (see
	// config.Repo.ReadFromClusters). The head reads only what the base
	// reads: a pull request cannot choose a cluster object to read.
	ReadCluster config.ClusterReader
	// Mask hides decrypted values wherever the report quotes objects or
	// errors. Nil: a masker of Render's decryptor.
	Mask *secrets.Masker
	// ShowAllMetadata shows in full the objects whose only changes are
	// chart metadata, instead of folding them (SetsOptions).
	ShowAllMetadata bool
	// Cluster, when set (diff --live), reads what the risks need of a
	// target's cluster: its version, the objects Pod templates need, the
	// objects of a CRD that would be pruned.
	Cluster func(ctx context.Context, t *config.Target) (*kube.Client, error)
	// AcceptRisks are risk IDs the pull request accepts (its
	// `# ferry: accept-risk` lines).
	AcceptRisks []string
	// NoRisks leaves the risks out (diff --risks=false).
	NoRisks bool
	// Images, when set, says whether the images Pod templates start to
	// run exist in their registries (images.Checker: only registries the
	// run has credentials for).
	Images ImageChecker
	// HeadFiles, when set, makes the head the base revision with these
	// files (by path relative to Repo, slash-separated) holding this
	// content instead: the change ferry bump proposes, before it is
	// committed. Head is not read, and the report names the head
	// "proposed".
	HeadFiles map[string][]byte
}

// Plan is the result of the affected-target analysis.
type Plan struct {
	Base, Head string
	// Changed lists the changed files under the repository folder.
	Changed []string
	// Affected lists the targets a change reaches, in dependency order of
	// the head revision (targets only at base come last).
	Affected []Affected
	// Unaffected counts the other targets.
	Unaffected int
	// Broken lists the targets among those a change could reach that
	// fail to render at both revisions, alike, though no file of theirs
	// changed: they are not affected, and do not fail the diff.
	Broken []Broken
	// Notes say what the head changed of ferry's reach and was not given
	// ("ferry.yaml changes sources: the diff uses the base's").
	Notes []string

	base, head *config.Repo
}

// Affected is one target a change reaches, and why.
type Affected struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	Why     string `json:"why"`

	base, head *config.Target
}

// Broken is a target that fails to render before and after a change
// that does not affect it.
type Broken struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	// Error is the head's error.
	Error string `json:"error"`
}

// Removed reports a target the head no longer has.
func (a Affected) Removed() bool { return a.head == nil && a.base != nil }

// revisions is the two sides exported from the object database, removed
// by cleanup.
type revisions struct {
	dir        string
	base, head string // commit hashes
	changed    []string
}

func (r *revisions) cleanup() { os.RemoveAll(r.dir) }

// open resolves the revisions, lists the changed files under the
// repository folder and exports both trees into a private temporary
// folder (the work tree is not touched).
func open(ctx context.Context, opts Options) (*revisions, string, string, error) {
	g, err := gitrepo.Open(opts.Repo)
	if err != nil {
		return nil, "", "", err
	}
	top, err := g.Root()
	if err != nil {
		return nil, "", "", err
	}
	abs, err := filepath.Abs(opts.Repo)
	if err != nil {
		return nil, "", "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if r, err := filepath.EvalSymlinks(top); err == nil {
		top = r
	}
	prefix, err := filepath.Rel(top, abs)
	if err != nil || strings.HasPrefix(prefix, "..") {
		return nil, "", "", fmt.Errorf("repository %s is outside its Git work tree %s", opts.Repo, top)
	}
	prefix = filepath.ToSlash(prefix)
	if prefix == "." {
		prefix = ""
	}
	resolve := func(side, rev string) (string, error) {
		h, err := g.Resolve(rev)
		var missing *gitrepo.MissingCommitError
		if errors.As(err, &missing) && opts.FetchToken != "" {
			if ferr := g.Fetch(ctx, rev, opts.FetchToken); ferr != nil {
				return "", fmt.Errorf("%s revision: %w (and fetching it failed: %v)", side, err, ferr)
			}
			h, err = g.Resolve(rev)
		}
		if err != nil {
			return "", fmt.Errorf("%s revision: %w", side, err)
		}
		return h, nil
	}
	head := opts.Head
	if head == "" || opts.HeadFiles != nil {
		head = "HEAD"
	}
	bh, err := resolve("base", opts.Base)
	if err != nil {
		return nil, "", "", err
	}
	hh, err := resolve("head", head)
	if err != nil {
		return nil, "", "", err
	}
	var all []string
	if opts.HeadFiles != nil {
		hh = bh
		all = overlayChanged(opts.HeadFiles, prefix)
	} else if all, err = g.Changed(bh, hh); err != nil {
		return nil, "", "", err
	}
	rv := &revisions{base: bh, head: hh}
	if opts.HeadFiles != nil {
		rv.head = "proposed"
	}
	for _, p := range all {
		switch {
		case prefix == "":
			rv.changed = append(rv.changed, p)
		case strings.HasPrefix(p, prefix+"/"):
			rv.changed = append(rv.changed, strings.TrimPrefix(p, prefix+"/"))
		}
	}
	if len(rv.changed) == 0 {
		return rv, "", "", nil
	}
	// Both trees are exported at once, the head through a handle of its
	// own (a go-git Repository is not for concurrent use), in memory
	// when the machine has room (package scratch).
	rv.dir, err = scratch.Fill("ferry-diff-", func(dir string) error {
		bdir, hdir := filepath.Join(dir, "base"), filepath.Join(dir, "head")
		var herr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			g2, err := gitrepo.Open(opts.Repo)
			if err == nil {
				err = g2.Export(ctx, hh, prefix, hdir)
			}
			if err == nil {
				err = writeOverlay(hdir, opts.HeadFiles)
			}
			if err != nil {
				herr = fmt.Errorf("head revision: %w", err)
			}
		}()
		berr := g.Export(ctx, bh, prefix, bdir)
		<-done
		if berr != nil {
			return fmt.Errorf("base revision: %w", berr)
		}
		return herr
	})
	if err != nil {
		return nil, "", "", err
	}
	return rv, filepath.Join(rv.dir, "base"), filepath.Join(rv.dir, "head"), nil
}

// overlayChanged are the paths of files, relative to the Git work
// tree's top (prefix is the repository folder's path in it), sorted.
func overlayChanged(files map[string][]byte, prefix string) []string {
	var out []string
	for p := range files {
		if prefix != "" {
			p = prefix + "/" + p
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// writeOverlay writes files into the exported tree dir, each in a
// folder the export holds (confined to it).
func writeOverlay(dir string, files map[string][]byte) error {
	if len(files) == 0 {
		return nil
	}
	root, err := confine.Open(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if err := root.WriteFile(p, files[p], 0o644); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// Targets finds the targets a change between two revisions affects: a
// target is affected when its definition changed or a file its render
// reads at either side changed. Candidates are found by walking the
// kustomization files (no render), then confirmed by the files their
// renders read, so unaffected targets are never rendered.
func Targets(ctx context.Context, opts Options) (*Plan, error) {
	p, cleanup, err := plan(ctx, opts)
	if cleanup != nil {
		cleanup()
	}
	return p, err
}

// considered returns whether a target is among names (all when names is
// empty): Options.Targets.
func considered(names []string) func(string) bool {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	return func(name string) bool { return len(want) == 0 || want[name] }
}

// Everything is the plan of a run with no base revision to compare with (a
// push that created the branch, a manual or scheduled run): every target
// of the repository folder as it is checked out (opts.Repo; Base and Head
// are not read), or of opts.Targets, in dependency order, each with why.
func Everything(ctx context.Context, opts Options, why string) (*Plan, error) {
	head, err := config.Load(ctx, opts.Repo, opts.Render)
	if err != nil {
		return nil, err
	}
	defer head.Close() // only names are read
	consider := considered(opts.Targets)
	p := &Plan{head: head}
	for _, t := range head.Targets {
		if !consider(t.Name) {
			p.Unaffected++
			continue
		}
		p.Affected = append(p.Affected, Affected{Name: t.Name, Cluster: t.Cluster, Why: why, head: t})
	}
	return p, nil
}

func plan(ctx context.Context, opts Options) (*Plan, func(), error) {
	rv, bdir, hdir, err := open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	p := &Plan{Base: rv.base, Head: rv.head, Changed: rv.changed}
	if len(rv.changed) == 0 {
		return p, nil, nil
	}
	// The repositories are closed (the exports of other refs their
	// targets render from removed) with the revisions' exports.
	cleanup := func() {
		p.base.Close()
		p.head.Close()
		rv.cleanup()
	}
	// Both revisions are exports; sources: paths stay relative to the
	// checkout. The head is data: its reach (sources:, clusters:, chart
	// sources, credentials) is the base's.
	ropts := opts.Render
	if ropts.Checkout, err = filepath.Abs(opts.Repo); err != nil {
		return nil, cleanup, err
	}
	// The head renders under the base's budgets: a pull request cannot
	// raise its own.
	var berr, herr error
	p.base, p.head, berr, herr = config.LoadRevisions(ctx, bdir, hdir, ropts)
	switch {
	case berr != nil:
		return nil, cleanup, fmt.Errorf("base revision %s: %w", shortHash(rv.base), berr)
	case herr != nil:
		return nil, cleanup, fmt.Errorf("head revision %s: %w", shortHash(rv.head), herr)
	}
	p.Notes = p.head.Notes
	if opts.ReadCluster != nil {
		p.base.ReadFromClusters(opts.ReadCluster)
		p.head.ReadFromClusters(p.base.ClusterReadsOnly(opts.ReadCluster))
	}
	consider := considered(opts.Targets)
	baseByName := map[string]*config.Target{}
	for _, t := range p.base.Targets {
		baseByName[t.Name] = t
	}
	seen := map[string]bool{}
	var alike []*alikeTarget
	for _, ht := range p.head.Targets {
		seen[ht.Name] = true
		if !consider(ht.Name) {
			continue
		}
		bt := baseByName[ht.Name]
		a := Affected{Name: ht.Name, Cluster: ht.Cluster, base: bt, head: ht}
		switch {
		case bt == nil:
			a.Why = "new target"
		case !sameDefinition(bt, ht):
			a.Why = "definition changed (" + ht.Origin + ")"
		case !reflect.DeepEqual(bt.Revision, ht.Revision):
			// Its GitRepository (this repository at another ref)
			// changed ref.
			a.Why = "source changed: " + revisionOf(bt) + " -> " + revisionOf(ht)
		default:
			alike = append(alike, &alikeTarget{bt: bt, ht: ht})
		}
		p.Affected = append(p.Affected, a)
	}
	var others []otherTarget
	for _, a := range p.Affected {
		if a.Why != "" { // new, defined otherwise, another ref
			others = append(others, otherTarget{bt: a.base, ht: a.head})
		}
	}
	for _, bt := range p.base.Targets {
		if !seen[bt.Name] && consider(bt.Name) {
			others = append(others, otherTarget{bt: bt})
		}
	}
	p.decide(ctx, alike, others, rv.changed, opts.AllTargets)
	byName := map[string]*alikeTarget{}
	for _, at := range alike {
		byName[at.ht.Name] = at
	}
	decided := p.Affected[:0]
	for _, a := range p.Affected {
		at := byName[a.Name]
		if at == nil {
			decided = append(decided, a)
			continue
		}
		if at.v.broken != "" {
			p.Broken = append(p.Broken, Broken{Name: a.Name, Cluster: a.Cluster, Error: at.v.broken})
		}
		if !at.v.affected {
			p.Unaffected++
			continue
		}
		a.Why = at.v.why
		decided = append(decided, a)
	}
	p.Affected = decided
	for _, bt := range p.base.Targets {
		if !seen[bt.Name] && consider(bt.Name) {
			p.Affected = append(p.Affected, Affected{Name: bt.Name, Cluster: bt.Cluster, Why: "target removed", base: bt})
		}
	}
	return p, cleanup, nil
}

// Revisions renders the affected targets at both revisions and compares
// them object by object. A target that fails to render on one side is
// reported with its error; the others are still compared. No decrypted
// value is in the report, in any form: objects are masked before their
// diffs are written, and every string of the report is masked at the end.
func Revisions(ctx context.Context, opts Options) (*Report, error) {
	mask := opts.Mask
	if mask == nil && opts.Render.Decryptor != nil {
		mask = secrets.NewMasker()
		mask.Watch(opts.Render.Decryptor)
	}
	p, cleanup, err := plan(ctx, opts)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return nil, err
	}
	r := &Report{Base: p.Base, Head: p.Head, Unaffected: p.Unaffected, Broken: p.Broken, Targets: []Target{}, Warnings: slices.Clone(p.Notes)}
	var pending []*targetRisks
	for _, a := range p.Affected {
		t := Target{Name: a.Name, Cluster: a.Cluster, Why: a.Why}
		var base, head *render.Result
		var berr, herr error
		sideBySide(func() {
			if a.base != nil {
				base, berr = p.base.Render(ctx, a.base)
			}
		}, func() {
			if a.head != nil {
				head, herr = p.head.Render(ctx, a.head)
			}
		})
		if a.base != nil {
			if berr != nil {
				t.Error, t.Side = berr.Error(), "base"
			}
			t.Prune = a.base.Prune
		}
		if a.head != nil {
			if herr != nil && t.Error == "" {
				t.Error, t.Side = herr.Error(), "head"
			} else if herr != nil {
				t.Side = "both"
			}
			t.Prune = a.head.Prune
		}
		if t.Error == "" {
			var bo, ho = objects(base), objects(head)
			// A release one side could not render (a chart source the
			// base does not trust) has no objects there: its objects on
			// the other side are not compared, rather than shown as
			// added, or removed and pruned.
			var unrendered []manifest.ID
			bo, ho, unrendered = leaveOutUnrendered(base, head, bo, ho)
			t.Objects = Sets(bo, ho, SetsOptions{Prune: t.Prune && a.head != nil, Mask: mask, ShowAllMetadata: opts.ShowAllMetadata})
			t.Counts = count(t.Objects)
			t.Folded = FoldedOf(t.Objects)
			t.Releases = Releases(releases(base), releases(head))
			t.NotCompared = omitted(base, head)
			t.RenderedWithout, t.Unresolved = without(base, head)
			t.Unrendered = unrendered
			if opts.Render.NoDecrypt {
				t.Encrypted = encryptedChanges(p.base.Root, p.head.Root, base, head, p.Changed)
			}
			for _, o := range t.Objects {
				for _, w := range o.Warnings {
					r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %s %s", t.Name, o.ID, w))
				}
			}
			at, kubeVersion := a.head, ""
			if a.base != nil {
				at, kubeVersion = a.base, a.base.KubeVersion // the cluster's version is the base's to say
			}
			pending = append(pending, newTargetRisks(len(r.Targets), at, t.Name, bo, ho, t.Prune && a.head != nil, t.Releases, kubeVersion))
		}
		if opts.Live != nil && a.head != nil && head != nil {
			live, err := opts.Live(ctx, a.head, head.Set.Objects)
			if err != nil {
				t.LiveError = err.Error()
			} else {
				c := count(live)
				t.Live, t.LiveCounts = live, &c
				if n := len(pending); n > 0 && pending[n-1].index == len(r.Targets) {
					pending[n-1].live, pending[n-1].liveRan = live, true
				}
				for _, o := range live {
					for _, w := range o.Warnings {
						r.Warnings = append(r.Warnings, fmt.Sprintf("%s (live): %s %s", t.Name, o.ID, w))
					}
				}
			}
		}
		r.Targets = append(r.Targets, t)
	}
	if !opts.NoRisks {
		var connect func(context.Context, *config.Target) (RiskCluster, error)
		if opts.Cluster != nil {
			connect = func(ctx context.Context, t *config.Target) (RiskCluster, error) {
				c, err := opts.Cluster(ctx, t)
				if err != nil {
					return nil, err // not a nil *kube.Client in an interface
				}
				return c, nil
			}
		}
		r.Risks = findRisks(ctx, pending, p.head, connect, opts.Images, mask)
		risk.Accept(r.Risks, opts.AcceptRisks, nil)
		r.markRisks()
	}
	mask.Redact(r)
	if opts.OnRevisions != nil {
		opts.OnRevisions(ctx, p.base, p.head, r)
	}
	return r, nil
}

// leaveOutUnrendered drops from each side the objects of a release the
// other side holds but did not render, and returns their identities.
func leaveOutUnrendered(base, head *render.Result, bo, ho []*unstructured.Unstructured) ([]*unstructured.Unstructured, []*unstructured.Unstructured, []manifest.ID) {
	drop := map[manifest.ID]bool{}
	mark := func(from, other *render.Result) {
		skipped := map[string]bool{}
		for _, r := range releases(other) {
			if r.Skipped != "" {
				skipped[r.ID] = true
			}
		}
		for _, r := range releases(from) {
			if r.Skipped == "" && skipped[r.ID] {
				for _, id := range r.Objects {
					drop[id] = true
				}
			}
		}
	}
	mark(base, head)
	mark(head, base)
	if len(drop) == 0 {
		return bo, ho, nil
	}
	keep := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		return slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool { return drop[manifest.IDOf(o)] })
	}
	ids := slices.SortedFunc(maps.Keys(drop), func(a, b manifest.ID) int { return strings.Compare(a.String(), b.String()) })
	return keep(bo), keep(ho), ids
}

func objects(res *render.Result) []*unstructured.Unstructured {
	if res == nil {
		return nil
	}
	return res.Set.Objects
}

func releases(res *render.Result) []render.Release {
	if res == nil {
		return nil
	}
	return res.Releases
}

func omitted(results ...*render.Result) []manifest.ID {
	seen := map[manifest.ID]bool{}
	var out []manifest.ID
	for _, res := range results {
		if res == nil {
			continue
		}
		for _, id := range res.Omitted {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// without is what either revision's render went without (render.Result's
// Without and Unresolved), each once, sorted.
func without(results ...*render.Result) (objs, vars []string) {
	for _, res := range results {
		if res != nil {
			objs = append(objs, res.Without...)
			vars = append(vars, res.Unresolved...)
		}
	}
	slices.Sort(objs)
	slices.Sort(vars)
	return slices.Compact(objs), slices.Compact(vars)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// equalObjects reports whether two objects are the same.
func equalObjects(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(a.Object, b.Object)
}
