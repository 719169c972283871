package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
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
	// inputAgeKey holds age identities (AGE-SECRET-KEY-1... lines); it is
	// used as SOPS_AGE_KEY.
	inputAgeKey = "age-key"
	// inputKubeconfig holds kubeconfig content, for commands that reach a
	// cluster (those with --kubeconfig-env).
	inputKubeconfig = "kubeconfig"
	// inputToken is the forge token (used as FERRY_TOKEN).
	inputToken = "token"
	// inputTargets lists targets, as the positional arguments of commands
	// whose usage names TARGET.
	inputTargets = "targets"
)

// flagInput returns the input a flag is read from.
func flagInput(flag string) string {
	if flag == "kubeconfig" {
		return "kubeconfig-path"
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
	pending := func() []string { return maskable(e.masker.Values()) }
	e.stdout = e.gha.Stdout(pending)
	e.stderr = e.gha.Stderr(e.stderr, pending)
	if err := e.maskSecretInputs(); err != nil {
		return nil, err
	}
	args, err := e.inputArgs(args, newRoot)
	if err != nil {
		return nil, err
	}
	return args, nil
}

// maskable returns what of the decrypted values to register as masks: the
// lines ferry's own masker hides (three characters or more), and the base64
// form of each value, as a rendered Secret's data carries it.
func maskable(values []string) []string {
	var out []string
	for _, v := range values {
		for _, line := range strings.Split(v, "\n") {
			if len(strings.TrimSpace(line)) >= 3 {
				out = append(out, line)
			}
		}
		if len(v) >= 3 {
			out = append(out, base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	return out
}

// maskSecretInputs registers the secret inputs (and the same secrets given
// as environment variables) as masks.
func (e *env) maskSecretInputs() error {
	var values []string
	for _, key := range []string{e.rawInput(inputAgeKey), e.getenv("SOPS_AGE_KEY")} {
		for _, line := range strings.Split(key, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				values = append(values, l)
			}
		}
	}
	values = append(values, e.rawInput(inputToken), e.getenv("FERRY_TOKEN"))
	if kc := e.rawInput(inputKubeconfig); kc != "" {
		values = append(values, kubeconfigSecrets(kc)...)
	}
	return e.gha.Mask(values...)
}

// rawInput returns an input as the runner set it, trimmed.
func (e *env) rawInput(name string) string {
	v, _ := e.gha.Input(name)
	return v
}

// kubeconfigSecretKeys are the kubeconfig fields whose values are secret.
var kubeconfigSecretKeys = map[string]bool{
	"token": true, "client-key-data": true, "client-certificate-data": true,
	"certificate-authority-data": true, "password": true,
	"id-token": true, "refresh-token": true, "access-token": true, "client-secret": true,
}

// kubeconfigSecrets returns the secret values of kubeconfig content: those
// of the fields above anywhere in it. Content that does not parse is
// masked whole, line by line.
func kubeconfigSecrets(content string) []string {
	var doc any
	if err := yaml.Unmarshal([]byte(content), &doc); err != nil {
		return []string{content}
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && kubeconfigSecretKeys[k] {
					out = append(out, s)
				}
				walk(val)
			}
		case []any:
			for _, item := range t {
				walk(item)
			}
		}
	}
	walk(doc)
	if _, ok := doc.(map[string]any); !ok {
		out = append(out, content)
	}
	return out
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
	if v, ok := e.gha.Input(inputAgeKey); ok {
		if err := checkAgeKey(v); err != nil {
			return err
		}
		e.setenv("SOPS_AGE_KEY", v)
		in.used = append(in.used, inputAgeKey)
	}
	if v, ok := e.gha.Input(inputToken); ok {
		e.setenv("FERRY_TOKEN", v)
		in.used = append(in.used, inputToken)
	}
	if v, ok := e.gha.Input(flagInput("kubeconfig")); ok && in.flags["kubeconfig-path"] != nil && !in.flags["kubeconfig-path"].Changed {
		if looksLikeKubeconfig(v) {
			return errors.New("input kubeconfig-path holds kubeconfig content, not a file path: pass the content as input kubeconfig instead (the value is not shown)")
		}
	}
	v, ok := e.gha.Input(inputKubeconfig)
	if !ok {
		return nil
	}
	if !reachesCluster(in.cmd) {
		return fmt.Errorf("input %s: ferry %s does not connect to a cluster", inputKubeconfig, in.cmd.Name())
	}
	if err := checkKubeconfig(v); err != nil {
		return err
	}
	if f := in.flags["kubeconfig-path"]; f != nil && (f.Changed || contains(in.used, "kubeconfig-path")) {
		return fmt.Errorf("inputs %s (content) and kubeconfig-path (a file) are both set: use one", inputKubeconfig)
	}
	if f := in.flags["kubeconfig-env"]; !f.Changed && !contains(in.used, "kubeconfig-env") {
		in.injected = append(in.injected, "--kubeconfig-env="+actions.InputVar(inputKubeconfig))
	}
	in.used = append(in.used, inputKubeconfig)
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

// checkAgeKey says what is wrong with an age-key input without showing any
// of it.
func checkAgeKey(v string) error {
	const notShown = " (the value is not shown)"
	if strings.HasPrefix(strings.TrimSpace(v), "age1") {
		return errors.New("input age-key holds an age recipient (a public key, age1...), not an identity: pass the AGE-SECRET-KEY-1... line of the key file" + notShown)
	}
	if looksLikePath(v) && !strings.HasPrefix(v, "AGE-SECRET-KEY-") {
		return errors.New("input age-key is not an age identity: it looks like a file path; pass the key itself (the AGE-SECRET-KEY-1... line), e.g. from a secret" + notShown)
	}
	if _, err := secrets.ParseIdentities(v); err != nil {
		// ParseIdentities never quotes key material.
		return fmt.Errorf("input age-key is not an age identity: want one or more AGE-SECRET-KEY-1... lines: %w%s", err, notShown)
	}
	return nil
}

// looksLikePath reports whether an input that should hold content holds
// one line that reads as a file path.
func looksLikePath(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, "\n{") || strings.Contains(v, ": ") {
		return false
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "../") {
		return true
	}
	if _, err := os.Stat(v); err == nil {
		return true
	}
	ext := strings.ToLower(filepath.Ext(v))
	return ext == ".yaml" || ext == ".yml" || ext == ".conf" || ext == ".kubeconfig" || ext == ".txt" || ext == ".key" || strings.HasSuffix(v, "/config")
}

// looksLikeKubeconfig reports whether an input that should hold a path
// holds kubeconfig content.
func looksLikeKubeconfig(v string) bool {
	return strings.Contains(v, "\n") || strings.HasPrefix(strings.TrimSpace(v), "{") ||
		strings.Contains(v, "apiVersion:") || strings.Contains(v, "clusters:")
}

// checkKubeconfig says what is wrong with a kubeconfig input without
// showing it.
func checkKubeconfig(v string) error {
	const notShown = " (the value is not shown)"
	if looksLikePath(v) {
		return errors.New("input kubeconfig holds a file path, not kubeconfig content: pass the content (e.g. from a secret), or the path as input kubeconfig-path" + notShown)
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(v), &doc); err != nil || doc == nil {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v)); err == nil && strings.Contains(string(b), "clusters") {
			return errors.New("input kubeconfig is base64-encoded: pass the decoded content" + notShown)
		}
		return errors.New("input kubeconfig is not kubeconfig content: it is not a YAML mapping" + notShown)
	}
	if _, ok := doc["clusters"]; !ok {
		return errors.New("input kubeconfig is not kubeconfig content: it has no clusters" + notShown)
	}
	return nil
}

