package actions

import (
	"strings"
)

// InputVar returns the environment variable a runner sets for the input
// name: INPUT_ followed by the name upper-cased with spaces turned into
// underscores. Hyphens are kept (input fail-on-drift is INPUT_FAIL-ON-DRIFT),
// as both GitHub's runner and Gitea's (act) do.
func InputVar(name string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, " ", "_"))
}

// Input returns the value of the step input name, trimmed of surrounding
// white space, and whether it is set to something non-empty. The runner's
// form (INPUT_FAIL-ON-DRIFT) is read first, then the form with hyphens
// turned into underscores (INPUT_FAIL_ON_DRIFT) that a shell can export.
func (r *Runtime) Input(name string) (string, bool) {
	v := r.gha.GetInput(name)
	if v == "" && strings.Contains(name, "-") {
		v = strings.TrimSpace(r.getenv(strings.ReplaceAll(InputVar(name), "-", "_")))
	}
	return v, v != ""
}

// List splits a list input: items are separated by commas or new lines,
// surrounding white space is dropped, and so are empty items.
func List(v string) []string {
	var out []string
	for _, line := range strings.Split(v, "\n") {
		for _, item := range strings.Split(line, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// Bool parses a boolean input as the runner writes one: "true" or "false"
// (any case, as YAML 1.2 does).
func Bool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}
