package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/confine"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
)

type renderOptions struct {
	repo      repoFlags
	outDir    string
	list      bool
	format    *formatValue
	noDecrypt bool
}

func newRenderCmd(e *env) *cobra.Command {
	o := &renderOptions{format: newFormat("text", "json")}
	cmd := &cobra.Command{
		Use:   "render [TARGET...]",
		Short: "Print the rendered, decrypted manifests of targets",
		Long: `Render prints the fully rendered YAML of one or more targets (all of them
when none is named), with SOPS-encrypted files decrypted in memory.

Targets come from ferry.yaml when it declares them, otherwise from the Flux
Kustomization objects of the repository: each cluster root (the tree a
flux-system sync Kustomization points at, or a clusters/<name>/ folder) is
rendered and every Kustomization in its output is a target, recursively;
Kustomization files no root reaches are targets too. A target name is the
Kustomization's name, or <cluster>/<name> when that is ambiguous.

Age identities come from SOPS_AGE_KEY (one or more AGE-SECRET-KEY-1... lines)
or SOPS_AGE_KEY_FILE. Every target is rendered before anything is printed;
if one fails, nothing is printed on stdout.

Exit status: 0 rendered, 2 any error (the message names the target, file or
object).`,
		Example: `  # everything, one YAML stream
  SOPS_AGE_KEY_FILE=age.key ferry render --repo examples/gpu-cluster

  # one target, one file per object
  ferry render stage -o out/

  # the targets ferry found and where each came from
  ferry render --list --repo examples/fleet

  # without a key: encrypted Secrets are left out, and listed on stderr
  ferry render --no-decrypt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRender(cmd, e, o, args)
		},
	}
	f := cmd.Flags()
	o.repo.register(f, "repository root")
	f.StringVarP(&o.outDir, "output-dir", "o", "", "write one file per object under `DIR`/<target>/ instead of printing")
	f.BoolVar(&o.list, "list", false, "list the targets found, their state, where each came from, and those skipped (decrypts nothing)")
	f.Var(o.format, "format", "format of --list: text or json")
	f.BoolVar(&o.noDecrypt, "no-decrypt", false, "leave SOPS-encrypted Secrets out instead of decrypting them")
	return cmd
}

// decryptor reads the age identities once, from SOPS_AGE_KEY or the file
// SOPS_AGE_KEY_FILE names, and returns a decryptor the masker watches.
func (e *env) decryptor() (*secrets.Decryptor, error) {
	text := e.getenv("SOPS_AGE_KEY")
	if text == "" {
		if p := e.getenv("SOPS_AGE_KEY_FILE"); p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("SOPS_AGE_KEY_FILE: %w", err)
			}
			text = string(b)
		}
	}
	var ids *secrets.Identities
	if strings.TrimSpace(text) != "" {
		var err error
		if ids, err = secrets.ParseIdentities(text); err != nil {
			return nil, err
		}
	}
	d := secrets.NewDecryptor(ids)
	e.masker.Watch(d)
	return d, nil
}

func runRender(cmd *cobra.Command, e *env, o *renderOptions, args []string) error {
	ctx := cmd.Context()
	// --list reads no secret: each target's state is that of a render
	// with encrypted Secrets left out, so listing needs no key.
	opts := render.Options{NoDecrypt: o.noDecrypt || o.list, AllowRemoteBases: o.repo.allowRemoteBases}
	if !opts.NoDecrypt {
		d, err := e.decryptor()
		if err != nil {
			return err
		}
		opts.Decryptor = d
	}
	repo, err := config.Load(ctx, o.repo.dir, opts)
	if err != nil {
		return err
	}
	if o.list {
		return printTargets(ctx, e, repo, o.format.value)
	}
	targets, err := repo.Select(args)
	if err != nil {
		return err
	}
	results, err := repo.RenderAll(ctx, targets)
	if err != nil {
		return err
	}
	for _, res := range results {
		for _, id := range res.Omitted {
			fmt.Fprintf(e.stderr, "ferry: target %q: left out encrypted %s (--no-decrypt)\n", res.Name, id)
		}
	}
	if o.outDir != "" {
		return writeObjects(o.outDir, results)
	}
	var all manifest.Set
	for _, res := range results {
		all.Objects = append(all.Objects, res.Set.Objects...)
	}
	out, err := all.YAML()
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}

// writeObjects writes one file per object under dir/<target>/. Secrets are
// written readable by the owner only. Every write stays below dir, goes
// through no symlink (see openOutput) and replaces a file rather than
// writing through it: a link committed at rendered/app/secret_db.yaml
// would otherwise send a decrypted Secret wherever it points.
func writeObjects(dir string, results []*render.Result) error {
	out, err := openOutput(dir)
	if err != nil {
		return fmt.Errorf("-o %s: %w", dir, err)
	}
	defer out.Close()
	for _, res := range results {
		for _, o := range res.Set.Objects {
			b, err := manifest.YAML(o)
			if err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if o.GetKind() == "Secret" {
				mode = 0o600
			}
			if err := out.WriteFile(filepath.Join(filepath.FromSlash(res.Name), manifest.FileName(o)), b, mode); err != nil {
				return fmt.Errorf("target %q: %w", res.Name, err)
			}
		}
	}
	return nil
}

// openOutput creates and opens the folder path, which the user named, for
// writing into. The part of path below the working directory (in CI, the
// checkout, where a pull request can commit symlinks) must hold no
// symlink; a path outside the working directory is the workflow's own, so
// only its last element is checked.
func openOutput(path string) (*confine.Dir, error) {
	base, rel, err := trustedBase(path)
	if err != nil {
		return nil, err
	}
	top, err := confine.Open(base)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	return top.Sub(rel, 0o755)
}

// writeFile writes data to the file path, which the user named, with the
// same checks as openOutput, replacing the file rather than writing
// through it.
func writeFile(path string, data []byte, perm os.FileMode) error {
	base, rel, err := trustedBase(path)
	if err != nil {
		return err
	}
	top, err := confine.Open(base)
	if err != nil {
		return err
	}
	defer top.Close()
	return top.WriteFile(rel, data, perm)
}

// trustedBase splits a path the user named into the folder taken as given
// and the rest, relative to it: the working directory and the part below
// it, or, for a path outside the working directory, its parent folder
// (created if missing) and its last element.
func trustedBase(path string) (base, rel string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	if r, err := filepath.Rel(wd, abs); err == nil && filepath.IsLocal(r) {
		return wd, r, nil
	}
	if abs == wd {
		return wd, ".", nil
	}
	base = filepath.Dir(abs)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", "", err
	}
	return base, filepath.Base(abs), nil
}

// printTargets lists every target with its state: "ok", or "error" and
// the reason (a dependsOn that names no target, a cycle, a render that
// fails). A failed target fails only the commands that select it, so the
// listing itself succeeds.
func printTargets(ctx context.Context, e *env, repo *config.Repo, format string) error {
	states := make([]string, len(repo.Targets))
	for i, t := range repo.Targets {
		if err := repo.State(ctx, t); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			states[i] = e.masker.Mask(strings.TrimSpace(err.Error()))
		}
	}
	if format == "json" {
		type target struct {
			Name            string   `json:"name"`
			Cluster         string   `json:"cluster,omitempty"`
			Path            string   `json:"path"`
			Prune           bool     `json:"prune"`
			TargetNamespace string   `json:"targetNamespace,omitempty"`
			DependsOn       []string `json:"dependsOn,omitempty"`
			Origin          string   `json:"origin"`
			State           string   `json:"state"`
			Error           string   `json:"error,omitempty"`
		}
		out := struct {
			Targets  []target         `json:"targets"`
			Skipped  []config.Skipped `json:"skipped,omitempty"`
			Clusters []config.Cluster `json:"clusters,omitempty"`
		}{Targets: []target{}, Skipped: repo.Skipped, Clusters: repo.Clusters}
		for i, t := range repo.Targets {
			out.Targets = append(out.Targets, target{t.Name, t.Cluster, t.Path, t.Prune, t.TargetNamespace, t.DependsOn, t.Origin, state(states[i]), states[i]})
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TARGET\tCLUSTER\tPATH\tPRUNE\tDEPENDS ON\tSTATE\tFROM")
	for i, t := range repo.Targets {
		fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\t%s\t%s\n", cell(t.Name), cell(dash(t.Cluster)), cell(t.Path), t.Prune, cell(dash(strings.Join(t.DependsOn, ","))), state(states[i]), cell(t.Origin))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for i, t := range repo.Targets {
		if states[i] != "" {
			fmt.Fprintf(e.stdout, "error %s: %s\n", cell(t.Name), cell(states[i]))
		}
	}
	for _, s := range repo.Skipped {
		name := s.Name
		if s.Cluster != "" {
			name = s.Cluster + "/" + s.Name
		}
		fmt.Fprintf(e.stdout, "skipped %s (%s): %s\n", cell(name), cell(s.Origin), cell(s.Reason))
	}
	return nil
}

// state is a target's state in --list: ok, or error with the reason.
func state(reason string) string {
	if reason == "" {
		return "ok"
	}
	return "error"
}

// cell is s as one cell of the --list table: quoted, escapes and all, when
// it holds a tab, a line break or another character that is not printed
// as itself (a path from the repository may), so it cannot forge a row.
func cell(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
