package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/actions"
)

// Inside an Actions step (GITHUB_ACTIONS=true) every flag of the command
// that the command line leaves unset is read from the step input of the
// same name (INPUT_<NAME>: flag --fail-on-drift from input fail-on-drift),
// except --kubeconfig, a path, whose input is kubeconfig-path. Bool inputs
// are "true" or "false"; list flags take comma- or newline-separated items.
// These inputs are not flags:
const (
	// inputCommand names the command when ferry is started with no
	// arguments (the generic action.yml at the repository root).
	inputCommand = "command"
	// inputTargets lists targets, as the positional arguments of commands
	// whose usage names TARGET.
	inputTargets = "targets"
)

// flagInput returns the input a flag is read from.
func flagInput(flag string) string {
	if flag == "kubeconfig" {
		return actions.InputKubeconfigPath
	}
	return flag
}

// inputFlags lists, by input name, the flags of cmd that inputs reach.
func inputFlags(cmd *cobra.Command) map[string]*pflag.Flag {
	out := map[string]*pflag.Flag{}
	visit := func(f *pflag.Flag) {
		if f.Name != "help" {
			out[flagInput(f.Name)] = f
		}
	}
	cmd.LocalFlags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return out
}

// takesTargets reports whether cmd takes targets as arguments: its usage
// line names TARGET.
func takesTargets(cmd *cobra.Command) bool { return strings.Contains(cmd.Use, "TARGET") }

// reachesCluster reports whether cmd talks to a cluster, so the kubeconfig
// input means something to it: it has --kubeconfig-env.
func reachesCluster(cmd *cobra.Command) bool { return cmd.Flags().Lookup("kubeconfig-env") != nil }

