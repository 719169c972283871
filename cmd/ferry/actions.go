package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/actions"
)

// inputCommand names the command when ferry is started with no arguments
// (the generic action.yml at the repository root). The other inputs are
// the command's flags and those of actions.CommandLine.
const inputCommand = "command"

// takesTargets reports whether cmd takes targets as arguments: its usage
// line names TARGET.
func takesTargets(cmd *cobra.Command) bool { return strings.Contains(cmd.Use, "TARGET") }

// reachesCluster reports whether cmd talks to a cluster, so the kubeconfig
// input means something to it: it has --kubeconfig-env.
func reachesCluster(cmd *cobra.Command) bool { return cmd.Flags().Lookup("kubeconfig-env") != nil }

// inActions reports whether ferry runs as an Actions step.
func (e *env) inActions() bool { return e.gha != nil }

// output sets the step output name, with decrypted values masked.
// Outside Actions it does nothing. A failure to write it fails the run
// (exit 2) once the command is done, so callers need not check.
func (e *env) output(name, value string) {
	if e.gha == nil {
		return
	}
	if err := e.gha.SetOutput(name, e.masker.Mask(value)); err != nil && e.actionErr == nil {
		e.actionErr = fmt.Errorf("step output %s: %w", name, err)
	}
}

// summary appends markdown to the step summary, with decrypted values
// masked. Outside Actions it does nothing; a failure fails the run once the
// command is done.
func (e *env) summary(markdown string) {
	if e.gha == nil {
		return
	}
	if err := e.gha.AddSummary(e.masker.Mask(markdown)); err != nil && e.actionErr == nil {
		e.actionErr = fmt.Errorf("step summary: %w", err)
	}
}

// group folds what is printed until the returned func is called into one
// collapsed section of the step log. Outside Actions it does nothing.
func (e *env) group(title string) (end func()) {
	if e.gha == nil || e.gha.Group(title) != nil {
		return func() {}
	}
	return func() { _ = e.gha.EndGroup() }
}

// event returns the event that started the run (nil outside Actions),
// reading its payload once.
func (e *env) event() (*actions.Event, error) {
	if e.gha == nil {
		return nil, nil
	}
	if !e.eventRead {
		e.ev, e.evErr = e.gha.Event()
		e.eventRead = true
	}
	return e.ev, e.evErr
}

// openActions starts a run inside an Actions step: a runtime that masks
// what it writes, and stdout and stderr guarded so that no text ferry
// prints can read as a workflow command, each registering the masks of
// the secrets known so far before it writes.
func (e *env) openActions() {
	e.gha = actions.New(e.getenv, e.stdout, actions.WithMask(e.masker.Mask))
	pending := func() []string { return actions.Maskable(e.masker.Values()) }
	e.stdout = e.gha.Stdout(pending)
	e.stderr = e.gha.Stderr(e.stderr, pending)
}

// startActions hides every secret input before anything is printed, and
// returns the command line with the inputs turned into flags and
// arguments. Outside Actions it returns args as they are.
func (e *env) startActions(args []string, newRoot func(*env) *cobra.Command) ([]string, error) {
	if e.gha == nil {
		return args, nil
	}
	inputs := e.gha.SecretInputs()
	e.masker.Add(inputs...)
	e.credentials.Add(inputs...)
	// The inputs first, then every other secret known by now (those of
	// the environment, see learnSecrets) and its base64 form.
	if err := e.gha.Mask(inputs...); err != nil {
		return nil, err
	}
	if err := e.gha.Mask(actions.Maskable(e.masker.Values())...); err != nil {
		return nil, err
	}
	args, err := e.inputArgs(args, newRoot)
	if err != nil {
		return nil, err
	}
	return args, nil
}

// commandNames lists the commands a step may run.
func commandNames(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			names = append(names, c.Name())
		}
	}
	sort.Strings(names)
	return names
}

// inputArgs turns the step's inputs into the command line: the command
// from input command when there are no arguments, then for every flag the
// command line leaves unset the value of its input, then the extra inputs.
// Flags given on the command line win over inputs.
func (e *env) inputArgs(args []string, newRoot func(*env) *cobra.Command) ([]string, error) {
	// A throwaway command tree to learn what the command line sets; the
	// real one parses the final arguments.
	probe := newRoot(e)
	args, err := e.commandInput(probe, args)
	if err != nil {
		return nil, err
	}
	cmd, rest, err := probe.Find(args)
	if err != nil || cmd == probe {
		return args, nil // cobra reports it
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return args, nil // cobra reports it
	}
	in, err := e.gha.CommandLine(actions.Command{
		Name: cmd.Name(), Flags: cmd.Flags(), Required: requiredFlags(cmd), Args: cmd.Flags().Args(),
		TakesTargets: takesTargets(cmd), ReachesCluster: reachesCluster(cmd),
	})
	if err != nil {
		return nil, err
	}
	for k, v := range in.Env {
		e.setenv(k, v)
	}
	if len(in.Used) > 0 {
		end := e.group("ferry " + cmd.Name() + ": inputs")
		fmt.Fprintf(e.stdout, "from step inputs: %s\n", strings.Join(in.Used, ", "))
		end()
	}
	e.actionRepo = "."
	if f := cmd.Flags().Lookup("repo"); f != nil {
		e.actionRepo = f.Value.String()
		if v, ok := e.gha.Input("repo"); ok && !f.Changed {
			e.actionRepo = v
		}
	}

	path := strings.Fields(cmd.CommandPath())[1:]
	out := append(append(path, in.Flags...), rest...)
	if len(in.Targets) > 0 {
		if !slices.Contains(rest, "--") {
			out = append(out, "--")
		}
		out = append(out, in.Targets...)
	}
	return out, nil
}

// commandInput is the command line to probe: args as given, else the
// command the command input names.
func (e *env) commandInput(probe *cobra.Command, args []string) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	name, ok := e.gha.Input(inputCommand)
	if !ok {
		return nil, fmt.Errorf("input %s is required: the ferry command to run (one of %s)", inputCommand, strings.Join(commandNames(probe), ", "))
	}
	if !slices.Contains(commandNames(probe), name) {
		return nil, fmt.Errorf("input %s: unknown command %q (want one of %s)", inputCommand, name, strings.Join(commandNames(probe), ", "))
	}
	return []string{name}, nil
}

// requiredFlags names the flags cmd marks required.
func requiredFlags(cmd *cobra.Command) []string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if req := f.Annotations[cobra.BashCompOneRequiredFlag]; len(req) > 0 && req[0] == "true" {
			names = append(names, f.Name)
		}
	})
	return names
}

// finishActions reports a failed run to the runner: an error annotation on
// the file the error is about.
func (e *env) finishActions(err error, args []string) {
	var ec *exitCodeError
	if e.gha == nil || err == nil || errors.As(err, &ec) && (ec.code != exitError || ec.msg == "") {
		return
	}
	command := "run"
	if len(args) > 0 {
		command = args[0]
	}
	_ = e.gha.Error(e.masker.Mask(strings.TrimSpace(err.Error())), e.gha.ErrorAnnotation(err, "ferry "+command, e.actionRepo))
}
