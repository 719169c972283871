package bump

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"text/template"

	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/markdown"
)

// Defaults of the pull-request templates (text/template, with the fields
// of Fields).
const (
	DefaultBranch        = "ferry/bump/{{.Namespace}}/{{.Name}}"
	DefaultTitle         = "Bump {{.Image}} to {{.Tag}}"
	DefaultGroupedBranch = "ferry/bump/all"
	DefaultGroupedTitle  = "Bump {{.Count}} image(s)"
	DefaultAuthor        = "ferry <ferry@localhost>"
)

// Fields are what the branch and title templates can use. For a grouped
// pull request, Policy, Namespace, Name, Image and Tag are those of the
// first policy.
type Fields struct {
	Policy, Namespace, Name, Image, Tag string
	Count                               int
}

// PROptions say how the pull requests are written.
type PROptions struct {
	// Branch and Title are templates; empty for the defaults.
	Branch, Title string
	// Group makes one pull request for every policy.
	Group bool
	// Author of the commits, as "Name <email>".
	Author string
	// Base is the pull requests' base branch; empty for the checked-out
	// branch.
	Base string
}

// PullRequests are a scan's updates, each committed on top of the
// checked-out commit, ready to push.
type PullRequests struct {
	repo     *gitrepo.Committer
	branch   *template.Template
	title    *template.Template
	author   *mail.Address
	updates  []images.Update
	prepared []prepared
}

// prepared is one pull request, committed and ready to push.
type prepared struct {
	u                   images.Update
	branch, title, body string
	commit              string
}

// Opened is one pull request opened, updated or left as it was.
type Opened struct {
	Policy  string          `json:"policy"`
	Number  int             `json:"number"`
	URL     string          `json:"url"`
	Action  string          `json:"action"` // created, updated or unchanged
	Changes []images.Change `json:"-"`
}

// NewPullRequests checks the templates and the author, opens the
// repository at Root and computes the updates of the scan (one per policy,
// or one for all); nothing is committed yet.
func NewPullRequests(s *Scan, o PROptions) (*PullRequests, error) {
	p := &PullRequests{}
	if err := p.parse(o); err != nil {
		return nil, err
	}
	repo, err := gitrepo.OpenCommitter(s.Root, o.Base)
	if errors.Is(err, gitrepo.ErrDetached) {
		return nil, errors.New("--pr: HEAD is detached: name the pull requests' base branch with --base")
	}
	if err != nil {
		return nil, fmt.Errorf("--pr: %w", err)
	}
	p.repo = repo
	p.updates, err = images.Updates(s.Markers, s.Result, repo.Read, o.Group)
	return p, err
}

// Len is the number of pull requests to open.
func (p *PullRequests) Len() int { return len(p.updates) }

func (p *PullRequests) parse(o PROptions) error {
	bs, ts := o.Branch, o.Title
	if bs == "" {
		bs = DefaultBranch
		if o.Group {
			bs = DefaultGroupedBranch
		}
	}
	if ts == "" {
		ts = DefaultTitle
		if o.Group {
			ts = DefaultGroupedTitle
		}
	}
	var err error
	if p.branch, err = template.New("branch").Option("missingkey=error").Parse(bs); err != nil {
		return fmt.Errorf("--branch %q: %v", bs, err)
	}
	if p.title, err = template.New("title").Option("missingkey=error").Parse(ts); err != nil {
		return fmt.Errorf("--title %q: %v", ts, err)
	}
	if p.author, err = mail.ParseAddress(o.Author); err != nil {
		return fmt.Errorf("--author %q: want \"Name <email>\": %v", o.Author, err)
	}
	return nil
}

// Commit names each update's branch and title from the templates and
// commits it; nothing is pushed yet, so a bad template or a commit that
// fails stops the run before anything leaves the machine.
func (p *PullRequests) Commit() error {
	seen := map[string]string{}
	for _, u := range p.updates {
		r := u.Results[0]
		fields := Fields{Policy: r.Policy.ID(), Namespace: r.Policy.Namespace, Name: r.Policy.Name, Image: r.Policy.Image, Tag: r.Tag, Count: len(u.Results)}
		branch, err := execTemplate(p.branch, fields)
		if err != nil {
			return fmt.Errorf("--branch: %w", err)
		}
		if prev, dup := seen[branch]; dup {
			return fmt.Errorf("--branch: %s and %s both make branch %q; the template must tell policies apart", prev, u.Key, branch)
		}
		seen[branch] = u.Key
		if err := gitrepo.CheckBranchName(branch); err != nil {
			return fmt.Errorf("--branch: %w", err)
		}
		title, err := execTemplate(p.title, fields)
		if err != nil {
			return fmt.Errorf("--title: %w", err)
		}
		body := u.Body()
		commit, err := p.repo.Commit(updateFiles(u), title+"\n\n"+body, p.author.Name, p.author.Address)
		if err != nil {
			return err
		}
		p.prepared = append(p.prepared, prepared{u, branch, title, body, commit})
	}
	return nil
}

// Open force-pushes each committed branch to remote with token and opens
// its pull request into the base branch, or updates the one already open
// from that branch. It returns the pull requests done before an error.
func (p *PullRequests) Open(ctx context.Context, f forge.Forge, remote, token string) ([]Opened, error) {
	var out []Opened
	for _, pr := range p.prepared {
		pushed, err := p.repo.Push(ctx, remote, pr.commit, pr.branch, token)
		if err != nil {
			return out, fmt.Errorf("pushing %s: %w", pr.branch, err)
		}
		got, action, err := forge.SyncPullRequest(ctx, f, pr.branch, p.repo.BaseBranch, pr.title, pr.body, pushed)
		if err != nil {
			return out, err
		}
		out = append(out, Opened{Policy: pr.u.Key, Number: got.Number, URL: got.URL, Action: string(action), Changes: pr.u.Changes()})
	}
	return out, nil
}

func execTemplate(t *template.Template, f Fields) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, f); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// updateFiles are an update's files by path, with their new content.
func updateFiles(u images.Update) map[string][]byte {
	files := make(map[string][]byte, len(u.Files))
	for _, f := range u.Files {
		files[f.Path] = f.New
	}
	return files
}

// Markdown is the step summary of the pull requests bump opened, updated
// or left alone, with the scan's warnings.
func Markdown(opened []Opened, warnings []string) string {
	var md strings.Builder
	md.WriteString("### ferry bump\n\n| policy | pull request | |\n|---|---|---|\n")
	for _, p := range opened {
		fmt.Fprintf(&md, "| %s | [#%d](%s) | %s |\n", markdown.Code(p.Policy), p.Number, p.URL, p.Action)
	}
	for _, w := range warnings {
		fmt.Fprintf(&md, "\n> [!WARNING]\n> %s\n", markdown.Text(w))
	}
	return md.String()
}
