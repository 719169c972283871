package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/images"
)

// Applied is what a target's last apply recorded: the revision, the
// verification mode it was held to and the Secrets its keys came from
// (ParseRecord reads them from the inventory).
type Applied struct {
	Target, Revision, Mode string
	SecretRefs             []config.SecretRef
}

// Record is what an apply records of its verification on the
// inventory: the mode, then the Secrets of keys ("HEAD
// secretRef=flux-system/git-keys"). A revision that drops its verify
// block, or the GitRepository's secretRef, still has its commits checked
// with those keys next time.
func (o Outcome) Record() string {
	rec := string(o.Mode)
	var refs []string
	for _, r := range o.SecretRefs {
		refs = append(refs, secretNamespace(r)+"/"+r.Name)
	}
	if len(refs) > 0 {
		rec += " secretRef=" + strings.Join(slices.Compact(slices.Sorted(slices.Values(refs))), ",")
	}
	return rec
}

// ParseRecord reads a Record.
func ParseRecord(rec string) (mode string, refs []config.SecretRef) {
	mode, rest, _ := strings.Cut(strings.TrimSpace(rec), " ")
	list, ok := strings.CutPrefix(strings.TrimSpace(rest), "secretRef=")
	if !ok {
		return mode, nil
	}
	for r := range strings.SplitSeq(list, ",") {
		if ns, name, ok := strings.Cut(r, "/"); ok && ns != "" && name != "" {
			refs = append(refs, config.SecretRef{Namespace: ns, Name: name})
		}
	}
	return mode, refs
}

// secretNamespace is ref's namespace, flux-system when it names none.
func secretNamespace(ref config.SecretRef) string {
	if ref.Namespace == "" {
		return config.DefaultNamespace
	}
	return ref.Namespace
}

// TrustedKeysVar holds the step's trusted-keys input.
const TrustedKeysVar = "FERRY_TRUSTED_KEYS"

