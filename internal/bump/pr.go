package bump

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"slices"
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
// first policy (or chart). For a chart, Policy is "chart NAME",
// Namespace "chart/" and its source's host and path (in one part of a
// branch name: see branchPart), Name the chart's name, Image "NAME chart from
// SOURCE", Tag its new version, Source its repository; Kind is "image"
// or "chart".
type Fields struct {
	Policy, Namespace, Name, Image, Tag string
	Count                               int
	Kind, Chart, Source                 string
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
	updates  []Update
	prepared []prepared
}

// prepared is one pull request, committed and ready to push.
type prepared struct {
	u             Update
	branch, title string
	desc          Description
	commit        string
}

// Description is what a pull request says beyond its title: its body,
// what does not fit in it (kept as comments on it, in order), and the
// labels it carries or not.
type Description struct {
	Body     string
	Comments []string
	Labels   map[string]bool
}

// Opened is one pull request opened, updated or left as it was.
type Opened struct {
	Policy  string   `json:"policy"`
	Number  int      `json:"number"`
	URL     string   `json:"url"`
	Action  string   `json:"action"` // created, updated or unchanged
	Changes []Change `json:"-"`
}

// NewPullRequests checks the templates and the author, opens the
// repository at Root and computes the updates of the scan (one per
// policy and per chart, or one for all); nothing is committed yet.
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
	var imgs []images.Update
	if s.Result != nil {
		if imgs, err = images.Updates(s.Markers, s.Result, repo.Read, o.Group); err != nil {
			return nil, err
		}
	}
	var moves []ChartMove
	if s.Charts != nil {
		moves = s.Charts.Moves
	}
	p.updates, err = NewUpdates(imgs, moves, repo.Read, o.Group)
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

// CommitRendered is Commit with each description made by Describe from
// the update's rendered change (renders.All against the base commit;
// none when renders is nil or off), masked with mask.
func (p *PullRequests) CommitRendered(ctx context.Context, renders *Renders, mask func(string) string) error {
	rendered := renders.All(ctx, p.updates, p.repo.BaseCommit())
	return p.Commit(func(u *Update) Description {
		r := rendered[u.Key]
		if r == nil {
			r = &Rendered{}
		}
		return Describe(u, *r, mask)
	})
}

// Commit names each update's branch and title from the templates and
// commits it, its message the title and the update's Summary; describe
// gives each pull request's description (nil: the Summary alone).
// Nothing is pushed yet, so a bad template or a commit that fails stops
// the run before anything leaves the machine.
func (p *PullRequests) Commit(describe func(u *Update) Description) error {
	seen := map[string]string{}
	for _, u := range p.updates {
		fields := u.Fields
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
		summary := u.Summary()
		desc := Description{Body: summary}
		if describe != nil {
			desc = describe(&u)
		}
		commit, err := p.repo.Commit(u.HeadFiles(), title+"\n\n"+summary, p.author.Name, p.author.Address)
		if err != nil {
			return err
		}
		p.prepared = append(p.prepared, prepared{u, branch, title, desc, commit})
	}
	return nil
}

// Open force-pushes each committed branch to remote with token and opens
// its pull request into the base branch, or updates the one already open
// from that branch; then sets its labels and keeps what its body could
// not hold as comments on it (forge.Sticky, key "bump"). It returns the
// pull requests done before an error.
func (p *PullRequests) Open(ctx context.Context, f forge.Forge, remote, token string) ([]Opened, error) {
	var out []Opened
	for _, pr := range p.prepared {
		pushed, err := p.repo.Push(ctx, remote, pr.commit, pr.branch, token)
		if err != nil {
			return out, fmt.Errorf("pushing %s: %w", pr.branch, err)
		}
		got, action, err := forge.SyncPullRequest(ctx, f, pr.branch, p.repo.BaseBranch, pr.title, pr.desc.Body, pushed)
		if err != nil {
			return out, err
		}
		opened := Opened{Policy: pr.u.Key, Number: got.Number, URL: got.URL, Action: string(action), Changes: pr.u.Changes}
		for _, l := range slices.Sorted(maps.Keys(pr.desc.Labels)) {
			if err := f.SetPullRequestLabel(ctx, got.Number, l, pr.desc.Labels[l]); err != nil {
				return append(out, opened), fmt.Errorf("pull request #%d: label %q: %w", got.Number, l, err)
			}
		}
		sticky := forge.Sticky{Key: "bump", MaxParts: forge.DefaultMaxParts}
		res, err := sticky.Sync(ctx, f, got.Number, pr.desc.Comments)
		if err != nil {
			return append(out, opened), fmt.Errorf("pull request #%d: the rest of its description: %w", got.Number, err)
		}
		if opened.Action == string(forge.PullRequestUnchanged) && res.Writes() > 0 {
			opened.Action = string(forge.PullRequestUpdated)
		}
		out = append(out, opened)
	}
	return out, nil
}

// Text is the pull request as bump prints it: "KEY: pull request #N
// ACTION: URL", then a line per rewritten value.
func (p Opened) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: pull request #%d %s: %s\n", p.Policy, p.Number, p.Action, p.URL)
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "  %s:%d  %s -> %s\n", c.File, c.Line, c.Old, c.New)
	}
	return b.String()
}

func execTemplate(t *template.Template, f Fields) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, f); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
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
