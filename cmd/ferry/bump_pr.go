package main

import (
	"context"
	"encoding/json"
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
// of prFields).
const (
	defaultBranch        = "ferry/bump/{{.Namespace}}/{{.Name}}"
	defaultTitle         = "Bump {{.Image}} to {{.Tag}}"
	defaultGroupedBranch = "ferry/bump/all"
	defaultGroupedTitle  = "Bump {{.Count}} image(s)"
	defaultAuthor        = "ferry <ferry@localhost>"
)

// prFields are what the branch and title templates can use. For a grouped
// pull request, Policy, Namespace, Name, Image and Tag are those of the
// first policy.
type prFields struct {
	Policy, Namespace, Name, Image, Tag string
	Count                               int
}

// openedPR is one line of the pull-requests step output.
type openedPR struct {
	Policy string `json:"policy"`
	Number int    `json:"number"`
	URL    string `json:"url"`
	Action string `json:"action"` // created, updated or unchanged
}

// runBumpPR commits each update on its own branch (from the checked-out
// commit), force-pushes the branches and opens or updates one pull
// request per branch. Everything that can fail before a push (templates,
// the repository, the forge, every commit) is done first.
func runBumpPR(ctx context.Context, e *env, o *bumpOptions, root string, markers []images.Marker, res *images.ScanResult) error {
	tmpl, err := prTemplates(o)
	if err != nil {
		return err
	}
	repo, err := gitrepo.OpenCommitter(root, o.base)
	if errors.Is(err, gitrepo.ErrDetached) {
		return errors.New("--pr: HEAD is detached: name the pull requests' base branch with --base")
	}
	if err != nil {
		return fmt.Errorf("--pr: %w", err)
	}
	updates, err := images.Updates(markers, res, repo.Read, o.group)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings() {
		fmt.Fprintln(e.stderr, "ferry: warning: "+w)
	}
	if len(updates) == 0 {
		fmt.Fprintln(e.stderr, "ferry: every marked image is at its policy's latest tag; no pull request")
		e.output("pull-requests", "[]")
		return nil
	}
	token := e.token()
	if token == "" {
		return errors.New("--pr: no token: set FERRY_TOKEN, GITHUB_TOKEN or GITEA_TOKEN (or the step's token input)")
	}
	f, err := openForge(e, o.forge)
	if err != nil {
		return fmt.Errorf("--pr: %w", err)
	}
	all, err := preparePRs(tmpl, repo, updates)
	if err != nil {
		return err
	}
	var out []openedPR
	for _, p := range all {
		pushed, err := repo.Push(ctx, o.remote, p.commit, p.branch, token)
		if err != nil {
			return fmt.Errorf("pushing %s: %w", p.branch, err)
		}
		pr, action, err := forge.SyncPullRequest(ctx, f, p.branch, repo.BaseBranch, p.title, p.body, pushed)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: pull request #%d %s: %s\n", p.u.Key, pr.Number, action, pr.URL)
		for _, c := range p.u.Changes() {
			fmt.Fprintf(e.stdout, "  %s:%d  %s -> %s\n", c.File, c.Line, c.Old, c.New)
		}
		out = append(out, openedPR{Policy: p.u.Key, Number: pr.Number, URL: pr.URL, Action: string(action)})
	}
	return reportPRs(e, out, res.Warnings())
}

// prTemplate is how the pull requests are written: the branch and title
// templates and the commits' author, each checked before anything else.
type prTemplate struct {
	branch, title *template.Template
	author        *mail.Address
}

func prTemplates(o *bumpOptions) (*prTemplate, error) {
	bs, ts := o.branch, o.title
	if bs == "" {
		bs = defaultBranch
		if o.group {
			bs = defaultGroupedBranch
		}
	}
	if ts == "" {
		ts = defaultTitle
		if o.group {
			ts = defaultGroupedTitle
		}
	}
	t := &prTemplate{}
	var err error
	if t.branch, err = template.New("branch").Option("missingkey=error").Parse(bs); err != nil {
		return nil, fmt.Errorf("--branch %q: %v", bs, err)
	}
	if t.title, err = template.New("title").Option("missingkey=error").Parse(ts); err != nil {
		return nil, fmt.Errorf("--title %q: %v", ts, err)
	}
	if t.author, err = mail.ParseAddress(o.author); err != nil {
		return nil, fmt.Errorf("--author %q: want \"Name <email>\": %v", o.author, err)
	}
	return t, nil
}

func execTemplate(t *template.Template, f prFields) (string, error) {
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

// preparedPR is one pull request, committed and ready to push.
type preparedPR struct {
	u                   images.Update
	branch, title, body string
	commit              string
}

// preparePRs names each update's branch and title from the templates and
// commits it; nothing is pushed yet, so a bad template or a commit that
// fails stops the run before anything leaves the machine.
func preparePRs(tmpl *prTemplate, repo *gitrepo.Committer, updates []images.Update) ([]preparedPR, error) {
	var all []preparedPR
	seen := map[string]string{}
	for _, u := range updates {
		r := u.Results[0]
		fields := prFields{Policy: r.Policy.ID(), Namespace: r.Policy.Namespace, Name: r.Policy.Name, Image: r.Policy.Image, Tag: r.Tag, Count: len(u.Results)}
		branch, err := execTemplate(tmpl.branch, fields)
		if err != nil {
			return nil, fmt.Errorf("--branch: %w", err)
		}
		if prev, dup := seen[branch]; dup {
			return nil, fmt.Errorf("--branch: %s and %s both make branch %q; the template must tell policies apart", prev, u.Key, branch)
		}
		seen[branch] = u.Key
		if err := gitrepo.CheckBranchName(branch); err != nil {
			return nil, fmt.Errorf("--branch: %w", err)
		}
		title, err := execTemplate(tmpl.title, fields)
		if err != nil {
			return nil, fmt.Errorf("--title: %w", err)
		}
		body := u.Body()
		commit, err := repo.Commit(updateFiles(u), title+"\n\n"+body, tmpl.author.Name, tmpl.author.Address)
		if err != nil {
			return nil, err
		}
		all = append(all, preparedPR{u, branch, title, body, commit})
	}
	return all, nil
}

// reportPRs sets the pull-requests output and writes the step summary.
func reportPRs(e *env, out []openedPR, warnings []string) error {
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	e.output("pull-requests", string(b))
	var md strings.Builder
	md.WriteString("### ferry bump\n\n| policy | pull request | |\n|---|---|---|\n")
	for _, p := range out {
		fmt.Fprintf(&md, "| %s | [#%d](%s) | %s |\n", markdown.Code(p.Policy), p.Number, p.URL, p.Action)
	}
	for _, w := range warnings {
		fmt.Fprintf(&md, "\n> [!WARNING]\n> %s\n", markdown.Text(w))
	}
	e.summary(md.String())
	return nil
}
