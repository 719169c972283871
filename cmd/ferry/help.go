package main

import (
	"embed"
	"strings"
)

// The long help and the examples of each command are text files under
// help/, read as they are.
//
//go:embed help
var helpFiles embed.FS

// help is the long help of a command: help/<command>.txt.
func help(command string) string { return helpFile(command + ".txt") }

// helpExamples are the examples of a command: help/<command>.examples.txt.
func helpExamples(command string) string { return helpFile(command + ".examples.txt") }

func helpFile(name string) string {
	b, err := helpFiles.ReadFile("help/" + name)
	if err != nil {
		panic("ferry: no help file " + name) // a build without its help files
	}
	return strings.TrimSuffix(string(b), "\n")
}
