package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/verify"
)

// trustedKeysVar holds the step's trusted-keys input: armored OpenPGP
// keys and SSH public keys.
const trustedKeysVar = "FERRY_TRUSTED_KEYS"

// verifyFlags hold apply's (and drift --heal's) signature verification.
type verifyFlags struct {
	mode string
	rng  bool
	skip bool
	// skipped is set when --skip-verify let an unverified revision
	// through: the run's notifications say so.
	skipped string
}

// register adds the flags; prefix starts each usage ("with --heal: ").
func (v *verifyFlags) register(f *pflag.FlagSet, prefix string) {
	f.StringVar(&v.mode, "verify", "", prefix+"apply only revisions signed by a trusted key: HEAD, Tag or TagAndHEAD (at least: ferry.yaml's verify, a GitRepository's spec.verify and the mode the last apply was held to hold too); keys from $"+trustedKeysVar)
	f.BoolVar(&v.rng, "verify-range", false, prefix+"also verify every commit since the last applied revision, so an unsigned commit cannot hide behind a signed merge")
	f.BoolVar(&v.skip, "skip-verify", false, prefix+"apply without verifying signatures; said in the log and the step summary")
}

// verifyTarget is what verification reads of a target: its last apply's
// inventory, and a reader of its cluster's Secrets.
type verifyTarget struct {
	target    *config.Target
	inventory *kube.Inventory
}

// before checks the signatures of the revision about to be applied to
// targets (check) before anything is written: the targets' inventories
// are read (get only) for the revision and the mode their last apply
// recorded. It returns the mode to record.
func (v *verifyFlags) before(ctx context.Context, e *env, cluster *clusterFlags, repo *config.Repo, targets []*config.Target, revision, inventoryNS string) (string, error) {
	vts := make([]verifyTarget, len(targets))
	for i, t := range targets {
		vts[i].target = t
		c, err := cluster.client(ctx, e, t)
		if err != nil {
			continue // reported by the apply, which needs the client too
		}
		if vts[i].inventory, err = c.ReadInventory(ctx, t.Name, inventoryNS); err != nil {
			return "", fmt.Errorf("target %q: reading the last apply: %w", t.Name, err)
		}
	}
	return v.check(ctx, e, repo, revision, vts, cluster.clusterReader(e))
}

// check verifies the revision being applied before anything is written,
// and returns the mode to record on the inventories. The policy is the
// strongest any source asks; the keys come from the step's input, the
// Secrets the policy names and the repository's key files as of the last
// applied revision, never from the revision itself.
func (v *verifyFlags) check(ctx context.Context, e *env, repo *config.Repo, revision string, targets []verifyTarget, read config.ClusterReader) (string, error) {
	var pol verify.Policy
	if err := pol.Ask(v.mode, "--verify"); err != nil {
		return "", err
	}
	asked := repo.Verification()
	for i, m := range asked.Modes {
		if err := pol.Ask(m, asked.Sources[i]); err != nil {
			return "", err
		}
	}
	var last []string
	for _, t := range targets {
		if t.inventory == nil {
			continue
		}
		if err := pol.Ask(t.inventory.Verify, "the last apply of target "+t.target.Name); err != nil {
			return "", err
		}
		if r := t.inventory.Revision; r != "" && r != revision && !containsString(last, r) {
			last = append(last, r)
		}
	}
	pol.Range = v.rng || asked.Range
	if pol.Range && pol.Mode == "" {
		pol.Mode = verify.HEAD
	}
	if pol.Mode == "" {
		return "", nil
	}
	if v.skip {
		msg := "signature verification skipped (--skip-verify): " + kube.ShortRevision(revision) + " was not checked against " + strings.Join(pol.Sources, ", ")
		e.warn("Signature verification skipped", msg)
		e.Summary("> [!WARNING]\n> **Signature verification skipped** (`--skip-verify`): " + kube.ShortRevision(revision) + " was applied unverified.\n")
		v.skipped = "Signature verification skipped (--skip-verify): " + kube.ShortRevision(revision) + " is unverified."
		return string(pol.Mode), nil
	}
	g, err := git.PlainOpenWithOptions(repo.Root, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", fmt.Errorf("signature verification needs the repository's history: %w", err)
	}
	keys, err := v.keys(ctx, e, g, repo.Root, asked, last, targets, read)
	if err != nil {
		return "", err
	}
	rev, err := g.ResolveRevision(plumbing.Revision(revision))
	if err != nil {
		return "", fmt.Errorf("revision %s: %w", revision, err)
	}
	var since []plumbing.Hash
	if pol.Range {
		for _, l := range last {
			since = append(since, plumbing.NewHash(l))
		}
	}
	if len(since) == 0 {
		since = []plumbing.Hash{plumbing.ZeroHash}
	}
	var signed []verify.Signed
	for _, s := range since {
		got, err := verify.Revision(g, *rev, verify.Options{Mode: pol.Mode, Keys: keys, Since: s})
		if err != nil {
			return "", fmt.Errorf("signature verification (%s): %w", strings.Join(pol.Sources, ", "), err)
		}
		signed = append(signed, got...)
	}
	lines := verifiedLines(signed)
	fmt.Fprintln(e.stderr, "ferry: verified "+strings.Join(lines, "; "))
	e.Summary("**Signatures verified** (" + string(pol.Mode) + "): " + strings.Join(lines, "; ") + "\n")
	return string(pol.Mode), nil
}

