package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

var updateActions = flag.Bool("update-actions", false, "rewrite action.yml and steps/<command>/action.yml of registered commands from their flags")

// repoRoot is the repository root, seen from this package.
const repoRoot = "../.."

// stepless commands have no steps/<command>/action.yml.
var stepless = map[string]bool{"version": true}

// stepOutputs are the outputs each command's step declares.
var stepOutputs = map[string][][2]string{
	"diff": {
		{"changed", `"true" when any affected target renders differently at head than at base, else "false".`},
		{"targets", `JSON list of the names of the targets that differ.`},
		{"risks", `Number of the change's risks nobody accepted (the report's risks section): changes the cluster will refuse, prunes that delete data, APIs it does not serve, and more.`},
		{"report-path", `Path of the full markdown report (input report-file), for an artifact upload.`},
	},
	"plan": {
		{"matrix", `JSON object whose "include" lists the affected targets ({"target", "cluster", "why"}): give strategy.matrix.include the fromJSON of this output's include.`},
		{"clusters", `JSON object whose "include" lists one entry per cluster ({"cluster", "targets"}, the targets comma-separated in dependency order): a per-cluster matrix, one job applying a cluster's targets in one run.`},
		{"targets", `JSON list of the names of the affected targets ("[]" when none).`},
	},
	"apply": {
		{"applied", `Number of objects created or changed (in a dry run: that would be).`},
		{"pruned", `Number of objects deleted because Git no longer has them (in a dry run: that would be).`},
	},
	"drift": {
		{"drifted", `"true" when any target drifted from Git, else "false".`},
	},
	"bump": {
		{"pull-requests", `JSON list of the pull requests opened or updated ({"policy", "number", "url"}).`},
	},
}

// extraInputUsers lists which commands' steps declare the inputs that are
// not flags (targets and kubeconfig follow from the command itself).
var extraInputUsers = map[string]map[string]bool{
	actions.InputAgeKey:      {"render": true, "apply": true, "diff": true, "plan": true, "drift": true},
	actions.InputToken:       {"diff": true, "plan": true, "drift": true, "bump": true},
	actions.InputTrustedKeys: {"apply": true, "drift": true},
}

var extraInputDocs = map[string]string{
	actions.InputAgeKey: "Age identities (one or more AGE-SECRET-KEY-1... lines) that decrypt the repository's SOPS files, " +
		"from a secret. Registered as masks before anything is printed; used as SOPS_AGE_KEY. " +
		"Leave it empty where no secret is available (a fork's pull request): diff and plan then compare encrypted files by their SOPS metadata.",
	actions.InputKubeconfig: "Kubeconfig content (not a path), from a secret. Its tokens, keys and certificates are masked " +
		"before anything is printed. For a file in the workspace use kubeconfig-path; targets whose ferry.yaml entry names a kubeconfig use that.",
	actions.InputToken: "Token for the forge API (pull-request comments, issues, pull requests) and for fetching missing commits; " +
		"the job's token by default. See docs/security.md for the permissions each step needs.",
	actions.InputTrustedKeys: "Public keys a revision must be signed by to be applied (with verify, ferry.yaml verify or a GitRepository's spec.verify): " +
		"armored OpenPGP public key blocks and SSH public keys, one per line, in authorized_keys or allowed_signers form. Used as FERRY_TRUSTED_KEYS.",
	actions.InputTargets: "Targets to work on (comma- or newline-separated names, <cluster>/<name> where a name is ambiguous); all targets when empty.",
}

// stepInput is one input of a step's metadata.
type stepInput struct {
	name, description, def string
	required               bool
}

