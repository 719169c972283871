package drift

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// Target is one target to check: its rendered objects, or why it has none.
type Target struct {
	Name string
	// Cluster is the target's cluster, and Source what its events are
	// about (see Notices).
	Cluster string
	Source  event.Source
	// DependsOn names the targets it heals after; one whose dependency
	// could not be checked or healed is not healed.
	DependsOn []string
	// Prune prunes on heal, as the target's prune: true does on apply.
	Prune   bool
	Objects []*unstructured.Unstructured
	// Err is why the target could not be rendered (or depends on one that
	// cannot be): its report is this error.
	Err error
}

// CheckOptions say how to reach each target's cluster and what to do.
type CheckOptions struct {
	// Connect returns the client of the named target's cluster.
	Connect func(target string) (*kube.Client, error)
	// Compare are the options of every comparison (Target is set per
	// target).
	Compare kube.CompareOptions
	// Concurrency bounds the targets compared at once (at least 1).
	Concurrency int
	// Heal applies, after the comparisons and in the targets' order, each
	// target that is not in sync, with Apply's options (Target, Revision,
	// IsAncestor and the inventory namespace set per target; conflicts
	// forced: healing takes back the fields someone changed).
	Heal       bool
	Apply      kube.ApplyOptions
	Revision   string
	IsAncestor func(a, b string) (bool, error)
	// Mask hides decrypted values in what the reports quote.
	Mask *secrets.Masker
}

// Check compares every target with its cluster, concurrently, and heals
// when asked. The reports come back in the targets' order.
func Check(ctx context.Context, targets []Target, opts CheckOptions) []*Report {
	reports := make([]*Report, len(targets))
	clients := make([]*kube.Client, len(targets))
	sem := make(chan struct{}, max(opts.Concurrency, 1))
	var wg sync.WaitGroup
	for i, t := range targets {
		if t.Err != nil {
			reports[i] = ErrorReport(t.Name, t.Err)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			clients[i], reports[i] = detect(ctx, t, opts)
		}()
	}
	wg.Wait()
	if opts.Heal {
		heal(ctx, targets, clients, reports, opts)
	}
	return reports
}

// detect compares one target with its cluster.
func detect(ctx context.Context, t Target, opts CheckOptions) (*kube.Client, *Report) {
	client, err := opts.Connect(t.Name)
	if err != nil {
		return nil, ErrorReport(t.Name, err)
	}
	copts := opts.Compare
	copts.Target = t.Name
	cmp, err := client.Compare(ctx, t.Objects, copts)
	if err != nil {
		r := ErrorReport(t.Name, err)
		r.Cluster = client.Host
		return nil, r
	}
	return client, Detect(cmp, opts.Revision, opts.Mask)
}

// heal applies, in the targets' (dependency) order, each target that is
// not in sync; a target whose dependency could not be checked or healed
// is not applied.
func heal(ctx context.Context, targets []Target, clients []*kube.Client, reports []*Report, opts CheckOptions) {
	failed := map[string]bool{}
	for i, t := range targets {
		r := reports[i]
		if r.Error != "" {
			failed[t.Name] = true
			continue
		}
		if !r.NeedsApply() {
			continue
		}
		var broken []string
		for _, dep := range t.DependsOn {
			if failed[dep] {
				broken = append(broken, dep)
			}
		}
		if len(broken) > 0 {
			r.HealError = "not healed: it depends on " + strings.Join(broken, ", ") + ", which could not be checked or healed"
			failed[t.Name] = true
			continue
		}
		a := opts.Apply
		a.Target, a.Revision, a.IsAncestor = t.Name, opts.Revision, opts.IsAncestor
		a.InventoryNamespace = opts.Compare.InventoryNamespace
		a.Prune = a.Prune || t.Prune
		a.ForceConflicts = true
		cs, err := clients[i].Apply(ctx, t.Objects, a)
		if cs != nil {
			r.Heal = cs
		}
		if err != nil {
			r.HealError = err.Error()
			failed[t.Name] = true
		}
	}
}
