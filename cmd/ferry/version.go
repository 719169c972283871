package main

import (
	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/release"
)

// Set at build time by the release build (internal/release) and the
// Makefile: -ldflags "-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339>".
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func newVersionCmd(e *env) *cobra.Command {
	format := newChoice(output.Names(release.Info{}.Formats())...)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print ferry's version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.print(release.ReadInfo(version, commit, date), format.value)
		},
	}
	cmd.Flags().Var(format, "format", "output format: text or json")
	return cmd
}
