package diff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/risk"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// RiskCluster is what the risks read of a target's cluster with --live:
// its Kubernetes version, whether it holds an object a Pod template
// needs, and how many objects a CRD's prune would delete.
type RiskCluster interface {
	ServerVersion() (string, error)
	GetCore(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error)
	CountCustomResources(ctx context.Context, crd *unstructured.Unstructured) (int, error)
}

// ImageChecker says whether image references exist in their
// registries (images.Checker).
type ImageChecker interface {
	Exists(ctx context.Context, ref string) images.Existence
}

// targetRisks is what one target's risks are found from, kept until
// every target is rendered (a Pod template may need another target's
// object).
type targetRisks struct {
	index   int
	target  *config.Target
	in      risk.Target
	heads   []*unstructured.Unstructured
	bases   map[string]*unstructured.Unstructured
	live    []Object
	liveRan bool
}

// newTargetRisks pairs a target's base and head objects.
func newTargetRisks(index int, t *config.Target, name string, bo, ho []*unstructured.Unstructured, prune bool, releases []ReleaseChange, kubeVersion string) *targetRisks {
	tr := &targetRisks{index: index, target: t, heads: ho, bases: map[string]*unstructured.Unstructured{}}
	tr.in = risk.Target{Name: name, KubeVersion: kubeVersion}
	head := map[manifest.ID]*unstructured.Unstructured{}
	for _, o := range ho {
		head[manifest.IDOf(o)] = o
	}
	for _, o := range bo {
		id := manifest.IDOf(o)
		tr.bases[risk.ObjectName(o)] = o
		tr.in.Changes = append(tr.in.Changes, risk.Change{Base: o, Head: head[id], Pruned: prune && head[id] == nil})
		delete(head, id)
	}
	for _, o := range ho {
		if _, ok := head[manifest.IDOf(o)]; ok {
			tr.in.Changes = append(tr.in.Changes, risk.Change{Head: o})
		}
	}
	for _, rc := range releases {
		if rc.Action == Changed && rc.Base != nil && rc.Head != nil && rc.Base.Chart == rc.Head.Chart {
			tr.in.Releases = append(tr.in.Releases, risk.Release{ID: rc.ID, Chart: rc.Head.Chart, BaseVersion: rc.Base.Version, HeadVersion: rc.Head.Version})
		}
	}
	return tr
}

// findRisks finds every target's risks: Pod templates may need what any
// affected target's head renders or the head's builds hold; with a
// cluster, its version, its objects and its dry-run answers replace the
// tables.
func findRisks(ctx context.Context, pending []*targetRisks, head *config.Repo, connect func(context.Context, *config.Target) (RiskCluster, error), checker ImageChecker, mask *secrets.Masker) []risk.Risk {
	cluster := func(p *targetRisks) string {
		if p.target == nil {
			return ""
		}
		return p.target.Cluster
	}
	byCluster := map[string][]*unstructured.Unstructured{}
	for _, p := range pending {
		byCluster[cluster(p)] = append(byCluster[cluster(p)], p.heads...)
	}
	indexes := map[string]func(kind, namespace, name string) bool{}
	for c, objs := range byCluster {
		indexes[c] = risk.Index(objs)
	}
	if checker != nil {
		prefetchImages(ctx, pending, checker)
	}
	var out []risk.Risk
	for _, p := range pending {
		in := p.in
		var live RiskCluster
		if connect != nil && p.target != nil {
			live, _ = connect(ctx, p.target) // a cluster that cannot be reached: the live comparison says why
			if live != nil {
				if v, err := live.ServerVersion(); err == nil {
					in.KubeVersion = v
				}
			}
		}
		index := indexes[cluster(p)]
		t := p.target
		in.Provides = func(kind, namespace, name string) bool {
			if index(kind, namespace, name) {
				return true
			}
			if head != nil && t != nil {
				if ht, err := head.Target(qualified(t)); err == nil && head.Holds(ctx, ht, kind, namespace, name) {
					return true
				}
			}
			if live != nil {
				o, err := live.GetCore(ctx, kind, namespace, name)
				return err != nil || o != nil // unknown counts as there: no guess
			}
			return false
		}
		found := risk.Find(in)
		if checker != nil {
			for _, c := range in.Changes {
				if c.Head == nil {
					continue
				}
				for _, use := range risk.NewImages(c.Base, c.Head) {
					if checker.Exists(ctx, use.Ref) == images.Missing {
						found = append(found, risk.MissingImage(in.Name, c.Head, use))
					}
				}
			}
			risk.Sort(found)
		}
		if p.liveRan {
			found = serverAnswers(in.Name, found, p.live, mask)
		}
		if live != nil {
			countPrunedCRDs(ctx, live, found, p.bases)
		}
		annotated := map[string]string{}
		for _, c := range in.Changes {
			for _, o := range []*unstructured.Unstructured{c.Base, c.Head} {
				if o == nil {
					continue
				}
				if a := o.GetAnnotations()[risk.AcceptAnnotation]; a != "" {
					annotated[risk.ObjectName(o)] = a
				}
			}
		}
		risk.Accept(found, nil, annotated)
		out = append(out, found...)
	}
	risk.Sort(out)
	return out
}