// mark says in each event that verification was skipped, if it was.
func (v *verifyFlags) mark(events map[string][]event.Event) map[string][]event.Event {
	if v.skipped == "" {
		return events
	}
	for _, evs := range events {
		for i := range evs {
			evs[i].Message = v.skipped + " " + evs[i].Message
			if evs[i].Metadata == nil {
				evs[i].Metadata = map[string]string{}
			}
			evs[i].Metadata["verification"] = "skipped"
		}
	}
	return events
}

// keys are the trusted keys: the step's input, the Secrets the policy
// names (their FERRY_SECRET_<NAME>_* variables, else the cluster's), and
// the key files at each last applied revision.
func (v *verifyFlags) keys(ctx context.Context, e *env, g *git.Repository, root string, asked config.Verification, last []string, targets []verifyTarget, read config.ClusterReader) (verify.Keys, error) {
	var keys verify.Keys
	if in := e.getenv(trustedKeysVar); strings.TrimSpace(in) != "" {
		k, err := verify.ParseKeys("the trusted-keys input ("+trustedKeysVar+")", []byte(in))
		if err != nil {
			return keys, err
		}
		keys.Add(k)
	}
	for _, ref := range asked.SecretRefs {
		k, err := secretKeys(ctx, e, ref, targets, read)
		if err != nil {
			return keys, err
		}
		keys.Add(k)
	}
	if len(last) == 0 && len(asked.KeyFiles) > 0 {
		e.warn("Signature verification", "verify.keys are read as of the last applied revision, and no target has one yet: this first apply trusts only the trusted-keys input and secretRef keys")
	}
	prefix, err := inRepository(g, root)
	if err != nil {
		return keys, err
	}
	for _, l := range last {
		// The key files the revision names, and those the last applied
		// one named: dropping verify.keys does not drop the keys.
		paths := slices.Clone(asked.KeyFiles)
		if before, err := verify.FileAt(g, plumbing.NewHash(l), path.Join(prefix, config.FileName)); err == nil {
			if f, err := config.ParseFile(before); err == nil && f.Verify != nil {
				paths = append(paths, f.Verify.Keys...)
			}
		}
		for i := range paths {
			paths[i] = path.Join(prefix, paths[i])
		}
		k, err := verify.KeysAt(g, plumbing.NewHash(l), slices.Compact(slices.Sorted(slices.Values(paths))))
		if err != nil {
			return keys, err
		}
		keys.Add(k)
	}
	return keys, nil
}

