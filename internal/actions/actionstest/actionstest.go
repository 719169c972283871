// Package actionstest reads a step's output the way GitHub's runner does
// (ActionCommand.TryParseV2 and TryParse, and ActionCommandManager's
// stop-commands), so tests can tell which lines it would act on, and its
// GITHUB_OUTPUT file as the runner reads it.
package actionstest

import (
	"strings"
	"unicode"
)

// Command is a workflow command the runner acts on.
type Command struct {
	Name string
	// Line is the whole line, as printed.
	Line string
}

// Commands returns the commands the runner acts on in one stream, in
// order, stop-commands and its resume token included. Unlike the runner
// it takes any name for a command, not only the ones it knows: a test
// asks whether text could read as one at all.
//
// Lines end at CR, LF or CRLF. A line is a command when, after leading
// white space, it starts with "::NAME[ PROPERTIES]::" (the runner's
// form), or when it holds "##[NAME[ PROPERTIES]]" anywhere (the older
// form, still read). After ::stop-commands::TOKEN, only TOKEN is read,
// in either form, and it resumes reading.
func Commands(stream string) []Command {
	var out []Command
	stop := ""
	for _, line := range lines(stream) {
		name, ok := parse(line)
		if !ok {
			continue
		}
		switch {
		case stop != "":
			if strings.EqualFold(name, stop) {
				out = append(out, Command{Name: name, Line: line})
				stop = ""
			}
		case strings.EqualFold(name, "stop-commands"):
			out = append(out, Command{Name: name, Line: line})
			stop = data(line)
		default:
			out = append(out, Command{Name: name, Line: line})
		}
	}
	return out
}

// lines splits a stream as .NET's StreamReader.ReadLine does.
func lines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

func parse(line string) (string, bool) {
	if rest := strings.TrimLeftFunc(line, unicode.IsSpace); strings.HasPrefix(rest, "::") {
		if end := strings.Index(rest[2:], "::"); end >= 0 {
			info := rest[2 : 2+end]
			name, _, _ := strings.Cut(info, " ")
			if name != "" {
				return name, true
			}
		}
	}
	if i := strings.Index(line, "##["); i >= 0 {
		if end := strings.Index(line[i:], "]"); end >= 0 {
			info := line[i+3 : i+end]
			name, _, _ := strings.Cut(info, " ")
			if name != "" {
				return name, true
			}
		}
	}
	return "", false
}

// data is a command's message, undone of the toolkit's escapes.
func data(line string) string {
	rest := strings.TrimLeftFunc(line, unicode.IsSpace)
	if strings.HasPrefix(rest, "::") {
		if end := strings.Index(rest[2:], "::"); end >= 0 {
			return unescape(rest[2+end+2:])
		}
	}
	if i := strings.Index(line, "##["); i >= 0 {
		if end := strings.Index(line[i:], "]"); end >= 0 {
			return unescape(line[i+end+1:])
		}
	}
	return ""
}

func unescape(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(s)
}
