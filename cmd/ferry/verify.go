package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/event"
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
	f.BoolVar(&v.skip, "skip-verify", false, prefix+"apply without verifying signatures; said in the log, the step summary and the notifications")
}

// before checks the signatures of the revision about to be applied to
// targets (verify.Run) before anything is written, and returns the mode
// to record on the inventories. The reads before it are the targets'
// inventories (get): the revision and mode their last apply recorded.
func (v *verifyFlags) before(ctx context.Context, e *env, cluster *clusterFlags, repo *config.Repo, targets []*config.Target, revision, inventoryNS string) (string, error) {
	run := verify.Run{Dir: repo.Root, Revision: revision, Mode: v.mode, Range: v.rng, Asked: repo.Verification(), Sources: e.keySources()}
	for _, t := range targets {
		c, err := cluster.client(ctx, e, t)
		if err != nil {
			continue // reported by the apply, which needs the client too
		}
		inv, err := c.ReadInventory(ctx, t.Name, inventoryNS)
		if err != nil {
			return "", fmt.Errorf("target %q: cluster %s: reading the last apply: %w", t.Name, c.Host, err)
		}
		run.Applied = append(run.Applied, verify.Applied{Target: t.Name, Revision: inv.Revision, Mode: inv.Verify})
	}
	if len(targets) > 0 {
		read := cluster.clusterReader(e)
		run.Sources.ReadSecret = func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
			return secretData(read(ctx, targets[0], "Secret", namespace, name))
		}
	}
	if v.skip {
		pol, err := run.Policy()
		if err != nil || pol.Mode == "" {
			return "", err
		}
		short := kube.ShortRevision(revision)
		e.warn("Signature verification skipped", "signature verification skipped (--skip-verify): "+short+" was not checked against "+strings.Join(pol.Sources, ", "))
		e.Summary("> [!WARNING]\n> **Signature verification skipped** (`--skip-verify`): " + short + " was applied unverified.\n")
		v.skipped = "Signature verification skipped (--skip-verify): " + short + " is unverified."
		return string(pol.Mode), nil
	}
	out, err := run.Check(ctx)
	if err != nil || out.Mode == "" {
		return "", err
	}
	for _, n := range out.Notes {
		e.warn("Signature verification", n)
	}
	var lines []string
	for _, s := range out.Signed {
		lines = append(lines, s.Object+" (author "+s.Author+") signed by "+s.Signer)
	}
	fmt.Fprintln(e.stderr, "ferry: verified "+strings.Join(lines, "; "))
	e.Summary("**Signatures verified** (" + string(out.Mode) + "): " + strings.Join(lines, "; ") + "\n")
	return string(out.Mode), nil
}

// keySources are the run's trusted keys outside the repository.
func (e *env) keySources() verify.Sources {
	return verify.Sources{TrustedKeys: e.getenv(trustedKeysVar), Environ: e.environ()}
}

// secretData is a Secret's data, decoded.
func secretData(s interface{ UnstructuredContent() map[string]any }, err error) (map[string][]byte, error) {
	if err != nil {
		return nil, err
	}
	raw, _ := s.UnstructuredContent()["data"].(map[string]any)
	out := map[string][]byte{}
	for k, v := range raw {
		str, _ := v.(string)
		b, err := base64.StdEncoding.DecodeString(str)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
		out[k] = b
	}
	return out, nil
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

// prSignatures says how the head's commits verify with the keys the base
// trusts (verify.PullRequest), as the diff report shows it.
func prSignatures(ctx context.Context, e *env, dir, base, head string, require bool) (*diff.Signatures, error) {
	sum, err := verify.PullRequest(ctx, dir, base, head, e.keySources(), require)
	if err != nil || sum == nil {
		return nil, err
	}
	out := &diff.Signatures{Commits: sum.Commits, Trusted: sum.Trusted}
	for _, r := range sum.Refused {
		out.Refused = append(out.Refused, diff.SignatureRefusal{Commit: strings.TrimPrefix(r.Object, "commit "), Author: r.Author, Signer: r.Signer, Reason: r.Reason})
	}
	return out, nil
}
