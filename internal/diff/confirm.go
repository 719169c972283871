package diff

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
)

// verdict is what confirm found of a target: affected and why, or not,
// and then whether it is broken (its error at head).
type verdict struct {
	why      string
	affected bool
	broken   string
}

// confirm decides whether a change affects a target that is defined
// alike at both revisions, from its footprints (config.Footprint): its
// builds, which hold every variable and patch, and what each of its
// HelmReleases takes but the chart's content. A target is affected when
// its render reads a changed file, when its builds differ, or when a
// release's chart source or values differ. No chart is rendered.
//
// A target that fails at both revisions alike, none of whose own files
// changed, is broken but not affected; one that fails otherwise is
// affected: the report shows the error.
func (p *Plan) confirm(ctx context.Context, bt, ht *config.Target, changed []string) verdict {
	v, _, _ := p.confirmBuilds(ctx, bt, ht, changed)
	return v
}

// confirmBuilds is confirm, and the objects of the builds at base and
// head (those of a side that fails: none).
func (p *Plan) confirmBuilds(ctx context.Context, bt, ht *config.Target, changed []string) (verdict, []*unstructured.Unstructured, []*unstructured.Unstructured) {
	var bf, hf *config.Footprint
	var berr, herr error
	var bo, ho []*unstructured.Unstructured
	sideBySide(func() { bf, bo, berr = footprint(ctx, p.base, bt) }, func() { hf, ho, herr = footprint(ctx, p.head, ht) })
	if berr != nil || herr != nil {
		if berr != nil && herr != nil && p.sameError(berr, herr) &&
			!p.base.OwnInputs(bt).Touches(changed) && !p.head.OwnInputs(ht).Touches(changed) {
			return verdict{broken: herr.Error()}, bo, ho
		}
		return verdict{why: "fails to render", affected: true}, bo, ho
	}
	v := footprintVerdict(bf, hf, changed)
	return v, bo, ho
}

// footprint is t's footprint in r, and the objects of its build (none
// when the build fails).
func footprint(ctx context.Context, r *config.Repo, t *config.Target) (*config.Footprint, []*unstructured.Unstructured, error) {
	f, err := r.Footprint(ctx, t)
	if err == nil {
		return f, f.Build.Set.Objects, nil
	}
	if b, berr := r.Build(ctx, t); berr == nil {
		return nil, b.Set.Objects, err
	}
	return nil, nil, err
}

// sideBySide runs base and head, the same work at the two revisions, at
// once: each revision's Repo takes its own turns (config.Repo), so the
// two render side by side on two cores.
func sideBySide(base, head func()) {
	var wg sync.WaitGroup
	wg.Go(base)
	head()
	wg.Wait()
}

// footprintVerdict compares a target's footprints at base and head.
func footprintVerdict(bf, hf *config.Footprint, changed []string) verdict {
	read := map[string]bool{}
	for _, f := range bf.Files {
		read[f] = true
	}
	for _, f := range hf.Files {
		read[f] = true
	}
	var hit []string
	for _, c := range changed {
		if read[c] {
			hit = append(hit, c)
		}
	}
	if len(hit) > 0 {
		return verdict{why: listed("changed: ", hit), affected: true}
	}
	if !sameBuild(bf.Build, hf.Build) {
		return verdict{why: "objects it reads changed (its variables)", affected: true}
	}
	var moved []string
	for id, k := range hf.Releases {
		if bf.Releases[id] != k {
			moved = append(moved, id)
		}
	}
	for id := range bf.Releases {
		if _, ok := hf.Releases[id]; !ok {
			moved = append(moved, id)
		}
	}
	if len(moved) > 0 {
		return verdict{why: listed("chart source or values changed: ", moved), affected: true}
	}
	return verdict{}
}

// listed is what, then the first three of items, sorted, and how many
// more there are.
func listed(what string, items []string) string {
	sort.Strings(items)
	s := what + strings.Join(items[:min(len(items), 3)], ", ")
	if len(items) > 3 {
		s += fmt.Sprintf(" and %d more", len(items)-3)
	}
	return s
}

// renderedAlike checks confirm's finding that a change does not affect
// a target (v) by rendering it in full at both revisions (AllTargets): a
// target whose renders differ is affected after all. Renders that fail
// alike at both sides keep v.
func (p *Plan) renderedAlike(ctx context.Context, bt, ht *config.Target, v verdict) verdict {
	if v.broken != "" {
		return v
	}
	var bres, hres *render.Result
	var berr, herr error
	sideBySide(func() { bres, berr = p.base.Render(ctx, bt) }, func() { hres, herr = p.head.Render(ctx, ht) })
	switch {
	case berr != nil || herr != nil:
		if berr != nil && herr != nil && p.sameError(berr, herr) {
			return v
		}
	case reflect.DeepEqual(objects(bres), objects(hres)) && reflect.DeepEqual(bres.Releases, hres.Releases) &&
		slices.Equal(bres.Without, hres.Without) && slices.Equal(bres.Unresolved, hres.Unresolved):
		return v
	}
	return verdict{why: "rendered output differs", affected: true}
}

// sameError reports whether two revisions' errors say the same, their
// folders aside.
func (p *Plan) sameError(b, h error) bool {
	return strings.ReplaceAll(b.Error(), p.base.Root, "") == strings.ReplaceAll(h.Error(), p.head.Root, "")
}

// sameBuild reports whether two builds of a target hold the same objects
// and say the same of what they left out.
func sameBuild(b, h *render.Result) bool {
	return slices.EqualFunc(b.Set.Objects, h.Set.Objects, equalObjects) &&
		slices.Equal(b.Without, h.Without) && slices.Equal(b.Unresolved, h.Unresolved) &&
		reflect.DeepEqual(b.Skipped, h.Skipped) && slices.Equal(b.Omitted, h.Omitted)
}

// revisionOf names what a target renders: its revision, or the ref and
// commit of this repository its GitRepository names.
func revisionOf(t *config.Target) string {
	if t.Revision == nil {
		return "this revision"
	}
	return t.Revision.Source + " at " + t.Revision.Ref + " (" + shortHash(t.Revision.Commit) + ")"
}

func sameDefinition(a, b *config.Target) bool {
	return a.Path == b.Path && a.Prune == b.Prune && a.TargetNamespace == b.TargetNamespace &&
		reflect.DeepEqual(a.Kustomization.Object["spec"], b.Kustomization.Object["spec"]) &&
		reflect.DeepEqual(a.Kustomization.GetLabels(), b.Kustomization.GetLabels()) &&
		reflect.DeepEqual(a.Kustomization.GetAnnotations(), b.Kustomization.GetAnnotations())
}
