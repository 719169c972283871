package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/mail"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	gogit "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/images"
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
	branchT, titleT, err := prTemplates(o)
	if err != nil {
		return err
	}
	author, err := mail.ParseAddress(o.author)
	if err != nil {
		return fmt.Errorf("--author %q: want \"Name <email>\": %v", o.author, err)
	}
	repo, err := openBumpRepo(root, o.base)
	if err != nil {
		return err
	}
	updates, err := images.Updates(markers, res, repo.read, o.group)
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
	type prepared struct {
		u                   images.Update
		branch, title, body string
		commit              plumbing.Hash
	}
	var all []prepared
	seen := map[string]string{}
	for _, u := range updates {
		r := u.Results[0]
		fields := prFields{Policy: r.Policy.ID(), Namespace: r.Policy.Namespace, Name: r.Policy.Name, Image: r.Policy.Image, Tag: r.Tag, Count: len(u.Results)}
		branch, err := execTemplate(branchT, fields)
		if err != nil {
			return fmt.Errorf("--branch: %w", err)
		}
		if prev, dup := seen[branch]; dup {
			return fmt.Errorf("--branch: %s and %s both make branch %q; the template must tell policies apart", prev, u.Key, branch)
		}
		seen[branch] = u.Key
		if err := checkBranchName(branch); err != nil {
			return fmt.Errorf("--branch: %w", err)
		}
		title, err := execTemplate(titleT, fields)
		if err != nil {
			return fmt.Errorf("--title: %w", err)
		}
		body := u.Body()
		commit, err := repo.commit(u, title+"\n\n"+body, object.Signature{Name: author.Name, Email: author.Address})
		if err != nil {
			return err
		}
		all = append(all, prepared{u, branch, title, body, commit})
	}
	var out []openedPR
	for _, p := range all {
		pushed, err := repo.push(ctx, o.remote, p.commit, p.branch, token)
		if err != nil {
			return fmt.Errorf("pushing %s: %w", p.branch, err)
		}
		pr, err := f.OpenPullRequest(ctx, p.branch, repo.baseBranch)
		if err != nil {
			return fmt.Errorf("pull request for %s: %w", p.branch, err)
		}
		action := "unchanged"
		switch {
		case pr == nil:
			created, err := f.CreatePullRequest(ctx, forge.NewPullRequest{Title: p.title, Body: p.body, Head: p.branch, Base: repo.baseBranch})
			if err != nil {
				return fmt.Errorf("opening a pull request for %s: %w", p.branch, err)
			}
			pr, action = &created, "created"
		case pr.Title != p.title || strings.TrimSpace(pr.Body) != strings.TrimSpace(p.body):
			if err := f.EditPullRequest(ctx, pr.Number, p.title, p.body); err != nil {
				return fmt.Errorf("updating pull request #%d: %w", pr.Number, err)
			}
			action = "updated"
		case pushed:
			action = "updated"
		}
		fmt.Fprintf(e.stdout, "%s: pull request #%d %s: %s\n", p.u.Key, pr.Number, action, pr.URL)
		for _, c := range p.u.Changes() {
			fmt.Fprintf(e.stdout, "  %s:%d  %s -> %s\n", c.File, c.Line, c.Old, c.New)
		}
		out = append(out, openedPR{Policy: p.u.Key, Number: pr.Number, URL: pr.URL, Action: action})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	e.output("pull-requests", string(b))
	var md strings.Builder
	md.WriteString("### ferry bump\n\n| policy | pull request | |\n|---|---|---|\n")
	for _, p := range out {
		fmt.Fprintf(&md, "| `%s` | [#%d](%s) | %s |\n", p.Policy, p.Number, p.URL, p.Action)
	}
	for _, w := range res.Warnings() {
		fmt.Fprintf(&md, "\n> [!WARNING]\n> %s\n", w)
	}
	e.summary(md.String())
	return nil
}

func prTemplates(o *bumpOptions) (branch, title *template.Template, err error) {
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
	if branch, err = template.New("branch").Option("missingkey=error").Parse(bs); err != nil {
		return nil, nil, fmt.Errorf("--branch %q: %v", bs, err)
	}
	if title, err = template.New("title").Option("missingkey=error").Parse(ts); err != nil {
		return nil, nil, fmt.Errorf("--title %q: %v", ts, err)
	}
	return branch, title, nil
}

func execTemplate(t *template.Template, f prFields) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, f); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// checkBranchName refuses names git would (a subset of git
// check-ref-format's rules).
func checkBranchName(b string) error {
	switch {
	case b == "", strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, ".lock"),
		strings.Contains(b, ".."), strings.Contains(b, "//"), strings.Contains(b, "@{"),
		strings.ContainsAny(b, " ~^:?*[\\\t\n"):
		return fmt.Errorf("%q is not a valid branch name", b)
	}
	return plumbing.NewBranchReferenceName(b).Validate()
}

