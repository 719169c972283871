package secrets

import "strings"

// FromEnvironment lists the secrets a run's environment holds by name:
// the values of tokenVars, the age identities of SOPS_AGE_KEY, every
// FERRY_SECRET_* value but usernames and every FERRY_REGISTRY_*_PASSWORD
// (environ lists the environment as KEY=value; nil lists nothing).
func FromEnvironment(getenv func(string) string, environ func() []string, tokenVars ...string) []string {
	var values []string
	for _, k := range tokenVars {
		values = append(values, getenv(k))
	}
	values = append(values, AgeKeyLines(getenv("SOPS_AGE_KEY"))...)
	if environ != nil {
		for _, kv := range environ() {
			if k, _, _ := strings.Cut(kv, "="); secretVar(k) {
				values = append(values, getenv(k))
			}
		}
	}
	return values
}

// secretVar reports whether the variable k holds a secret by its name:
// every FERRY_SECRET_<NAME>_<KEY> but the usernames, and every registry
// password. A username is no secret, and usually the name of an account
// or organisation that image and chart references show: masking it would
// blank those out.
func secretVar(k string) bool {
	switch {
	case strings.HasPrefix(k, "FERRY_SECRET_"):
		return !strings.HasSuffix(k, "_USERNAME")
	case strings.HasPrefix(k, "FERRY_REGISTRY_"):
		return strings.HasSuffix(k, "_PASSWORD")
	}
	return false
}

// AgeKeyLines are the lines of age identities text worth hiding: all but
// blank lines and comments (the key file's "# public key: age1..." is
// public).
func AgeKeyLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
