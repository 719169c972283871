package diff

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/render"
)

// alikeTarget is a target defined alike at both revisions, and what the
// plan found of it.
type alikeTarget struct {
	bt, ht *config.Target
	// reach: the change may reach it by its files, or it reads objects
	// of its cluster (render.Watch.Touches of config.Repo.Inputs).
	reach bool
	// candidate: it is confirmed (see decide); confirmed: v is known.
	candidate, confirmed bool
	v                    verdict
}

// otherTarget is a target affected for its definition (new, removed,
// defined otherwise, another ref): its builds are not compared, but the
// objects they hold may be read by others.
type otherTarget struct {
	bt, ht *config.Target
}

// decide finds which of the targets defined alike at both revisions a
// change affects, rendering as few as it can (changed-only):
//
//   - A target is a candidate when the change touches its own files
//     (config.Repo.OwnInputs), or when it failed discovery. A target
//     that renders an artifact or another ref of the repository is one
//     when the change may reach it at all (config.Repo.Inputs).
//   - Each candidate is confirmed from its footprints (confirm); the
//     objects its builds hold differently at the two revisions, those
//     its cluster's root renders differently, and those of the targets
//     affected for their definition (new, removed, defined otherwise)
//     are the objects of the cluster that changed.
//   - A target that reads one of those objects becomes a candidate: a
//     variable source (postBuild.substituteFrom), a ConfigMap or Secret
//     a HelmRelease of its build takes values from; every target with
//     HelmReleases does when a chart source, a HelmChart or a CRD
//     changed, and every target does when a ResourceSetInputProvider
//     did. This repeats until no candidate is added.
//   - The others are not affected: their builds and what their releases
//     take are the same at both revisions.
//
// A changed file that no target's own files and no cluster root's
// render name (a chart folder, a values file, a file only an
// ArtifactGenerator copies) makes every target the change may reach a
// candidate. With all (Options.AllTargets) every target is confirmed as
// well, and each found unaffected is rendered in full at both revisions
// to check it (renderedAlike); the candidates are found as without it,
// so the broken targets listed are the same.
func (p *Plan) decide(ctx context.Context, alike []*alikeTarget, others []otherTarget, changed []string, all bool) {
	for _, at := range alike {
		at.reach = p.head.Inputs(at.ht).Touches(changed) || p.base.Inputs(at.bt).Touches(changed)
	}
	if p.uncovered(changed) {
		for _, at := range alike {
			at.candidate = at.reach
		}
	} else {
		p.candidates(ctx, alike, others, changed)
	}
	for _, at := range alike {
		switch {
		case all:
			at.v = p.confirm(ctx, at.bt, at.ht, changed)
			if !at.v.affected {
				at.v = p.renderedAlike(ctx, at.bt, at.ht, at.v)
			}
		case at.candidate && !at.confirmed:
			at.v = p.confirm(ctx, at.bt, at.ht, changed)
		}
		if !at.candidate {
			at.v.broken = ""
		}
	}
}

// candidates marks the candidates of decide's fixed point, confirming
// each as it is found. The objects of the other affected targets' builds
// (a new target's, a removed one's) count as changed.
func (p *Plan) candidates(ctx context.Context, alike []*alikeTarget, others []otherTarget, changed []string) {
	moved := map[string]map[string]bool{} // by cluster: Kind/namespace/name of the objects that changed
	mark := func(cluster string, base, head []*unstructured.Unstructured) {
		if moved[cluster] == nil {
			moved[cluster] = map[string]bool{}
		}
		for _, id := range changedObjects(base, head) {
			moved[cluster][id] = true
		}
	}
	for _, at := range alike {
		if _, ok := moved[at.ht.Cluster]; !ok {
			bo, _ := p.base.RootRender(at.ht.Cluster)
			ho, _ := p.head.RootRender(at.ht.Cluster)
			mark(at.ht.Cluster, bo, ho)
		}
		switch {
		case at.ht.Err != nil || at.bt.Err != nil:
			at.candidate = true // its error is known without a render
		case at.ht.Artifact != nil || at.ht.Revision != nil:
			at.candidate = at.reach // what it reads is not all among its own files
		default:
			at.candidate = p.head.OwnInputs(at.ht).Touches(changed) || p.base.OwnInputs(at.bt).Touches(changed)
		}
	}
	for _, o := range others {
		var bo, ho []*unstructured.Unstructured
		cluster := ""
		if o.bt != nil {
			cluster = o.bt.Cluster
			if res, err := p.base.Build(ctx, o.bt); err == nil {
				bo = res.Set.Objects
			}
		}
		if o.ht != nil {
			cluster = o.ht.Cluster
			if res, err := p.head.Build(ctx, o.ht); err == nil {
				ho = res.Set.Objects
			}
		}
		mark(cluster, bo, ho)
	}
	for added := true; added; {
		added = false
		for _, at := range alike {
			if at.candidate && !at.confirmed {
				var bb, hb []*unstructured.Unstructured
				at.v, bb, hb = p.confirmBuilds(ctx, at.bt, at.ht, changed)
				at.confirmed = true
				mark(at.ht.Cluster, bb, hb)
			}
		}
		// The targets that are no candidate yet build alike at both
		// revisions (their own files did not change, nor the variables
		// they read, else they would be candidates): half of them are
		// checked at the base, half at the head, side by side.
		var rest []*alikeTarget
		for _, at := range alike {
			if !at.candidate {
				rest = append(rest, at)
			}
		}
		reads := make([]bool, len(rest))
		half := len(rest) / 2
		sideBySide(func() {
			for i, at := range rest[:half] {
				reads[i] = p.readsMoved(ctx, p.base, at.bt, moved[at.bt.Cluster])
			}
		}, func() {
			for i, at := range rest[half:] {
				reads[half+i] = p.readsMoved(ctx, p.head, at.ht, moved[at.ht.Cluster])
			}
		})
		for i, at := range rest {
			if reads[i] {
				at.candidate, added = true, true
			}
		}
	}
}

