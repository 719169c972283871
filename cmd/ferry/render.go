package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/confine"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/render"
)

type renderOptions struct {
	repo      repoFlags
	outDir    string
	list      bool
	format    *choiceValue
	noDecrypt bool
}

func newRenderCmd(e *env) *cobra.Command {
	o := &renderOptions{format: newChoice(output.Names((&config.Listing{}).Formats())...)}
	cmd := &cobra.Command{
		Use:     "render [TARGET...]",
		Short:   "Print the rendered, decrypted manifests of targets",
		Long:    help("render"),
		Example: helpExamples("render"),
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

func runRender(cmd *cobra.Command, e *env, o *renderOptions, args []string) error {
	ctx := cmd.Context()
	// --list reads no secret: each target's state is that of a render
	// with encrypted Secrets left out, so listing needs no key.
	repo, err := e.LoadRepo(ctx, o.repo.settings(), o.noDecrypt || o.list)
	if err != nil {
		return err
	}
	defer repo.Close()
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
		notes, warning := res.Notes()
		for _, n := range notes {
			fmt.Fprintln(e.stderr, "ferry: "+n)
		}
		if warning != "" {
			fmt.Fprintln(e.stderr, "ferry: warning: "+warning)
		}
	}
	for _, w := range render.HideIn(results, e.Credentials.MaskValue) {
		e.warn("Credential in a manifest", w)
	}
	if o.outDir != "" {
		out, err := confine.OpenNamed(o.outDir)
		if err != nil {
			return fmt.Errorf("-o %s: %w", o.outDir, err)
		}
		defer out.Close()
		return render.WriteFiles(out, results)
	}
	out, err := render.YAML(results)
	if err != nil {
		return err
	}
	_, err = e.manifests.Write(out)
	return err
}

// printListing lists every target with its state. A failed target fails
// only the commands that select it, so the listing itself succeeds.
func printListing(ctx context.Context, e *env, repo *config.Repo, format string) error {
	l, err := repo.List(ctx)
	if err != nil {
		return err
	}
	e.Masker.Redact(l)
	return e.print(l, format)
}
