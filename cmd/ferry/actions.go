package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// startActions hides every secret input before anything is printed, and
// returns the command line with the inputs turned into flags and
// arguments (actions.Runtime.Argv). Outside Actions it returns args as
// they are.
func (e *env) startActions(args []string, newRoot func(*env) *cobra.Command) ([]string, error) {
	if !e.InStep() {
		return args, nil
	}
	if err := e.StartStep(); err != nil {
		return nil, err
	}
	a, err := e.Step.Argv(newRoot(e), args)
	if err != nil {
		return nil, err
	}
	if a.CommandLine == nil {
		return a.Args, nil // no command found: cobra reports it
	}
	for k, v := range a.Env {
		e.Setenv(k, v)
	}
	if len(a.Used) > 0 {
		end := e.Group("ferry " + a.Command + ": inputs")
		fmt.Fprintf(e.stdout, "from step inputs: %s\n", strings.Join(a.Used, ", "))
		end()
	}
	e.actionRepo = a.Repo
	return a.Args, nil
}

// finishActions reports a failed run to the runner: an error annotation on
// the file the error is about.
func (e *env) finishActions(err error, args []string) {
	var ec *exitCodeError
	if err == nil || errors.As(err, &ec) && (ec.code != exitError || ec.msg == "") {
		return
	}
	command := "run"
	if len(args) > 0 {
		command = args[0]
	}
	e.Annotate(err, "ferry "+command, e.actionRepo)
}
