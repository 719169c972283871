package actions

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Inside a step every flag of the command that the command line leaves
// unset is read from the step input of the same name (flag --fail-on-drift
// from input fail-on-drift), except --kubeconfig, a path, whose input is
// kubeconfig-path. Bool inputs are "true" or "false"; list flags take
// comma- or newline-separated items. The secret inputs (InputAgeKey,
// InputToken, InputKubeconfig) and InputTargets are not flags.

// InputTargets lists targets, as the positional arguments of commands that
// take them.
const InputTargets = "targets"

// FlagInput returns the input a flag is read from.
func FlagInput(flag string) string {
	if flag == "kubeconfig" {
		return InputKubeconfigPath
	}
	return flag
}

// InputFlags lists, by input name, the flags of fs that inputs reach:
// all but --help.
func InputFlags(fs *pflag.FlagSet) map[string]*pflag.Flag {
	flags := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			flags[FlagInput(f.Name)] = f
		}
	})
	return flags
}

// Command is the command a step runs, its command line parsed.
type Command struct {
	Name string
	// Flags are the command's flags, those the command line set marked
	// Changed.
	Flags *pflag.FlagSet
	// Required names the flags the command cannot run without.
	Required []string
	// Args are the positional arguments the command line gave.
	Args []string
	// TakesTargets says the command takes targets as arguments;
	// ReachesCluster that it connects to clusters (it has --kubeconfig-env).
	TakesTargets, ReachesCluster bool
}

// CommandLine is what a step's inputs add to the command line.
type CommandLine struct {
	// Flags are --name=value for every flag an input sets.
	Flags []string
	// Targets are the targets input's, when the command line names none.
	Targets []string
	// Env holds what the secret inputs hand to ferry through its
	// environment, never its arguments: SOPS_AGE_KEY, FERRY_TOKEN.
	Env map[string]string
	// Used lists the inputs used.
	Used []string
}

// CommandLine turns the step's inputs into flags, targets and environment
// for c: an input sets its flag unless the command line did; the secret
// inputs are checked (without showing them) and set in Env.
func (r *Runtime) CommandLine(c Command) (*CommandLine, error) {
	in := &CommandLine{Env: map[string]string{}}
	flags := InputFlags(c.Flags)
	for _, phase := range []func(Command, map[string]*pflag.Flag, *CommandLine) error{r.flagInputs, r.secretInputs, r.targetInputs} {
		if err := phase(c, flags, in); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// flagInputs turns the inputs named after the command's flags into those
// flags (the command line wins), and checks the required ones are set.
func (r *Runtime) flagInputs(c Command, flags map[string]*pflag.Flag, in *CommandLine) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		f := flags[name]
		if f.Changed {
			continue
		}
		v, ok := r.Input(name)
		if !ok {
			continue
		}
		vals, err := inputValues(name, f, v)
		if err != nil {
			return err
		}
		for _, val := range vals {
			in.Flags = append(in.Flags, "--"+f.Name+"="+val)
		}
		in.Used = append(in.Used, name)
	}
	for _, flag := range c.Required {
		name := FlagInput(flag)
		if f := flags[name]; f != nil && !f.Changed && !slices.Contains(in.Used, name) {
			return fmt.Errorf("required input %s is not set (ferry %s needs --%s)", name, c.Name, f.Name)
		}
	}
	return nil
}

// secretInputs checks the age key, the token and the kubeconfig inputs
// and hands them to ferry through its environment (never its arguments).
func (r *Runtime) secretInputs(c Command, flags map[string]*pflag.Flag, in *CommandLine) error {
	if v, ok := r.Input(InputAgeKey); ok {
		if err := CheckAgeKey(v); err != nil {
			return err
		}
		in.Env["SOPS_AGE_KEY"] = v
		in.Used = append(in.Used, InputAgeKey)
	}
	if v, ok := r.Input(InputTrustedKeys); ok {
		in.Env["FERRY_TRUSTED_KEYS"] = v
		in.Used = append(in.Used, InputTrustedKeys)
	}
	if v, ok := r.Input(InputToken); ok {
		in.Env["FERRY_TOKEN"] = v
		in.Used = append(in.Used, InputToken)
	}
	path := flags[InputKubeconfigPath]
	if v, ok := r.Input(InputKubeconfigPath); ok && path != nil && !path.Changed {
		if err := CheckKubeconfigPath(v); err != nil {
			return err
		}
	}
	v, ok := r.Input(InputKubeconfig)
	if !ok {
		return nil
	}
	if !c.ReachesCluster {
		return fmt.Errorf("input %s: ferry %s does not connect to a cluster", InputKubeconfig, c.Name)
	}
	if err := CheckKubeconfig(v); err != nil {
		return err
	}
	if path != nil && (path.Changed || slices.Contains(in.Used, InputKubeconfigPath)) {
		return fmt.Errorf("inputs %s (content) and kubeconfig-path (a file) are both set: use one", InputKubeconfig)
	}
	if f := flags["kubeconfig-env"]; !f.Changed && !slices.Contains(in.Used, "kubeconfig-env") {
		in.Flags = append(in.Flags, "--kubeconfig-env="+InputVar(InputKubeconfig))
	}
	in.Used = append(in.Used, InputKubeconfig)
	return nil
}

// targetInputs reads the targets input, unless the command line names
// targets.
func (r *Runtime) targetInputs(c Command, _ map[string]*pflag.Flag, in *CommandLine) error {
	v, ok := r.Input(InputTargets)
	if !ok {
		return nil
	}
	if !c.TakesTargets {
		return fmt.Errorf("input %s: ferry %s takes no targets", InputTargets, c.Name)
	}
	if len(c.Args) > 0 {
		return nil
	}
	for _, t := range List(v) {
		if strings.HasPrefix(t, "-") {
			return fmt.Errorf("input %s: %q is not a target name", InputTargets, t)
		}
		in.Targets = append(in.Targets, t)
	}
	in.Used = append(in.Used, InputTargets)
	return nil
}

// inputValues checks an input against its flag and returns the flag
// values it stands for.
func inputValues(name string, f *pflag.Flag, v string) ([]string, error) {
	_, isList := f.Value.(pflag.SliceValue)
	switch {
	case f.Value.Type() == "bool":
		b, ok := Bool(v)
		if !ok {
			return nil, fmt.Errorf("input %s: want true or false, got %q", name, v)
		}
		return []string{strconv.FormatBool(b)}, nil
	case isList:
		items := List(v)
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
