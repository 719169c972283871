package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/images"
)

type bumpOptions struct {
	repo           string
	policies       []string
	dryRun         bool
	pr             bool
	insecure       []string
	webhookPayload string
	maxTags        int
	timeout        time.Duration
	concurrency    int

	// --pr
	base, remote, forge string
	branch, title       string
	group               bool
	author              string
}

func newBumpCmd(e *env) *cobra.Command {
	o := &bumpOptions{}
	def := images.DefaultScanOptions()
	cmd := &cobra.Command{
		Use:   "bump [--policy NAME...] [--dry-run | --pr]",
		Short: "Scan registries for new image tags and rewrite the marked image lines",
		Long: `Bump finds the repository's image policies (ferry.yaml's imagePolicies, or
else its Flux ImageRepository + ImagePolicy objects), lists the tags of
each image repository once, selects each policy's latest tag as Flux does
(semver range, numerical or alphabetical order, after exclusionList and
filterTags), records its digest, and rewrites the YAML lines that carry a
setter marker:

  image: ghcr.io/org/app:1.24.0 # {"$imagepolicy": "flux-system:app"}
  newTag: 1.24.0                # {"$imagepolicy": "flux-system:app:tag"}
  newName: ghcr.io/org/app      # {"$imagepolicy": "flux-system:app:name"}

Only the marked values change; comments, quoting, indentation and line
endings stay as they are. Only policies some marker uses are scanned. A
marker naming a policy the repository does not declare is an error.
A policy no tag matches is a warning; nothing is changed for it.

Registry credentials, for each policy the first that exists:
  FERRY_SECRET_<SECRETREF>_USERNAME / _PASSWORD  for an ImageRepository's
      spec.secretRef (regcred: FERRY_SECRET_REGCRED_USERNAME)
  FERRY_REGISTRY_<HOST>_USERNAME / _PASSWORD  per registry host, upper-cased,
      other characters as _ (ghcr.io: FERRY_REGISTRY_GHCR_IO_USERNAME)
  the "auths" of $DOCKER_CONFIG/config.json (default ~/.docker/config.json),
      as docker login writes it
  anonymous access.

With --pr nothing in the work tree changes: for each policy with a change,
ferry commits the rewritten files on top of the checked-out commit (with
go-git), force-pushes the commit to the policy's branch with the token
(FERRY_TOKEN, GITHUB_TOKEN or GITEA_TOKEN) and opens a pull request into
the checked-out branch, or updates the one already open from that branch
(title and body). The body has a table: file, image, old -> new tag, digest.
Re-running with no newer tag changes nothing. --group makes one pull
request for all policies. The forge (GitHub or Gitea) and the repository
come from the Actions environment (GITHUB_REPOSITORY, GITHUB_API_URL,
GITEA_ACTIONS) or --forge.

With --webhook-payload only the policies of the pushed image are scanned:
the file holds a Harbor push webhook or a repository_dispatch event (or
its client_payload) naming {"image": "REGISTRY/REPOSITORY"}. In an Actions
step started by a repository_dispatch (or, on Gitea, a workflow_dispatch
with an image input) the event itself is read the same way; without an
image in it every policy is scanned.

Exit status: 0 done (also when nothing changed or a policy matched no
tag), 2 any error: an invalid policy, a marker naming an unknown policy,
a registry that refuses the credentials or cannot be reached, a push or
forge call that fails. On an error found before writing, no file is
changed and no branch is pushed.`,
		Example: `  # rewrite the marked lines in place
  ferry bump --repo .

  # show the change as a unified diff, change nothing
  ferry bump --dry-run

  # one policy, from a registry served over plain HTTP
  ferry bump --policy flux-system/app --insecure-registry registry.lan:5000

  # only the image a registry webhook announced
  ferry bump --webhook-payload "$GITHUB_EVENT_PATH"

  # one pull request per policy (a scheduled job with GITHUB_TOKEN in its env)
  ferry bump --pr`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBump(cmd, e, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", ".", "repository root")
	f.StringSliceVar(&o.policies, "policy", nil, "scan only these policies (`NAME`, NAMESPACE/NAME or NAMESPACE:NAME; repeatable)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the change as a unified diff instead of writing it")
	f.BoolVar(&o.pr, "pr", false, "open or update one pull request per policy instead of writing the work tree")
	f.StringSliceVar(&o.insecure, "insecure-registry", nil, "registry `HOST` reached over plain HTTP (repeatable)")
	f.StringVar(&o.webhookPayload, "webhook-payload", "", "registry push event (`FILE`): scan only the policies of the image it names")
	f.IntVar(&o.maxTags, "max-tags", def.MaxTags, "most tags read per image repository")
	f.DurationVar(&o.timeout, "timeout", def.Timeout, "longest time to read one image repository")
	f.IntVar(&o.concurrency, "concurrency", def.Concurrency, "image repositories read at a time per registry")
	f.StringVar(&o.base, "base", "", "with --pr: the pull requests' base `BRANCH` (default: the checked-out branch)")
	f.StringVar(&o.remote, "remote", "origin", "with --pr: the Git remote (`NAME` or URL) the branches are pushed to")
	f.StringVar(&o.forge, "forge", "", "with --pr: github or gitea (default: detected from the Actions environment)")
	f.StringVar(&o.branch, "branch", "", "with --pr: branch name `TEMPLATE` (Go template: .Policy .Namespace .Name .Image .Tag .Count; default "+defaultBranch+", grouped "+defaultGroupedBranch+")")
	f.StringVar(&o.title, "title", "", "with --pr: pull request title `TEMPLATE` (default \""+defaultTitle+"\", grouped \""+defaultGroupedTitle+"\")")
	f.BoolVar(&o.group, "group", false, "with --pr: one pull request for every policy instead of one per policy")
	f.StringVar(&o.author, "author", defaultAuthor, "with --pr: the commits' `AUTHOR`, as \"Name <email>\"")
	return cmd
}

func runBump(cmd *cobra.Command, e *env, o *bumpOptions) error {
	if o.dryRun && o.pr {
		return errors.New("--dry-run and --pr exclude each other")
	}
	ctx := cmd.Context()
	root, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("repository %s: not a directory", o.repo)
	}
	policies, err := config.ImagePolicies(root)
	if err != nil {
		return err
	}
	markers, err := images.FindMarkers(root)
	if err != nil {
		return err
	}
	if err := images.UnknownPolicies(markers, policies); err != nil {
		return err
	}
	selected, err := selectPolicies(policies, o.policies)
	if err != nil {
		return err
	}
	imgs, source, err := e.pushedImages(o.webhookPayload)
	if err != nil {
		return err
	}
	if len(imgs) > 0 {
		selected = images.ForImages(selected, imgs)
		if len(selected) == 0 {
			fmt.Fprintf(e.stderr, "ferry: %s names %s; no image policy scans it\n", source, strings.Join(imgs, ", "))
			return nil
		}
	}
	// Every selected policy is validated, marked or not.
	var errs []error
	for _, p := range selected {
		if _, err := p.Compile(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	used := map[string]bool{}
	for _, m := range markers {
		used[m.Policy] = true
	}
	var scan []*images.Policy
	for _, p := range selected {
		if used[p.Ref()] {
			scan = append(scan, p)
		} else {
			fmt.Fprintf(e.stderr, "ferry: %s: no marker uses it; not scanned\n", p.ID())
		}
	}
	if len(scan) == 0 {
		fmt.Fprintln(e.stderr, "ferry: no marked image policy to scan")
		return nil
	}
	opts := images.DefaultScanOptions()
	opts.InsecureRegistries = o.insecure
	opts.MaxTags, opts.Timeout, opts.Concurrency = o.maxTags, o.timeout, o.concurrency
	if opts.Credentials, err = e.registryCredentials(scan); err != nil {
		return err
	}
	res, err := images.Scan(ctx, scan, opts)
	if err != nil {
		return err
	}
	if o.pr {
		return runBumpPR(ctx, e, o, root, markers, res)
	}
	cs, err := images.Rewrite(root, markers, res.ByRef())
	if err != nil {
		return err
	}
	for _, w := range res.Warnings() {
		fmt.Fprintln(e.stderr, "ferry: warning: "+w)
	}
	e.summary(bumpMarkdown(res, cs, o.dryRun))
	if o.dryRun {
		printBumpReport(e.stderr, res, cs, "would change")
		_, err := io.WriteString(e.stdout, cs.UnifiedDiff())
		return err
	}
	if err := cs.Write(); err != nil {
		return err
	}
	printBumpReport(e.stdout, res, cs, "changed")
	return nil
}

// pushedImages returns the image repositories a registry push event
// names, and where it came from: the --webhook-payload file, or else, in
// an Actions step started by a repository_dispatch or workflow_dispatch
// whose payload names an "image" (or "images"), that event. None (scan
// every policy) for any other event, such as a schedule.
func (e *env) pushedImages(file string) ([]string, string, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("--webhook-payload: %w", err)
		}
		imgs, err := images.ParseWebhook(data)
		if err != nil {
			return nil, "", fmt.Errorf("--webhook-payload %s: %w", file, err)
		}
		return imgs, "the webhook", nil
	}
	ev, err := e.event()
	if err != nil || ev == nil || ev.Dispatch == nil {
		return nil, "", err
	}
	if ev.Dispatch.String("image") == "" && ev.Dispatch.ClientPayload["images"] == nil {
		return nil, "", nil // dispatched by hand, no image: scan everything
	}
	payload, err := json.Marshal(ev.Dispatch.ClientPayload)
	if err != nil {
		return nil, "", err
	}
	imgs, err := images.ParseWebhook(payload)
	if err != nil {
		return nil, "", fmt.Errorf("the %s event (GITHUB_EVENT_PATH): %w", ev.Name, err)
	}
	return imgs, "the " + ev.Name + " event", nil
}

// selectPolicies returns the policies --policy names (all when none):
// NAMESPACE/NAME, NAMESPACE:NAME, or NAME when only one namespace has it.
func selectPolicies(all []*images.Policy, names []string) ([]*images.Policy, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []*images.Policy
	seen := map[*images.Policy]bool{}
	for _, n := range names {
		ref := strings.Replace(n, "/", ":", 1)
		var found []*images.Policy
		for _, p := range all {
			if p.Ref() == ref || !strings.Contains(ref, ":") && p.Name == ref {
				found = append(found, p)
			}
		}
		switch len(found) {
		case 0:
			var have []string
			for _, p := range all {
				have = append(have, p.Namespace+"/"+p.Name)
			}
			if len(have) == 0 {
				return nil, fmt.Errorf("--policy %q: the repository declares no image policy", n)
			}
			return nil, fmt.Errorf("--policy %q: no such image policy (the repository has %s)", n, strings.Join(have, ", "))
		case 1:
		default:
			return nil, fmt.Errorf("--policy %q is ambiguous: write NAMESPACE/NAME (%s/%s or %s/%s)", n, found[0].Namespace, n, found[1].Namespace, n)
		}
		if !seen[found[0]] {
			seen[found[0]] = true
			out = append(out, found[0])
		}
	}
	return out, nil
}

// registryCredentials reads the credentials of the policies' registries
// and secretRefs from the environment, and DOCKER_CONFIG's config.json.
func (e *env) registryCredentials(ps []*images.Policy) (images.Credentials, error) {
	var c images.Credentials
	path := ""
	if dir := e.getenv("DOCKER_CONFIG"); dir != "" {
		path = filepath.Join(dir, "config.json")
	} else if home := e.getenv("HOME"); home != "" {
		path = filepath.Join(home, ".docker", "config.json")
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return c, fmt.Errorf("docker config: %w", err)
		}
		c.DockerConfig = data
	}
	var secrets []string
	basic := func(prefix string) (images.Basic, bool) {
		u, p := e.getenv(prefix+"_USERNAME"), e.getenv(prefix+"_PASSWORD")
		if u == "" {
			return images.Basic{}, false
		}
		secrets = append(secrets, p)
		return images.Basic{Username: u, Password: p, Source: prefix + "_USERNAME/_PASSWORD"}, true
	}
	for _, p := range ps {
		if host := p.Registry(); host != "" {
			if b, ok := basic(images.RegistryEnv(host)); ok {
				if c.Registries == nil {
					c.Registries = map[string]images.Basic{}
				}
				c.Registries[host] = b
			}
		}
		if p.SecretRef != "" {
			if b, ok := basic(images.SecretEnv(p.SecretRef)); ok {
				if c.Secrets == nil {
					c.Secrets = map[string]images.Basic{}
				}
				c.Secrets[p.SecretRef] = b
			}
		}
	}
	if e.gha != nil {
		if err := e.gha.Mask(secrets...); err != nil {
			return c, err
		}
	}
	return c, nil
}