// qualified is the name head.Target finds t by.
func qualified(t *config.Target) string {
	if t.Cluster != "" {
		return t.Cluster + "/" + t.Name
	}
	return t.Name
}

// serverAnswers replaces the table's refusals with the dry-run's: the
// server accepted the objects it did not refuse, and every object it
// refused is a risk, with its own words.
func serverAnswers(target string, found []risk.Risk, live []Object, mask *secrets.Masker) []risk.Risk {
	compared := map[string]bool{}
	for _, o := range live {
		compared[idKey(o.ID)] = o.Answered
	}
	var out []risk.Risk
	for _, r := range found {
		if r.Level == risk.Refused && compared[r.Object] {
			continue
		}
		out = append(out, r)
	}
	for _, o := range live {
		err := o.Refusal
		if err == nil {
			continue
		}
		r := risk.Risk{Rule: "refused-by-server", Level: risk.Refused, Target: target, Object: idKey(o.ID), From: "server dry-run"}
		var se *apierrors.StatusError
		if errors.As(err, &se) && se.ErrStatus.Details != nil && len(se.ErrStatus.Details.Causes) > 0 {
			c := se.ErrStatus.Details.Causes[0]
			r.Field, r.Why = c.Field, mask.Mask(c.Message)
		} else {
			r.Why = mask.Mask(err.Error())
		}
		r.ID = r.Rule + ":" + r.Object
		if r.Field != "" {
			r.ID += ":" + r.Field
		}
		r.Fix = "delete and recreate the object, or keep the value the cluster has"
		out = append(out, r)
	}
	return out
}

// idKey is Kind/namespace/name of an ID, as risks name objects.
func idKey(id manifest.ID) string {
	if id.Namespace == "" {
		return id.Kind + "/" + id.Name
	}
	return id.Kind + "/" + id.Namespace + "/" + id.Name
}

// countPrunedCRDs says in each prune-crd risk how many objects the
// cluster holds of the CRD's kind.
func countPrunedCRDs(ctx context.Context, live RiskCluster, found []risk.Risk, bases map[string]*unstructured.Unstructured) {
	for i := range found {
		r := &found[i]
		if r.Rule != "prune-crd" || bases[r.Object] == nil {
			continue
		}
		n, err := live.CountCustomResources(ctx, bases[r.Object])
		if err != nil {
			r.Why += fmt.Sprintf("; the cluster could not be asked how many: %v", err)
			continue
		}
		r.Why += fmt.Sprintf("; the cluster holds %d of them", n)
		r.From = "cluster"
	}
}

// isRefusal says whether a dry-run error is the API server refusing the
// object (invalid, forbidden by validation), not a failure to ask.
func isRefusal(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// RiskSummary is "3 risks (1 refused, 2 destructive), 1 accepted".
func RiskSummary(rs []risk.Risk) string {
	by := map[risk.Level]int{}
	accepted := 0
	for _, r := range rs {
		by[r.Level]++
		if r.Accepted != "" {
			accepted++
		}
	}
	var parts []string
	for _, l := range risk.Levels {
		if by[l] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[l], l))
		}
	}
	s := fmt.Sprintf("%d risk", len(rs))
	if len(rs) != 1 {
		s += "s"
	}
	s += " (" + strings.Join(parts, ", ") + ")"
	if accepted > 0 {
		s += fmt.Sprintf(", %d accepted", accepted)
	}
	return s
}

// markRisks notes each risk on its object, beside the object's diff.
func (r *Report) markRisks() {
	for _, rk := range r.Risks {
		for ti := range r.Targets {
			t := &r.Targets[ti]
			if t.Name != rk.Target {
				continue
			}
			for oi := range t.Objects {
				if o := &t.Objects[oi]; idKey(o.ID) == rk.Object {
					w := "risk (" + string(rk.Level) + "): "
					if rk.Field != "" {
						w += rk.Field + ": "
					}
					o.Warnings = append(o.Warnings, w+rk.Why)
				}
			}
		}
	}
}

// prefetchImages asks the checker about every new image at once, at most
// 8 at a time; findRisks then reads its cached answers.
func prefetchImages(ctx context.Context, pending []*targetRisks, checker ImageChecker) {
	seen := map[string]bool{}
	var refs []string
	for _, p := range pending {
		for _, c := range p.in.Changes {
			if c.Head == nil {
				continue
			}
			for _, use := range risk.NewImages(c.Base, c.Head) {
				if !seen[use.Ref] {
					seen[use.Ref] = true
					refs = append(refs, use.Ref)
				}
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, ref := range refs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			checker.Exists(ctx, ref)
		}()
	}
	wg.Wait()
}

// OpenRisks counts the risks nobody accepted (the step output risks).
func (r *Report) OpenRisks() int {
	return len(risk.Failing(r.Risks, risk.Warning))
}

// FailOn is the error of --fail-on: the risks at least as bad as level
// nobody accepted, the first named; nil when there are none.
func (r *Report) FailOn(level risk.Level) error {
	failing := risk.Failing(r.Risks, level)
	if len(failing) == 0 {
		return nil
	}
	return fmt.Errorf("--fail-on %s: %d risk(s) nobody accepted, the first: %s", level, len(failing), failing[0].Line())
}
