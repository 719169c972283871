package actions

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// InputCommand names the command when ferry is started with no arguments
// (the generic action.yml at the repository root). The other inputs are
// the command's flags and those of CommandLine.
const InputCommand = "command"

// Argv is the command line of a step: its arguments with the inputs
// turned into flags and arguments.
type Argv struct {
	// Args is the command line to run.
	Args []string
	// Command names the command the step runs, "" when the arguments
	// name none (the command tree reports it).
	Command string
	// Repo is the command's --repo (its input when the command line does
	// not set it), for error annotations.
	Repo string
	// CommandLine is what the inputs added; nil when Command is "".
	*CommandLine
}

// Argv turns the step's inputs into the command line of the command tree
// root: the command from input command when args is empty, then for
// every flag the command line leaves unset the value of its input, then
// the extra inputs (CommandLine). Flags given on the command line win
// over inputs. root is a throwaway tree, to learn what the command line
// sets; the caller's own tree parses the result.
func (r *Runtime) Argv(root *cobra.Command, args []string) (*Argv, error) {
	args, err := r.commandInput(root, args)
	if err != nil {
		return nil, err
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		return &Argv{Args: args}, nil // the command tree reports it
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return &Argv{Args: args}, nil // the command tree reports it
	}
	in, err := r.CommandLine(Command{
		Name: cmd.Name(), Flags: cmd.Flags(), Required: requiredFlags(cmd), Args: cmd.Flags().Args(),
		TakesTargets: TakesTargets(cmd), ReachesCluster: ReachesCluster(cmd),
	})
	if err != nil {
		return nil, err
	}
	a := &Argv{Command: cmd.Name(), Repo: ".", CommandLine: in}
	if f := cmd.Flags().Lookup("repo"); f != nil {
		a.Repo = f.Value.String()
		if v, ok := r.Input("repo"); ok && !f.Changed {
			a.Repo = v
		}
	}
	path := strings.Fields(cmd.CommandPath())[1:]
	a.Args = append(append(path, in.Flags...), rest...)
	if len(in.Targets) > 0 {
		if !slices.Contains(rest, "--") {
			a.Args = append(a.Args, "--")
		}
		a.Args = append(a.Args, in.Targets...)
	}
	return a, nil
}

// commandInput is the command line to probe: args as given, else the
// command the command input names.
func (r *Runtime) commandInput(root *cobra.Command, args []string) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	names := CommandNames(root)
	name, ok := r.Input(InputCommand)
	if !ok {
		return nil, fmt.Errorf("input %s is required: the ferry command to run (one of %s)", InputCommand, strings.Join(names, ", "))
	}
	if !slices.Contains(names, name) {
		return nil, fmt.Errorf("input %s: unknown command %q (want one of %s)", InputCommand, name, strings.Join(names, ", "))
	}
	return []string{name}, nil
}

// CommandNames lists the commands of root a step may run.
func CommandNames(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			names = append(names, c.Name())
		}
	}
	sort.Strings(names)
	return names
}

// TakesTargets reports whether cmd takes targets as arguments: its usage
// line names TARGET.
func TakesTargets(cmd *cobra.Command) bool { return strings.Contains(cmd.Use, "TARGET") }

// ReachesCluster reports whether cmd talks to a cluster, so the kubeconfig
// input means something to it: it has --kubeconfig-env.
func ReachesCluster(cmd *cobra.Command) bool { return cmd.Flags().Lookup("kubeconfig-env") != nil }

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
