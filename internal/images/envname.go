package images

import (
	"regexp"
	"strings"
)

// How a host or a Secret name is spelled in the name of an environment
// variable (FERRY_REGISTRY_<HOST>_USERNAME, FERRY_SECRET_<NAME>_PASSWORD):
// letters upper-cased, digits kept, and the separators
//
//	"."  as "_"      ghcr.io              GHCR_IO
//	"-"  as "__"     charts-example.com   CHARTS__EXAMPLE_COM
//	":"  as "___"    127.0.0.1:5000       127_0_0_1___5000
//
// It spells names made of words of letters and digits joined by ".",
// ":" or a run of "-" (every DNS host name, host:port and IPv4 address,
// every Kubernetes Secret name), and spells no two of them alike: a run
// of n underscores between two words is one ".", one ":" or n/2 "-",
// whichever n says (1, 3, even). Upper case, "_", "/", brackets (IPv6)
// and separators side by side have no spelling: such a host's
// credentials come from the Docker config.json only.
//
// The spelling before this one made every character other than a letter
// or digit "_", so that charts.example.com and charts-example.com shared
// their variables. It is still read for a name whose spelling changed
// (one holding "-" or ":") when no other name the run knows of spells
// the same way in either spelling, with a warning (EnvCredentials,
// CredentialsFromEnv).

// spellable are the names envName spells.
var spellable = regexp.MustCompile(`^[a-z0-9]+(?:(?:[.:]|-+)[a-z0-9]+)*$`)

// envName spells name (see above); false when it has no spelling.
func envName(name string) (string, bool) {
	if !spellable.MatchString(name) {
		return "", false
	}
	r := strings.NewReplacer(".", "_", "-", "__", ":", "___")
	return strings.ToUpper(r.Replace(name)), true
}

// legacyEnvName is the former spelling of name: upper-cased, every other
// character than A-Z and 0-9 made "_".
func legacyEnvName(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// The prefixes of the credential variables.
const (
	registryPrefix = "FERRY_REGISTRY_"
	secretPrefix   = "FERRY_SECRET_"
)

// RegistryEnv is the prefix of the variables holding the credentials of
// a registry or chart repository host: FERRY_REGISTRY_<HOST>, + _USERNAME
// and _PASSWORD (ghcr.io: FERRY_REGISTRY_GHCR_IO_USERNAME; 127.0.0.1:5000:
// FERRY_REGISTRY_127_0_0_1___5000_USERNAME). The host is compared in lower
// case, with its port when it is not the default one. False when the
// host has no spelling (see envName).
func RegistryEnv(host string) (string, bool) {
	n, ok := envName(strings.ToLower(host))
	return registryPrefix + n, ok
}

// SecretEnv is the prefix of the variables standing for a Secret a
// secretRef names: FERRY_SECRET_<NAME>, + _USERNAME and _PASSWORD (or
// another key, SecretKeyEnv). False when the name has no spelling.
func SecretEnv(name string) (string, bool) {
	n, ok := envName(name)
	return secretPrefix + n, ok
}

// SecretKeyEnv is the variable holding the key of a Secret:
// FERRY_SECRET_<NAME>_<KEY>, the key spelled as a name is (ca.crt:
// CA_CRT). Keys are a fixed set per use, none another's dotted suffix,
// so two pairs never share a variable.
func SecretKeyEnv(name, key string) (string, bool) {
	p, ok := SecretEnv(name)
	k, kok := envName(key)
	return p + "_" + k, ok && kok
}

// Names are the hosts and Secret names a run's configuration names (its
// chart sources, its image policies): a variable of the former spelling
// is read for one of them only when no other spells the same way.
type Names struct {
	Hosts, Secrets []string
}

// PolicyNames are the registries and secretRefs of the policies.
func PolicyNames(ps []*Policy) Names {
	var n Names
	for _, p := range ps {
		if h := p.Registry(); h != "" {
			n.Hosts = append(n.Hosts, h)
		}
		if p.SecretRef != "" {
			n.Secrets = append(n.Secrets, p.SecretRef)
		}
	}
	return n
}

// clash is a name of known, other than name, whose variables in either
// spelling are those of name's former spelling; "" when there is none.
func clash(name string, known []string) string {
	legacy := legacyEnvName(name)
	for _, k := range known {
		if k == name {
			continue
		}
		if n, ok := envName(k); legacyEnvName(k) == legacy || ok && n == legacy {
			return k
		}
	}
	return ""
}

// FormerSecretEnv is the prefix of the variables of the former spelling
// of a Secret name (FERRY_SECRET_<NAME>, every other character than a
// letter or digit made "_") when it differs from today's (SecretEnv),
// and the name among known (the other Secret names the run's
// configuration names) whose variables those may also be; "" when none,
// and they are then read with a warning.
func FormerSecretEnv(name string, known []string) (prefix, clashing string, differs bool) {
	spelled, ok := envName(name)
	legacy := legacyEnvName(name)
	if !ok || spelled == legacy {
		return "", "", false
	}
	return secretPrefix + legacy, clash(name, known), true
}
