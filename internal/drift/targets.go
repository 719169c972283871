package drift

import (
	"context"

	"github.com/ferry-ci/ferry/internal/config"
)

// Targets renders every target first (a Repo renders one at a time), as
// the checks of Check; a target that fails is an error of its own, never
// "everything is missing". byName finds a target by name.
func Targets(ctx context.Context, repo *config.Repo, targets []*config.Target) (checks []Target, byName map[string]*config.Target) {
	checks = make([]Target, len(targets))
	byName = make(map[string]*config.Target, len(targets))
	for i, t := range targets {
		byName[t.Name] = t
		checks[i] = Target{Name: t.Name, Cluster: t.Cluster, Source: t.EventSource(), DependsOn: t.DependsOn, Prune: t.Prune}
		if checks[i].Err = repo.Blocked(t); checks[i].Err != nil {
			continue
		}
		if res, err := repo.Render(ctx, t); err != nil {
			checks[i].Err = err
		} else {
			checks[i].Objects = res.Set.Objects
		}
	}
	return checks, byName
}