// uncovered reports whether a changed file is neither among the own
// files of a target of either revision nor read by a cluster root's
// render.
func (p *Plan) uncovered(changed []string) bool {
	watches := []render.Watch{}
	files := map[string]bool{}
	for _, r := range []*config.Repo{p.base, p.head} {
		for _, t := range r.Targets {
			watches = append(watches, r.OwnInputs(t))
		}
		for _, c := range r.Clusters {
			_, fs := r.RootRender(c.Name)
			for _, f := range fs {
				files[f] = true
			}
		}
	}
	for _, c := range changed {
		if files[c] || slices.ContainsFunc(watches, func(w render.Watch) bool { return w.Touches([]string{c}) }) {
			continue
		}
		return true
	}
	return false
}

// readsMoved reports whether target t of revision r (its build there,
// which is its build at the other revision too while it is no candidate)
// reads one of the objects of its cluster that moved.
func (p *Plan) readsMoved(ctx context.Context, r *config.Repo, t *config.Target, moved map[string]bool) bool {
	if len(moved) == 0 {
		return false
	}
	kinds := map[string]bool{}
	for id := range moved {
		kind, _, _ := strings.Cut(id, "/")
		kinds[kind] = true
	}
	if kinds["ResourceSetInputProvider"] {
		return true
	}
	from, _, _ := unstructured.NestedSlice(t.Kustomization.Object, "spec", "postBuild", "substituteFrom")
	for _, f := range from {
		m, _ := f.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		if moved[kind+"/"+t.Kustomization.GetNamespace()+"/"+name] {
			return true
		}
	}
	if !r.RendersReleases(t) {
		// No HelmRelease it renders: nothing else it reads.
		return false
	}
	for _, k := range []string{"HelmRepository", "OCIRepository", "GitRepository", "Bucket", "HelmChart", "ExternalArtifact", "CustomResourceDefinition"} {
		if kinds[k] {
			return true
		}
	}
	if !kinds["ConfigMap"] && !kinds["Secret"] {
		return false
	}
	build, err := r.Build(ctx, t)
	if err != nil {
		return true // confirm shows the error
	}
	for _, o := range build.Set.Objects {
		if !helm.IsRelease(o) {
			continue
		}
		rel, err := helm.ParseRelease(o)
		if err != nil {
			return true
		}
		for _, v := range rel.ValuesFrom {
			if moved[v.Kind+"/"+o.GetNamespace()+"/"+v.Name] {
				return true
			}
		}
	}
	return false
}

// changedObjects lists, as Kind/namespace/name, the objects one side
// holds and the other does not, or holds otherwise.
func changedObjects(base, head []*unstructured.Unstructured) []string {
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	b := map[string]*unstructured.Unstructured{}
	for _, o := range base {
		b[key(o)] = o
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range head {
		k := key(o)
		seen[k] = true
		if bo, ok := b[k]; !ok || !equalObjects(bo, o) {
			out = append(out, k)
		}
	}
	for k := range b {
		if !seen[k] {
			out = append(out, k)
		}
	}
	return out
}