// expectedInputs returns the inputs the binary reads for cmd, as the
// step of cmd should declare them.
func expectedInputs(cmd *cobra.Command) []stepInput {
	var out []stepInput
	for name, f := range actions.InputFlags(cmd.Flags()) {
		out = append(out, stepInput{name: name, description: flagDoc(f), required: isRequired(f)})
	}
	extra := func(name string) {
		in := stepInput{name: name, description: extraInputDocs[name]}
		if name == actions.InputToken {
			in.def = "${{ github.token }}"
		}
		out = append(out, in)
	}
	for _, name := range []string{actions.InputAgeKey, actions.InputToken, actions.InputTrustedKeys} {
		if extraInputUsers[name][cmd.Name()] && actions.InputFlags(cmd.Flags())[name] == nil {
			extra(name)
		}
	}
	if actions.TakesTargets(cmd) {
		extra(actions.InputTargets)
	}
	if actions.ReachesCluster(cmd) {
		extra(actions.InputKubeconfig)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func isRequired(f *pflag.Flag) bool {
	v := f.Annotations[cobra.BashCompOneRequiredFlag]
	return len(v) > 0 && v[0] == "true"
}

// flagDoc documents the input of a flag from the flag's usage text.
func flagDoc(f *pflag.Flag) string {
	_, usage := pflag.UnquoteUsage(f)
	doc := strings.ToUpper(usage[:1]) + usage[1:] + "."
	switch {
	case isBool(f):
		doc += " true or false"
		if f.DefValue == "true" {
			doc += " (default true)"
		}
		doc += "."
	case isList(f):
		doc += " Comma- or newline-separated."
		if d := strings.Trim(f.DefValue, "[]"); d != "" {
			doc += " Default: " + strconv.Quote(d) + "."
		}
	default:
		if f.DefValue != "" && f.DefValue != "0" {
			doc += " Default: " + strconv.Quote(f.DefValue) + "."
		}
	}
	return doc + " (--" + f.Name + ")"
}

// registered returns the commands of the binary that have steps, by name.
func registered() map[string]*cobra.Command {
	root := newRootCmd(&env{getenv: func(string) string { return "" }})
	out := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		if slices.Contains(actions.CommandNames(root), c.Name()) && !stepless[c.Name()] {
			out[c.Name()] = c
		}
	}
	return out
}

// actionMeta is what the tests read of an action.yml.
type actionMeta struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     any    `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
	} `yaml:"outputs"`
	Runs map[string]any `yaml:"runs"`
}

func readAction(t *testing.T, path string) *actionMeta {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m actionMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &m
}

// stepDirs lists the steps/<command> folders.
func stepDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, "steps"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestActionInputsMatchFlags checks the contract between the action
// metadata and the binary: every input a step declares is read by the
// binary (a flag of its command, or one of the inputs that are not
// flags), and every flag of every registered command is reachable from
// an input of its step and of the generic action.yml.
func TestActionInputsMatchFlags(t *testing.T) {
	cmds := registered()
	if *updateActions {
		writeActionFiles(t, cmds)
	}
	var unchecked []string
	rootWant := map[string]bool{actions.InputCommand: true}
	rootOutputs := map[string]bool{}
	for _, dir := range stepDirs(t) {
		path := filepath.Join(repoRoot, "steps", dir, "action.yml")
		meta := readAction(t, path)
		if _, err := os.Stat(filepath.Join(repoRoot, "steps", dir, "README.md")); err != nil {
			t.Errorf("steps/%s has no README.md", dir)
		}
		checkRuns(t, path, meta, dir)
		for name := range meta.Outputs {
			rootOutputs[name] = true
		}
		cmd := cmds[dir]
		if cmd == nil {
			unchecked = append(unchecked, dir)
			for name := range meta.Inputs {
				rootWant[name] = true
			}
			continue
		}
		want := map[string]stepInput{}
		for _, in := range expectedInputs(cmd) {
			want[in.name] = in
			rootWant[in.name] = true
		}
		for name := range want {
			if _, ok := meta.Inputs[name]; !ok {
				t.Errorf("steps/%s/action.yml: input %s is missing: flag or argument of ferry %s unreachable from the step (run go test ./cmd/ferry -run TestActionInputsMatchFlags -update-actions)", dir, name, dir)
			}
		}
		for name, in := range meta.Inputs {
			w, ok := want[name]
			if !ok {
				t.Errorf("steps/%s/action.yml: input %s is read by nothing: ferry %s has no flag --%s and it is no extra input", dir, name, dir, name)
				continue
			}
			if in.Required != w.required {
				t.Errorf("steps/%s/action.yml: input %s: required is %t, the flag says %t", dir, name, in.Required, w.required)
			}
			if in.Default != nil && fmt.Sprint(in.Default) != w.def {
				t.Errorf("steps/%s/action.yml: input %s has default %q: an input default would override ferry's own", dir, name, in.Default)
			}
			if strings.TrimSpace(in.Description) == "" {
				t.Errorf("steps/%s/action.yml: input %s is not documented", dir, name)
			}
			if strings.Contains(in.Description, "${{") {
				t.Errorf("steps/%s/action.yml: input %s: an expression in a description", dir, name)
			}
		}
		for _, o := range stepOutputs[dir] {
			if _, ok := meta.Outputs[o[0]]; !ok {
				t.Errorf("steps/%s/action.yml: output %s is not declared", dir, o[0])
			}
		}
	}
	for name := range cmds {
		if !slices.Contains(stepDirs(t), name) {
			t.Errorf("ferry %s has no steps/%s/action.yml (run with -update-actions)", name, name)
		}
	}

	rootPath := filepath.Join(repoRoot, "action.yml")
	root := readAction(t, rootPath)
	checkRuns(t, rootPath, root, "")
	for name := range rootWant {
		if _, ok := root.Inputs[name]; !ok {
			t.Errorf("action.yml: input %s is missing", name)
		}
	}
	for name, in := range root.Inputs {
		if !rootWant[name] {
			t.Errorf("action.yml: input %s belongs to no step and is read by nothing", name)
		}
		if strings.TrimSpace(in.Description) == "" {
			t.Errorf("action.yml: input %s is not documented", name)
		}
	}
	if !root.Inputs[actions.InputCommand].Required {
		t.Error("action.yml: input command should be required")
	}
	for name := range rootOutputs {
		if _, ok := root.Outputs[name]; !ok {
			t.Errorf("action.yml: output %s (of a step) is missing", name)
		}
	}
	if len(unchecked) > 0 {
		sort.Strings(unchecked)
		t.Logf("steps not checked against flags (ferry has no such command yet): %s", strings.Join(unchecked, ", "))
	}

	// The files are what the generator writes, so a change of a flag's
	// usage text shows up in them.
	if !t.Failed() && !*updateActions {
		for name, content := range actionFiles(t, cmds) {
			got, _ := os.ReadFile(filepath.Join(repoRoot, name))
			if !bytes.Equal(got, content) {
				t.Errorf("%s is not what the flags generate (run go test ./cmd/ferry -run TestActionInputsMatchFlags -update-actions and review):\n%s", name, goldenfile.LineDiff(string(content), string(got)))
			}
		}
	}
}

// checkRuns checks how an action starts the binary: a container action
// built from the repository's Dockerfile, the command as a constant
// argument, and no expression anywhere in runs (inputs reach the binary
// as INPUT_* variables only).
func checkRuns(t *testing.T, path string, meta *actionMeta, command string) {
	t.Helper()
	if meta.Runs["using"] != "docker" {
		t.Errorf("%s: runs.using = %v, want docker", path, meta.Runs["using"])
	}
	image, _ := meta.Runs["image"].(string)
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), image)); err != nil || filepath.Base(image) != "Dockerfile" {
		t.Errorf("%s: runs.image %q is not the repository's Dockerfile", path, image)
	}
	b, _ := json.Marshal(meta.Runs)
	if strings.Contains(string(b), "${{") {
		t.Errorf("%s: runs interpolates an expression: %s", path, b)
	}
	args, _ := meta.Runs["args"].([]any)
	switch {
	case command == "" && len(args) != 0:
		t.Errorf("%s: the generic action passes no arguments (the command comes from input command), got %v", path, args)
	case command != "" && (len(args) != 1 || args[0] != command):
		t.Errorf("%s: runs.args = %v, want [%s]", path, args, command)
	}
}

// yamlString quotes s as a YAML scalar (JSON strings are YAML).
func yamlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

const generatedHeader = "# Generated from ferry's flags by\n#   go test ./cmd/ferry -run TestActionInputsMatchFlags -update-actions\n# Change a flag's usage text (or cmd/ferry/actions_metadata_test.go), not this file.\n"

// actionFiles returns the metadata files the registered commands' flags
// make: steps/<command>/action.yml, and action.yml with the inputs of
// every step (those of unregistered commands read from their files).
func actionFiles(t *testing.T, cmds map[string]*cobra.Command) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	type rootInput struct {
		docs     map[string]string // by command
		def      string
		commands []string
	}
	rootInputs := map[string]*rootInput{}
	rootOutputs := map[string][]string{}
	addRoot := func(command, name, doc, def string) {
		ri := rootInputs[name]
		if ri == nil {
			ri = &rootInput{docs: map[string]string{}, def: def}
			rootInputs[name] = ri
		}
		ri.docs[command] = doc
		ri.commands = append(ri.commands, command)
	}
	names := slices.Sorted(maps.Keys(cmds))
	for _, name := range names {
		cmd := cmds[name]
		var b strings.Builder
		b.WriteString(generatedHeader)
		fmt.Fprintf(&b, "name: %s\n", yamlString("ferry "+name))
		fmt.Fprintf(&b, "description: %s\n", yamlString(cmd.Short))
		b.WriteString("author: ferry-ci\nbranding:\n  icon: anchor\n  color: blue\ninputs:\n")
		for _, in := range expectedInputs(cmd) {
			fmt.Fprintf(&b, "  %s:\n    description: %s\n    required: %t\n", in.name, yamlString(in.description), in.required)
			if in.def != "" {
				fmt.Fprintf(&b, "    default: %s\n", yamlString(in.def))
			}
			addRoot(name, in.name, in.description, in.def)
		}
		if outs := stepOutputs[name]; len(outs) > 0 {
			b.WriteString("outputs:\n")
			for _, o := range outs {
				fmt.Fprintf(&b, "  %s:\n    description: %s\n", o[0], yamlString(o[1]))
				rootOutputs[o[0]] = append(rootOutputs[o[0]], name+": "+o[1])
			}
		}
		fmt.Fprintf(&b, "runs:\n  using: docker\n  image: ../../Dockerfile\n  args:\n    - %s\n", name)
		files[filepath.Join("steps", name, "action.yml")] = []byte(b.String())
	}
	for _, dir := range stepDirs(t) {
		if cmds[dir] != nil {
			continue
		}
		meta := readAction(t, filepath.Join(repoRoot, "steps", dir, "action.yml"))
		for name, in := range meta.Inputs {
			def := ""
			if in.Default != nil {
				def = fmt.Sprint(in.Default)
			}
			addRoot(dir, name, strings.TrimSpace(in.Description), def)
		}
		for name, o := range meta.Outputs {
			rootOutputs[name] = append(rootOutputs[name], dir+": "+strings.TrimSpace(o.Description))
		}
	}

	var b strings.Builder
	b.WriteString(generatedHeader)
	b.WriteString(`name: ferry
description: Render, diff, apply and audit a GitOps repository from CI (push-model GitOps)
author: ferry-ci
branding:
  icon: anchor
  color: blue
inputs:
  command:
    description: "The ferry command to run: ` + strings.Join(append(names, "version"), ", ") + `. Every other input applies to the commands named in its description; the steps under steps/<command> take only their command's inputs."
    required: true
`)
	inNames := make([]string, 0, len(rootInputs))
	for name := range rootInputs {
		inNames = append(inNames, name)
	}
	sort.Strings(inNames)
	for _, name := range inNames {
		ri := rootInputs[name]
		sort.Strings(ri.commands)
		// One description when every command documents the input alike.
		var parts []string
		seen := map[string][]string{}
		var order []string
		for _, c := range ri.commands {
			d := ri.docs[c]
			if _, ok := seen[d]; !ok {
				order = append(order, d)
			}
			seen[d] = append(seen[d], c)
		}
		for _, d := range order {
			parts = append(parts, "["+strings.Join(seen[d], ", ")+"] "+d)
		}
		fmt.Fprintf(&b, "  %s:\n    description: %s\n    required: false\n", name, yamlString(strings.Join(parts, " ")))
		if ri.def != "" {
			fmt.Fprintf(&b, "    default: %s\n", yamlString(ri.def))
		}
	}
	b.WriteString("outputs:\n")
	outNames := make([]string, 0, len(rootOutputs))
	for name := range rootOutputs {
		outNames = append(outNames, name)
	}
	sort.Strings(outNames)
	for _, name := range outNames {
		fmt.Fprintf(&b, "  %s:\n    description: %s\n", name, yamlString(strings.Join(rootOutputs[name], " ")))
	}
	b.WriteString("runs:\n  using: docker\n  image: Dockerfile\n")
	files["action.yml"] = []byte(b.String())
	return files
}

func writeActionFiles(t *testing.T, cmds map[string]*cobra.Command) {
	t.Helper()
	for name, content := range actionFiles(t, cmds) {
		p := filepath.Join(repoRoot, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// isList reports whether a flag takes several values.
func isList(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

func isBool(f *pflag.Flag) bool { return f.Value.Type() == "bool" }