// secretKeys reads the keys of a Secret: its FERRY_SECRET_<NAME>_*
// variables, else the Secret in the first target's cluster (get only).
func secretKeys(ctx context.Context, e *env, ref config.SecretRef, targets []verifyTarget, read config.ClusterReader) (verify.Keys, error) {
	ns := ref.Namespace
	if ns == "" {
		ns = config.DefaultNamespace
	}
	name := "Secret/" + ns + "/" + ref.Name
	var keys verify.Keys
	if prefix, ok := images.SecretEnv(ref.Name); ok {
		var vars []string
		for _, kv := range e.environ() {
			// A key's spelling starts with a letter or digit: a "_" next
			// is another Secret's (git-keys' variables to git's prefix).
			k, _, _ := strings.Cut(kv, "=")
			if rest, ok := strings.CutPrefix(k, prefix+"_"); ok && rest != "" && rest[0] != '_' {
				vars = append(vars, k)
			}
		}
		sort.Strings(vars)
		for _, k := range vars {
			got, err := verify.ParseKeys(name+" ("+k+")", []byte(e.getenv(k)))
			if err != nil {
				return keys, err
			}
			keys.Add(got)
		}
		if len(vars) > 0 {
			return keys, nil
		}
	}
	if read == nil {
		return keys, nil // a diff reaches no cluster: the variables or nothing
	}
	if len(targets) == 0 {
		return keys, fmt.Errorf("%s (verify secretRef): no FERRY_SECRET_ variables and no cluster to read it from", name)
	}
	s, err := read(ctx, targets[0].target, "Secret", ns, ref.Name)
	if err != nil {
		return keys, fmt.Errorf("%s (verify secretRef): %w", name, err)
	}
	data, _ := s.Object["data"].(map[string]any)
	for _, k := range sortedKeys(data) {
		raw, _ := data[k].(string)
		b, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return keys, fmt.Errorf("%s key %s: %w", name, k, err)
		}
		got, err := verify.ParseKeys(name+" key "+k, b)
		if err != nil {
			return keys, err
		}
		keys.Add(got)
	}
	if keys.Empty() {
		return keys, errors.New(name + " (verify secretRef) holds no keys")
	}
	return keys, nil
}

// inRepository is root's path in g's work tree ("" at its top), slashed.
func inRepository(g *git.Repository, root string) (string, error) {
	wt, err := g.Worktree()
	if err != nil {
		return "", err
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", err
	}
	abs, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("repository %s is not inside its Git work tree %s", root, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

func verifiedLines(signed []verify.Signed) []string {
	var out []string
	for _, s := range signed {
		out = append(out, s.Object+" (author "+s.Author+") signed by "+s.Signer)
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// prSignatures says how the head's commits verify with the keys the base
// trusts: the trusted-keys input, and the key files and Secret variables
// of the base's ferry.yaml verify block. Nil when no key is known and
// none is required.
func prSignatures(ctx context.Context, e *env, dir, base, head string, require bool) (*diff.Signatures, error) {
	g, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	prefix, err := inRepository(g, dir)
	if err != nil {
		return nil, err
	}
	baseHash, headHash := plumbing.NewHash(base), plumbing.NewHash(head)
	var asked config.Verification
	if raw, err := verify.FileAt(g, baseHash, path.Join(prefix, config.FileName)); err == nil {
		if f, err := config.ParseFile(raw); err == nil && f.Verify != nil {
			asked.KeyFiles = f.Verify.Keys
			if f.Verify.SecretRef != nil {
				asked.SecretRefs = []config.SecretRef{*f.Verify.SecretRef}
			}
		}
	}
	var v verifyFlags
	keys, err := v.keys(ctx, e, g, dir, asked, []string{base}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("the base's trusted keys: %w", err)
	}
	if keys.Empty() {
		if require {
			return nil, errors.New("--require-signed: no trusted keys: give the trusted-keys input (" + trustedKeysVar + ") or verify.keys in the base's ferry.yaml")
		}
		return nil, nil
	}
	sum, err := verify.Commits(g, baseHash, headHash, keys)
	if err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	out := &diff.Signatures{Commits: sum.Commits, Trusted: sum.Trusted}
	for _, r := range sum.Refused {
		out.Refused = append(out.Refused, diff.SignatureRefusal{Commit: strings.TrimPrefix(r.Object, "commit "), Author: r.Author, Signer: r.Signer, Reason: r.Reason})
	}
	return out, nil
}
