package notify

import (
	"context"

	"github.com/ferry-ci/ferry/internal/forge"
)

// OpenForgeStatuses is Options.OpenStatuses through ferry's forge
// clients: the repository a github or gitea Provider's address names
// (https://host/owner/repo), with its token. Everything it sends is
// masked.
func OpenForgeStatuses(mask func(string) string) func(kind, address, token string) (Statuses, error) {
	return func(kind, address, token string) (Statuses, error) {
		cfg, err := forge.ForRepoURL(kind, address, token)
		if err != nil {
			return nil, err
		}
		f, err := forge.New(cfg)
		if err != nil {
			return nil, err
		}
		return forgeStatuses{forge.Masked(f, mask)}, nil
	}
}

// forgeStatuses are the commit statuses of a forge, as notify reads and
// sets them.
type forgeStatuses struct{ f forge.Forge }

func (s forgeStatuses) CommitStatuses(ctx context.Context, sha string) ([]CommitStatus, error) {
	list, err := s.f.CommitStatuses(ctx, sha)
	if err != nil {
		return nil, err
	}
	out := make([]CommitStatus, len(list))
	for i, c := range list {
		out[i] = CommitStatus{State: c.State, Context: c.Context, Description: c.Description, TargetURL: c.TargetURL}
	}
	return out, nil
}

func (s forgeStatuses) SetCommitStatus(ctx context.Context, sha string, c CommitStatus) error {
	return s.f.SetCommitStatus(ctx, sha, forge.CommitStatus{State: c.State, Context: c.Context, Description: c.Description, TargetURL: c.TargetURL})
}
