package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// choiceValue is a flag that takes one of a few values (--format,
// --color) and checks itself when it is set, so a bad value is reported
// (exit 2) before the command runs.
type choiceValue struct {
	value   string
	allowed []string
}

// newChoice is a choice of the allowed values, defaulting to the first.
func newChoice(allowed ...string) *choiceValue {
	return &choiceValue{value: allowed[0], allowed: allowed}
}

func (f *choiceValue) String() string { return f.value }
func (f *choiceValue) Type() string   { return "string" }

func (f *choiceValue) Set(s string) error {
	if !slices.Contains(f.allowed, s) {
		return fmt.Errorf("want %s", orList(f.allowed))
	}
	f.value = s
	return nil
}

// orList is "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// repoFlags name the repository a command reads, and how far its
// kustomizations may reach.
type repoFlags struct {
	dir              string
	allowRemoteBases bool
}

func (r *repoFlags) register(f *pflag.FlagSet, help string) {
	f.StringVar(&r.dir, "repo", ".", help)
	f.BoolVar(&r.allowRemoteBases, "allow-remote-bases", false, "let kustomizations fetch remote bases and resources")
}
