// Package forge is ferry's one interface to the code forge a repository
// lives on: pull-request comments, pull requests and issues. GitHub is
// reached through go-github (github.go), Gitea through its SDK (gitea.go).
package forge

import (
	"context"
	"errors"
)

// Kind names a forge implementation. (The constants carry a Kind prefix:
// GitHub and Gitea name the implementations.)
type Kind string

const (
	KindGitHub Kind = "github"
	KindGitea  Kind = "gitea"
)

// Config says which forge and repository to talk to.
type Config struct {
	Kind Kind
	// APIURL is the REST API base: https://api.github.com/ for GitHub, the
	// server URL for Gitea (the SDK appends /api/v1).
	APIURL string
	Token  string
	Owner  string
	Repo   string
}

// Comment is a comment on an issue or pull request.
type Comment struct {
	ID     int64
	Author string
	Body   string
	URL    string // web page (permalink to the comment)
}

// PullRequest is an open or closed pull request.
type PullRequest struct {
	Number int
	Title  string
	Body   string
	Head   string // branch name
	Base   string // branch name
	URL    string // web page
	State  string // "open" or "closed"
}

// NewPullRequest is what CreatePullRequest needs.
type NewPullRequest struct {
	Title string
	Body  string
	Head  string
	Base  string
}

// Issue is an issue (not a pull request).
type Issue struct {
	Number int
	Author string
	Title  string
	Body   string
	State  string // "open" or "closed"
	Labels []string
	URL    string
}

// NewIssue is what CreateIssue needs.
type NewIssue struct {
	Title  string
	Body   string
	Labels []string
}

// Commit status states both forges know; Gitea also has
// StatusWarning, which GitHub refuses.
const (
	StatusPending = "pending"
	StatusSuccess = "success"
	StatusFailure = "failure"
	StatusError   = "error"
	StatusWarning = "warning"
)

// CommitStatus is a status on a commit: the State a Context (the name of
// the check, e.g. "kustomization/apps") is in, shown with Description and
// linked to TargetURL. A commit holds every status set on it; the latest
// of each context is the one the forge shows.
type CommitStatus struct {
	State       string
	Context     string
	Description string
	TargetURL   string
}

// Forge is everything ferry asks of a forge. Numbers are issue or pull
// request numbers in the configured repository; comment operations work on
// both, as both forges treat a pull request's conversation as an issue's.
type Forge interface {
	Kind() Kind
	// Me is the login of the user the token belongs to; ferry edits only
	// comments and issues this user wrote.
	Me(ctx context.Context) (string, error)

	Comments(ctx context.Context, number int) ([]Comment, error)
	CreateComment(ctx context.Context, number int, body string) (Comment, error)
	EditComment(ctx context.Context, id int64, body string) error
	DeleteComment(ctx context.Context, id int64) error

	// OpenPullRequest returns the open pull request from head into base,
	// or nil when there is none.
	OpenPullRequest(ctx context.Context, head, base string) (*PullRequest, error)
	CreatePullRequest(ctx context.Context, pr NewPullRequest) (PullRequest, error)
	EditPullRequest(ctx context.Context, number int, title, body string) error
	// SetPullRequestLabel makes pull request number carry label (present)
	// or not carry it, so that a label can tell reviewers what ferry's
	// last run found (a bump whose chart fails to render). Adding creates
	// the label where the repository lacks it; removing a label the pull
	// request does not carry, or the repository does not have, is no
	// error. The pull request's labels are read first: a call that would
	// change nothing writes nothing.
	SetPullRequestLabel(ctx context.Context, number int, label string, present bool) error

	// Issues lists issues (never pull requests) carrying label, in state
	// "open", "closed" or "all".
	Issues(ctx context.Context, label, state string) ([]Issue, error)
	CreateIssue(ctx context.Context, issue NewIssue) (Issue, error)
	EditIssue(ctx context.Context, number int, title, body string) error
	CloseIssue(ctx context.Context, number int) error

	// CommitStatuses returns the latest status of each context on commit
	// sha, by context.
	CommitStatuses(ctx context.Context, sha string) ([]CommitStatus, error)
	// SetCommitStatus adds a status to commit sha; it replaces the one of
	// the same context as the latest.
	SetCommitStatus(ctx context.Context, sha string, s CommitStatus) error
}

// ErrNotFound is returned (wrapped) when the forge answers 404.
var ErrNotFound = errors.New("not found")
