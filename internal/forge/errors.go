package forge

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrPermission is returned (wrapped) when the forge answers 401 or 403:
// the token is missing, invalid or lacks a permission. The message names
// the permission the operation needs.
var ErrPermission = errors.New("permission denied")

// Permissions a workflow token needs, named as a GitHub Actions workflow's
// `permissions:` block names them (Gitea Actions uses the same names).
const (
	permIssuesRead        = "issues: read"
	permIssuesWrite       = "issues: write"
	permPullRequestsRead  = "pull-requests: read"
	permPullRequestsWrite = "pull-requests: write"
	permCommentsRead      = "pull-requests: read (issues: read for an issue)"
	permCommentsWrite     = "pull-requests: write (issues: write for an issue)"
	permStatusesRead      = "statuses: read"
	permStatusesWrite     = "statuses: write"

	// GitHub labels a pull request with pull-requests: write, but creates
	// a label the repository lacks only with issues: write.
	permLabelsWrite = "pull-requests: write (and issues: write for a label the repository lacks)"
)

// What Gitea wants for commit statuses, which the workflow permissions
// above do not name: a token with the repository scope, of a user who may
// read (write) the repository.
const (
	permGiteaRepoRead  = "read:repository (a token scope; the user must be able to read the repository)"
	permGiteaRepoWrite = "write:repository (a token scope; the user must have write access to the repository)"
)

// apiError turns a failed call into ferry's error: what the call was about
// first, ErrNotFound or ErrPermission wrapped where the status says so, the
// forge's own message last. Tokens are never part of what, nor of err (both
// clients send the token in a header, never in the URL).
func apiError(what string, status int, perm string, err error) error {
	switch status {
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w (HTTP 404): %w", what, ErrNotFound, err)
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: %w: the token was refused (HTTP 401): %w", what, ErrPermission, err)
	case http.StatusForbidden:
		if perm != "" {
			return fmt.Errorf("%s: %w: the token needs the permission %s (HTTP 403): %w", what, ErrPermission, perm, err)
		}
		return fmt.Errorf("%s: %w (HTTP 403): %w", what, ErrPermission, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
