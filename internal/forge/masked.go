package forge

import "context"

// Masked is f with every text it sends (comments, pull requests, issues,
// commit statuses) masked on the way out, so that no caller can post a
// secret by forgetting to mask it.
func Masked(f Forge, mask func(string) string) Forge { return maskedForge{f: f, mask: mask} }

// maskedForge is Masked's forge. Each method is written out rather than
// embedded, so that a method the interface gains cannot pass text
// through unmasked.
type maskedForge struct {
	f    Forge
	mask func(string) string
}

var _ Forge = maskedForge{}

func (m maskedForge) Kind() Kind                             { return m.f.Kind() }
func (m maskedForge) Me(ctx context.Context) (string, error) { return m.f.Me(ctx) }

func (m maskedForge) Comments(ctx context.Context, number int) ([]Comment, error) {
	return m.f.Comments(ctx, number)
}

func (m maskedForge) CreateComment(ctx context.Context, number int, body string) (Comment, error) {
	return m.f.CreateComment(ctx, number, m.mask(body))
}

func (m maskedForge) EditComment(ctx context.Context, id int64, body string) error {
	return m.f.EditComment(ctx, id, m.mask(body))
}

func (m maskedForge) DeleteComment(ctx context.Context, id int64) error {
	return m.f.DeleteComment(ctx, id)
}

func (m maskedForge) OpenPullRequest(ctx context.Context, head, base string) (*PullRequest, error) {
	return m.f.OpenPullRequest(ctx, head, base)
}

func (m maskedForge) CreatePullRequest(ctx context.Context, pr NewPullRequest) (PullRequest, error) {
	pr.Title, pr.Body = m.mask(pr.Title), m.mask(pr.Body)
	return m.f.CreatePullRequest(ctx, pr)
}

func (m maskedForge) EditPullRequest(ctx context.Context, number int, title, body string) error {
	return m.f.EditPullRequest(ctx, number, m.mask(title), m.mask(body))
}

func (m maskedForge) SetPullRequestLabel(ctx context.Context, number int, label string, present bool) error {
	return m.f.SetPullRequestLabel(ctx, number, m.mask(label), present)
}

func (m maskedForge) Issues(ctx context.Context, label, state string) ([]Issue, error) {
	return m.f.Issues(ctx, label, state)
}

func (m maskedForge) CreateIssue(ctx context.Context, issue NewIssue) (Issue, error) {
	issue.Title, issue.Body = m.mask(issue.Title), m.mask(issue.Body)
	return m.f.CreateIssue(ctx, issue)
}

func (m maskedForge) EditIssue(ctx context.Context, number int, title, body string) error {
	return m.f.EditIssue(ctx, number, m.mask(title), m.mask(body))
}

func (m maskedForge) CloseIssue(ctx context.Context, number int) error {
	return m.f.CloseIssue(ctx, number)
}

func (m maskedForge) CommitStatuses(ctx context.Context, sha string) ([]CommitStatus, error) {
	return m.f.CommitStatuses(ctx, sha)
}

func (m maskedForge) SetCommitStatus(ctx context.Context, sha string, s CommitStatus) error {
	s.Description, s.TargetURL = m.mask(s.Description), m.mask(s.TargetURL)
	return m.f.SetCommitStatus(ctx, sha, s)
}
