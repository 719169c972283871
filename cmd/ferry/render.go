package main

import (
	"context"
	"fmt"
	"os"
	"strings"

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
		Use:     "render [TARGET...]",
		Short:   "Print the rendered, decrypted manifests of targets",
		Long:    help("render"),
		Example: examples("render"),
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
		return printListing(ctx, e, repo, o.format.value)
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
		out, err := confine.OpenNamed(o.outDir)
		if err != nil {
			return fmt.Errorf("-o %s: %w", o.outDir, err)
		}
		defer out.Close()
		return render.WriteFiles(out, results)
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

// printListing lists every target with its state. A failed target fails
// only the commands that select it, so the listing itself succeeds.
func printListing(ctx context.Context, e *env, repo *config.Repo, format string) error {
	l, err := repo.List(ctx)
	if err != nil {
		return err
	}
	e.masker.Redact(l)
	if format == "json" {
		return l.JSON(e.stdout)
	}
	return l.Text(e.stdout)
}