// isList reports whether a flag takes several values.
func isList(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

func isBool(f *pflag.Flag) bool { return f.Value.Type() == "bool" }

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

// event returns the event that started the run (nil outside Actions).
func (e *env) event() (*actions.Event, error) {
	if e.gha == nil {
		return nil, nil
	}
	return e.gha.Event()
}

// startActions prepares a run inside an Actions step: it guards stdout
// and stderr so that no text ferry prints can read as a workflow command,
// registers the masks of every secret input before anything is printed,
// and returns the command line with the inputs turned into flags and
// arguments. Outside Actions it returns args as they are.
func (e *env) startActions(args []string, newRoot func(*env) *cobra.Command) ([]string, error) {
	if !actions.Enabled(e.getenv) {
		return args, nil
	}
	e.gha = actions.New(e.getenv, e.stdout)
	pending := func() []string { return actions.Maskable(e.masker.Values()) }
	e.stdout = e.gha.Stdout(pending)
	e.stderr = e.gha.Stderr(e.stderr, pending)
	if err := e.gha.Mask(e.gha.SecretInputs()...); err != nil {
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
	in := &stepInputs{cmd: cmd, flags: inputFlags(cmd)}
	for _, phase := range []func(*stepInputs) error{e.flagInputs, e.secretInputs, e.targetInputs} {
		if err := phase(in); err != nil {
			return nil, err
		}
	}
	if len(in.used) > 0 {
		end := e.group("ferry " + cmd.Name() + ": inputs")
		fmt.Fprintf(e.stdout, "from step inputs: %s\n", strings.Join(in.used, ", "))
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
	out := append(append(path, in.injected...), rest...)
	if len(in.targets) > 0 {
		if !contains(rest, "--") {
			out = append(out, "--")
		}
		out = append(out, in.targets...)
	}
	return out, nil
}

// stepInputs is what a step's inputs add to the command line.
type stepInputs struct {
	cmd      *cobra.Command
	flags    map[string]*pflag.Flag // by input name
	injected []string               // flags the inputs set
	used     []string               // the inputs used
	targets  []string
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
	if !contains(commandNames(probe), name) {
		return nil, fmt.Errorf("input %s: unknown command %q (want one of %s)", inputCommand, name, strings.Join(commandNames(probe), ", "))
	}
	return []string{name}, nil
}

// flagInputs turns the inputs named after the command's flags into those
// flags (the command line wins), and checks the required ones are set.
func (e *env) flagInputs(in *stepInputs) error {
	names := make([]string, 0, len(in.flags))
	for name := range in.flags {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := in.flags[name]
		if f.Changed {
			continue
		}
		v, ok := e.gha.Input(name)
		if !ok {
			continue
		}
		vals, err := inputValues(name, f, v)
		if err != nil {
			return err
		}
		for _, val := range vals {
			in.injected = append(in.injected, "--"+f.Name+"="+val)
		}
		in.used = append(in.used, name)
	}
	for _, name := range names {
		f := in.flags[name]
		if req, ok := f.Annotations[cobra.BashCompOneRequiredFlag]; ok && len(req) > 0 && req[0] == "true" && !f.Changed && !contains(in.used, name) {
			return fmt.Errorf("required input %s is not set (ferry %s needs --%s)", name, in.cmd.Name(), f.Name)
		}
	}
	return nil
}

// secretInputs checks the age key, the token and the kubeconfig inputs
// and hands them to ferry through its environment (never its arguments).
func (e *env) secretInputs(in *stepInputs) error {
	if v, ok := e.gha.Input(actions.InputAgeKey); ok {
		if err := actions.CheckAgeKey(v); err != nil {
			return err
		}
		e.setenv("SOPS_AGE_KEY", v)
		in.used = append(in.used, actions.InputAgeKey)
	}
	if v, ok := e.gha.Input(actions.InputToken); ok {
		e.setenv("FERRY_TOKEN", v)
		in.used = append(in.used, actions.InputToken)
	}
	if v, ok := e.gha.Input(actions.InputKubeconfigPath); ok && in.flags[actions.InputKubeconfigPath] != nil && !in.flags[actions.InputKubeconfigPath].Changed {
		if err := actions.CheckKubeconfigPath(v); err != nil {
			return err
		}
	}
	v, ok := e.gha.Input(actions.InputKubeconfig)
	if !ok {
		return nil
	}
	if !reachesCluster(in.cmd) {
		return fmt.Errorf("input %s: ferry %s does not connect to a cluster", actions.InputKubeconfig, in.cmd.Name())
	}
	if err := actions.CheckKubeconfig(v); err != nil {
		return err
	}
	if f := in.flags["kubeconfig-path"]; f != nil && (f.Changed || contains(in.used, "kubeconfig-path")) {
		return fmt.Errorf("inputs %s (content) and kubeconfig-path (a file) are both set: use one", actions.InputKubeconfig)
	}
	if f := in.flags["kubeconfig-env"]; !f.Changed && !contains(in.used, "kubeconfig-env") {
		in.injected = append(in.injected, "--kubeconfig-env="+actions.InputVar(actions.InputKubeconfig))
	}
	in.used = append(in.used, actions.InputKubeconfig)
	return nil
}

// targetInputs reads the targets input, unless the command line names
// targets.
func (e *env) targetInputs(in *stepInputs) error {
	v, ok := e.gha.Input(inputTargets)
	if !ok {
		return nil
	}
	if !takesTargets(in.cmd) {
		return fmt.Errorf("input %s: ferry %s takes no targets", inputTargets, in.cmd.Name())
	}
	if len(in.cmd.Flags().Args()) > 0 {
		return nil
	}
	for _, t := range actions.List(v) {
		if strings.HasPrefix(t, "-") {
			return fmt.Errorf("input %s: %q is not a target name", inputTargets, t)
		}
		in.targets = append(in.targets, t)
	}
	in.used = append(in.used, inputTargets)
	return nil
}

// inputValues checks an input against its flag and returns the flag
// values it stands for.
func inputValues(name string, f *pflag.Flag, v string) ([]string, error) {
	switch {
	case isBool(f):
		b, ok := actions.Bool(v)
		if !ok {
			return nil, fmt.Errorf("input %s: want true or false, got %q", name, v)
		}
		return []string{strconv.FormatBool(b)}, nil
	case isList(f):
		items := actions.List(v)
		for _, item := range items {
			if err := f.Value.Set(item); err != nil {
				return nil, fmt.Errorf("input %s: %w", name, err)
			}
		}
		return items, nil
	default:
		if err := f.Value.Set(v); err != nil {
			return nil, fmt.Errorf("input %s: %w", name, err)
		}
		return []string{v}, nil
	}
}

// setenv makes getenv return value for key from now on.
func (e *env) setenv(key, value string) {
	getenv := e.getenv
	e.getenv = func(k string) string {
		if k == key {
			return value
		}
		return getenv(k)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