// Sources are where a run finds trusted keys besides the repository.
type Sources struct {
	// TrustedKeys is the step's trusted-keys input.
	TrustedKeys string
	// Environ lists KEY=value: a Secret's FERRY_SECRET_<NAME>_* variables.
	Environ []string
	// ReadSecret reads a Secret's data from a cluster (get); nil reads
	// none.
	ReadSecret func(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// Run is one apply's (or heal's) verification of Revision in the
// repository at Dir (a folder of a Git work tree).
type Run struct {
	Dir, Revision string
	// Mode is the step's --verify; Range its --verify-range; Skip its
	// --skip-verify (the policy is worked out and recorded, nothing is
	// checked).
	Mode  string
	Range bool
	Skip  bool
	// Asked is what the revision's ferry.yaml and GitRepositories ask.
	Asked config.Verification
	// Applied are the targets' last applies.
	Applied []Applied
	Sources Sources
}

// Outcome is a verification's result: the mode it held the revision to
// (to record), who asked, what verified, and notes for the log.
type Outcome struct {
	Revision string
	Mode     Mode
	// SecretRefs are the Secrets keys were read from (or would have
	// been, when skipped): to record.
	SecretRefs []config.SecretRef
	Asked      []string
	Signed     []Signed
	Notes      []string
	Skipped    bool
}

// Log is the outcome's line for the log.
func (o Outcome) Log() string {
	if o.Skipped {
		return "signature verification skipped (--skip-verify): " + shortRev(o.Revision) + " was not checked against " + strings.Join(o.Asked, ", ")
	}
	var lines []string
	for _, s := range o.Signed {
		lines = append(lines, s.Object+" (author "+s.Author+") signed by "+s.Signer)
	}
	return "verified " + strings.Join(lines, "; ")
}

// Markdown is the outcome for the step summary.
func (o Outcome) Markdown() string {
	if o.Skipped {
		return "> [!WARNING]\n> **Signature verification skipped** (`--skip-verify`): " + shortRev(o.Revision) + " was applied unverified.\n"
	}
	return "**Signatures verified** (" + string(o.Mode) + "): " + strings.TrimPrefix(o.Log(), "verified ") + "\n"
}

// EventNote is what every notification of a run that skipped says; ""
// when nothing was skipped.
func (o Outcome) EventNote() string {
	if !o.Skipped {
		return ""
	}
	return "Signature verification skipped (--skip-verify): " + shortRev(o.Revision) + " is unverified."
}

// shortRev is a revision's first 12 characters, as the rest of ferry
// shows them.
func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

// Policy is the mode and range r is held to: the strongest any source
// asks, the mode the targets' last applies recorded included.
func (r Run) Policy() (Policy, error) {
	var pol Policy
	if err := pol.Ask(r.Mode, "--verify"); err != nil {
		return pol, err
	}
	for i, m := range r.Asked.Modes {
		if err := pol.Ask(m, r.Asked.Sources[i]); err != nil {
			return pol, err
		}
	}
	for _, a := range r.Applied {
		if err := pol.Ask(a.Mode, "the last apply of target "+a.Target); err != nil {
			return pol, err
		}
	}
	pol.Range = r.Range || r.Asked.Range
	if pol.Range && pol.Mode == "" {
		pol.Mode = HEAD
	}
	return pol, nil
}

// Check verifies the revision as its policy asks; a zero Outcome when
// nothing asks. The keys come from the sources and the repository's key
// files as of each last applied revision, never from the revision.
func (r Run) Check(ctx context.Context) (Outcome, error) {
	pol, err := r.Policy()
	if err != nil || pol.Mode == "" {
		return Outcome{}, err
	}
	out := Outcome{Revision: r.Revision, Mode: pol.Mode, Asked: pol.Sources, Skipped: r.Skip}
	asked := r.Asked
	asked.SecretRefs = slices.Clone(asked.SecretRefs)
	for _, a := range r.Applied {
		for _, ref := range a.SecretRefs {
			if !slices.ContainsFunc(asked.SecretRefs, func(s config.SecretRef) bool {
				return s.Name == ref.Name && secretNamespace(s) == secretNamespace(ref)
			}) {
				asked.SecretRefs = append(asked.SecretRefs, ref)
			}
		}
	}
	out.SecretRefs = asked.SecretRefs
	if r.Skip {
		return out, nil
	}
	g, err := git.PlainOpenWithOptions(r.Dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return out, fmt.Errorf("signature verification needs the repository's history: %w", err)
	}
	var last []string
	for _, a := range r.Applied {
		if a.Revision != "" && a.Revision != r.Revision && !slices.Contains(last, a.Revision) {
			last = append(last, a.Revision)
		}
	}
	if len(last) == 0 && len(r.Asked.KeyFiles) > 0 {
		out.Notes = append(out.Notes, "verify.keys are read as of the last applied revision, and no target has one yet: this first apply trusts only the trusted-keys input and secretRef keys")
	}
	keys, err := r.Sources.keys(ctx, g, r.Dir, asked, last)
	if err != nil {
		return out, err
	}
	rev, err := g.ResolveRevision(plumbing.Revision(r.Revision))
	if err != nil {
		return out, fmt.Errorf("revision %s: %w", r.Revision, err)
	}
	since := []plumbing.Hash{plumbing.ZeroHash}
	if pol.Range && len(last) > 0 {
		since = since[:0]
		for _, l := range last {
			since = append(since, plumbing.NewHash(l))
		}
	}
	for _, s := range since {
		got, err := Revision(g, *rev, Options{Mode: pol.Mode, Keys: keys, Since: s})
		if err != nil {
			return out, fmt.Errorf("signature verification (%s): %w", strings.Join(pol.Sources, ", "), err)
		}
		out.Signed = append(out.Signed, got...)
	}
	return out, nil
}

// PullRequest says how the commits from base to head verify with the
// keys the base trusts: the sources, and the key files and Secret
// variables of the base's ferry.yaml verify block. Nil when no key is
// known and none is required.
func PullRequest(ctx context.Context, dir, base, head string, src Sources, require bool) (*Summary, error) {
	g, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	var asked config.Verification
	if f := fileAtRevision(g, dir, base); f != nil && f.Verify != nil {
		asked.KeyFiles = f.Verify.Keys
		if f.Verify.SecretRef != nil {
			asked.SecretRefs = []config.SecretRef{*f.Verify.SecretRef}
		}
	}
	src.ReadSecret = nil // a diff reaches no cluster for keys
	if !require && strings.TrimSpace(src.TrustedKeys) == "" && len(asked.KeyFiles) == 0 && len(asked.SecretRefs) == 0 {
		return nil, nil // nothing to verify with, and nothing asks
	}
	keys, err := src.keys(ctx, g, dir, asked, []string{base})
	if err != nil {
		return nil, fmt.Errorf("the base's trusted keys: %w", err)
	}
	if keys.Empty() {
		if require {
			return nil, errors.New("--require-signed: no trusted keys: give the trusted-keys input or verify.keys in the base's ferry.yaml")
		}
		return nil, nil
	}
	sum, err := Commits(g, plumbing.NewHash(base), plumbing.NewHash(head), keys)
	if err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	return &sum, nil
}

// keys are the trusted keys: the input, the Secrets asked names, and the
// key files at each last applied revision (those its ferry.yaml named
// too: dropping verify.keys does not drop the keys).
func (s Sources) keys(ctx context.Context, g *git.Repository, dir string, asked config.Verification, last []string) (Keys, error) {
	var keys Keys
	if strings.TrimSpace(s.TrustedKeys) != "" {
		k, err := ParseKeys("the trusted-keys input", []byte(s.TrustedKeys))
		if err != nil {
			return keys, err
		}
		keys.Add(k)
	}
	for _, ref := range asked.SecretRefs {
		k, err := s.secretKeys(ctx, ref)
		if err != nil {
			return keys, err
		}
		keys.Add(k)
	}
	prefix, err := inRepository(g, dir)
	if err != nil {
		return keys, err
	}
	for _, l := range last {
		paths := slices.Clone(asked.KeyFiles)
		if f := fileAtRevision(g, dir, l); f != nil && f.Verify != nil {
			paths = append(paths, f.Verify.Keys...)
		}
		for i := range paths {
			paths[i] = path.Join(prefix, paths[i])
		}
		k, err := KeysAt(g, plumbing.NewHash(l), slices.Compact(slices.Sorted(slices.Values(paths))))
		if err != nil {
			return keys, err
		}
		keys.Add(k)
	}
	return keys, nil
}

// secretKeys reads the keys of a Secret: its FERRY_SECRET_<NAME>_*
// variables, else the Secret in the cluster (when s can read one).
func (s Sources) secretKeys(ctx context.Context, ref config.SecretRef) (Keys, error) {
	ns := ref.Namespace
	if ns == "" {
		ns = config.DefaultNamespace
	}
	name := "Secret/" + ns + "/" + ref.Name
	var keys Keys
	if prefix, ok := images.SecretEnv(ref.Name); ok {
		found := false
		for _, kv := range slices.Sorted(slices.Values(s.Environ)) {
			// A key's spelling starts with a letter or digit: a "_" next
			// is another Secret's (git-keys' variables to git's prefix).
			k, v, _ := strings.Cut(kv, "=")
			rest, ok := strings.CutPrefix(k, prefix+"_")
			if !ok || rest == "" || rest[0] == '_' {
				continue
			}
			got, err := ParseKeys(name+" ("+k+")", []byte(v))
			if err != nil {
				return keys, err
			}
			keys.Add(got)
			found = true
		}
		if found {
			return keys, nil
		}
	}
	if s.ReadSecret == nil {
		return keys, nil
	}
	data, err := s.ReadSecret(ctx, ns, ref.Name)
	if err != nil {
		return keys, fmt.Errorf("%s (verify secretRef): %w", name, err)
	}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		got, err := ParseKeys(name+" key "+k, data[k])
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

// fileAtRevision is the ferry.yaml of dir at rev, nil when it has none
// or it does not parse.
func fileAtRevision(g *git.Repository, dir, rev string) *config.File {
	prefix, err := inRepository(g, dir)
	if err != nil {
		return nil
	}
	raw, err := FileAt(g, plumbing.NewHash(rev), path.Join(prefix, config.FileName))
	if err != nil {
		return nil
	}
	f, err := config.ParseFile(raw)
	if err != nil {
		return nil
	}
	return f
}

// inRepository is dir's path in g's work tree ("" at its top), slashed.
func inRepository(g *git.Repository, dir string) (string, error) {
	wt, err := g.Worktree()
	if err != nil {
		return "", err
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel != "." && !filepath.IsLocal(rel) {
		return "", fmt.Errorf("repository %s is not inside its Git work tree %s", dir, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}
