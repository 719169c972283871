package main

import (
	"context"
	"fmt"
	"reflect"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/confine"
	"github.com/ferry-ci/ferry/internal/manifest"
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
	hideCredentials(e, results)
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

// hideCredentials masks ferry's own credentials (its tokens, the
// FERRY_SECRET_* and registry passwords of its environment) in the
// rendered objects, before they are encoded: render shows decrypted
// values by design, never the runner's. An object that holds one is
// named in a warning, as it is printed with *** in its place.
func hideCredentials(e *env, results []*render.Result) {
	for _, res := range results {
		for _, o := range res.Set.Objects {
			masked, ok := e.Credentials.MaskValue(o.Object).(map[string]any)
			if !ok || reflect.DeepEqual(masked, o.Object) {
				continue
			}
			o.Object = masked
			fmt.Fprintf(e.stderr, "ferry: warning: target %q: %s holds a credential of ferry's environment (a token, FERRY_SECRET_* or registry password); it is printed as ***\n", res.Name, manifest.IDOf(o))
		}
	}
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