// bumpRepo is the Git repository a bump commits to: new commits on the
// checked-out commit, written to the repository's object store without
// touching the work tree, the index or any local branch.
type bumpRepo struct {
	repo       *gogit.Repository
	prefix     string // the ferry repository's folder in the Git tree, "" or "dir/"
	base       *object.Commit
	baseTree   *object.Tree
	baseBranch string
}

func openBumpRepo(root, baseBranch string) (*bumpRepo, error) {
	repo, err := gogit.PlainOpenWithOptions(root, &gogit.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("--pr: %s is not in a Git repository: %w", root, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("--pr: %w", err)
	}
	rel, err := filepath.Rel(wt.Filesystem.Root(), root)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if rel = filepath.ToSlash(rel); rel != "." {
		prefix = rel + "/"
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("--pr: no checked-out commit: %w", err)
	}
	if baseBranch == "" {
		if !head.Name().IsBranch() {
			return nil, errors.New("--pr: HEAD is detached: name the pull requests' base branch with --base")
		}
		baseBranch = head.Name().Short()
	}
	base, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, err
	}
	tree, err := base.Tree()
	if err != nil {
		return nil, err
	}
	return &bumpRepo{repo: repo, prefix: prefix, base: base, baseTree: tree, baseBranch: baseBranch}, nil
}

// read returns a file of the checked-out commit, by path relative to the
// ferry repository.
func (r *bumpRepo) read(file string) ([]byte, error) {
	f, err := r.baseTree.File(r.prefix + file)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// commit writes the update's files on top of the base commit and returns
// the new commit. Its author and committer time is the base commit's, so
// the same change on the same base is the same commit, and pushing it
// again changes nothing.
func (r *bumpRepo) commit(u images.Update, message string, who object.Signature) (plumbing.Hash, error) {
	files := map[string][]byte{}
	for _, f := range u.Files {
		files[r.prefix+f.Path] = f.New
	}
	tree, err := r.replace(r.baseTree, "", files)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	who.When = r.base.Committer.When
	c := &object.Commit{Author: who, Committer: who, Message: message, TreeHash: tree, ParentHashes: []plumbing.Hash{r.base.Hash}}
	obj := r.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.repo.Storer.SetEncodedObject(obj)
}

// replace returns the hash of tree with the files under dir (slash paths
// from the root) replaced by new content; every file must exist already.
func (r *bumpRepo) replace(tree *object.Tree, dir string, files map[string][]byte) (plumbing.Hash, error) {
	entries := append([]object.TreeEntry(nil), tree.Entries...)
	for i, e := range entries {
		p := path.Join(dir, e.Name)
		if e.Mode == filemode.Dir {
			under := map[string][]byte{}
			for f, b := range files {
				if strings.HasPrefix(f, p+"/") {
					under[f] = b
				}
			}
			if len(under) == 0 {
				continue
			}
			sub, err := r.repo.TreeObject(e.Hash)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if entries[i].Hash, err = r.replace(sub, p, under); err != nil {
				return plumbing.ZeroHash, err
			}
			continue
		}
		b, ok := files[p]
		if !ok {
			continue
		}
		obj := r.repo.Storer.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := w.Write(b); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := w.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		if entries[i].Hash, err = r.repo.Storer.SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.repo.Storer.SetEncodedObject(obj)
}

// push force-pushes commit to branch on remote (a remote's name or a URL),
// with the token as the password. It reports whether the branch moved.
func (r *bumpRepo) push(ctx context.Context, remote string, commit plumbing.Hash, branch, token string) (bool, error) {
	opts := &gogit.PushOptions{
		RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec("+" + commit.String() + ":" + plumbing.NewBranchReferenceName(branch).String())},
		Force:    true,
	}
	url := remote
	if strings.Contains(remote, "://") {
		opts.RemoteURL = remote
	} else {
		opts.RemoteName = remote
		rem, err := r.repo.Remote(remote)
		if err != nil {
			return false, fmt.Errorf("remote %q: %w", remote, err)
		}
		if urls := rem.Config().URLs; len(urls) > 0 {
			url = urls[0]
		}
	}
	// The token goes to HTTP remotes only (a local path in tests).
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		opts.Auth = &githttp.BasicAuth{Username: "x-access-token", Password: token}
	}
	err := r.repo.PushContext(ctx, opts)
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return false, nil
	}
	return err == nil, err
}