// printBumpReport prints, per scanned policy, the tag it selected and the
// lines that change.
func printBumpReport(w io.Writer, res *images.ScanResult, cs *images.ChangeSet, verb string) {
	byPolicy := map[string][]images.Change{}
	for _, c := range cs.Changes() {
		byPolicy[c.Policy.Ref()] = append(byPolicy[c.Policy.Ref()], c)
	}
	for _, r := range res.Policies {
		if r.Tag == "" {
			fmt.Fprintf(w, "%s: no matching tag\n", r.Policy.ID())
			continue
		}
		changes := byPolicy[r.Policy.Ref()]
		state := "up to date"
		if len(changes) > 0 {
			state = fmt.Sprintf("%s %d line(s)", verb, len(changes))
		}
		fmt.Fprintf(w, "%s: %s (%s): %s\n", r.Policy.ID(), r.Tag, r.Digest, state)
		for _, c := range changes {
			fmt.Fprintf(w, "  %s:%d  %s -> %s\n", c.File, c.Line, c.Old, c.New)
		}
	}
}

// bumpMarkdown is the step summary: a table of the changed lines.
func bumpMarkdown(res *images.ScanResult, cs *images.ChangeSet, dryRun bool) string {
	var b strings.Builder
	title := "ferry bump"
	if dryRun {
		title += " (dry run)"
	}
	fmt.Fprintf(&b, "### %s\n\n", title)
	changes := cs.Changes()
	if len(changes) == 0 {
		b.WriteString("Every marked image is at its policy's latest tag.\n")
	} else {
		b.WriteString("| policy | file | image | old → new | digest |\n|---|---|---|---|---|\n")
		sort.SliceStable(changes, func(i, j int) bool { return changes[i].Policy.ID() < changes[j].Policy.ID() })
		digest := res.ByRef()
		for _, c := range changes {
			fmt.Fprintf(&b, "| %s | `%s:%d` | `%s` | `%s` → `%s` | `%s` |\n", c.Policy.ID(), c.File, c.Line, c.Policy.Image, c.Old, c.New, digest[c.Policy.Ref()].Digest)
		}
	}
	for _, w := range res.Warnings() {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> %s\n", w)
	}
	return b.String()
}
