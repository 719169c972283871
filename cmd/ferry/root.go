package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/runenv"
)

// Exit codes are a contract for every command.
const (
	exitOK          = 0
	exitDifferences = 1
	exitError       = 2
)

// exitCodeError carries an exit status other than 2 out of a command.
type exitCodeError struct {
	code int
	msg  string
}

func (e *exitCodeError) Error() string { return e.msg }

// run executes ferry with args and returns the process exit status.
func run(ctx context.Context, args []string, e *env) int {
	return runWith(ctx, args, e, newRootCmd)
}

// runWith is run with the command tree newRoot builds. Inside an Actions
// step the inputs become flags and arguments first (see actions.go).
func runWith(ctx context.Context, args []string, e *env, newRoot func(*env) *cobra.Command) int {
	e.Env = runenv.New(e.getenv, e.environ, e.stdout)
	e.Sandbox = e.sandbox
	// The chart render process ends with the run (it is killed, so a
	// render stopped by a signal ends at once).
	defer e.Sandbox.Close()
	e.stdout, e.stderr, e.manifests = e.Streams(e.stdout, e.stderr)
	// The streams hold back a line not ended yet; write it out last.
	defer e.flushStreams()
	args, err := e.startActions(args, newRoot)
	if err == nil {
		cmd := newRoot(e)
		cmd.SetArgs(args)
		cmd.SetOut(e.stdout)
		cmd.SetErr(e.stderr)
		err = cmd.ExecuteContext(ctx)
	}
	// Variables of the former spelling read (or left unread): said once,
	// whatever the run's outcome.
	e.warnings(e.CredentialWarnings())
	var ec *exitCodeError
	if e.StepErr() != nil && (err == nil || errors.As(err, &ec)) {
		err = e.StepErr()
	}
	if ctx.Err() != nil {
		// Stopped by a signal (or a caller's deadline): whatever the
		// command got to, the run did not finish, so it never exits 0
		// and its own error (every target "context canceled") is noise.
		err = fmt.Errorf("stopped before finishing: %w", context.Cause(ctx))
		ec = nil
	}
	if err == nil {
		return exitOK
	}
	e.finishActions(err, args)
	if ctx.Err() == nil && errors.As(err, &ec) {
		if ec.msg != "" {
			fmt.Fprintln(e.stderr, e.Masker.Mask(ec.msg))
		}
		return ec.code
	}
	fmt.Fprintln(e.stderr, "ferry: "+e.Masker.Mask(strings.TrimSpace(err.Error())))
	return exitError
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "ferry",
		Short:         "Carry a GitOps repository to its clusters from CI",
		Long:          help("ferry"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRenderCmd(e), newApplyCmd(e), newDiffCmd(e), newPlanCmd(e), newDriftCmd(e), newBumpCmd(e), newVersionCmd(e))
	return root
}