// fileRef finds the file (and line) an error message is about:
// "apps/stage/secret.yaml:12: ...", "ferry.yaml: line 3: ...".
var fileRef = regexp.MustCompile(`(?:^|[\s"'(])((?:[\w.@+-]+/)*[\w.@+-]+\.(?:ya?ml|json|env))(?::(\d+)|: line (\d+))?`)

// annotation places an error on the file it is about, relative to the
// workspace.
func (e *env) annotation(err error, command string) actions.Annotation {
	a := actions.Annotation{Title: "ferry " + command}
	var de *secrets.DecryptError
	var re *render.RemoteError
	switch {
	case errors.As(err, &de):
		a.File = de.Path
	case errors.As(err, &re):
		a.File = re.File
	default:
		m := fileRef.FindStringSubmatch(err.Error())
		if m == nil {
			return a
		}
		a.File = m[1]
		for _, n := range m[2:] {
			if l, err := strconv.Atoi(n); err == nil {
				a.Line = l
			}
		}
	}
	if filepath.IsAbs(a.File) {
		if ws := e.getenv("GITHUB_WORKSPACE"); ws != "" {
			if rel, err := filepath.Rel(ws, a.File); err == nil && !strings.HasPrefix(rel, "..") {
				a.File = filepath.ToSlash(rel)
			}
		}
		return a
	}
	repo := e.actionRepo
	if filepath.IsAbs(repo) {
		if ws := e.getenv("GITHUB_WORKSPACE"); ws != "" {
			if rel, err := filepath.Rel(ws, repo); err == nil && !strings.HasPrefix(rel, "..") {
				repo = rel
			}
		}
	}
	if repo != "" && repo != "." && !filepath.IsAbs(repo) {
		a.File = filepath.ToSlash(filepath.Join(repo, a.File))
	}
	return a
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
	_ = e.gha.Error(e.masker.Mask(strings.TrimSpace(err.Error())), e.annotation(err, command))
}
