package images

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ferry-ci/ferry/internal/markdown"
)

// SelectPolicies returns the policies names name (all when none):
// NAMESPACE/NAME, NAMESPACE:NAME, or NAME when only one namespace has it.
// An error names the --policy flag the names come from.
func SelectPolicies(all []*Policy, names []string) ([]*Policy, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []*Policy
	seen := map[*Policy]bool{}
	for _, n := range names {
		ref := strings.Replace(n, "/", ":", 1)
		var found []*Policy
		for _, p := range all {
			if p.Ref() == ref || !strings.Contains(ref, ":") && p.Name == ref {
				found = append(found, p)
			}
		}
		switch len(found) {
		case 0:
			var have []string
			for _, p := range all {
				have = append(have, p.Namespace+"/"+p.Name)
			}
			if len(have) == 0 {
				return nil, fmt.Errorf("--policy %q: the repository declares no image policy", n)
			}
			return nil, fmt.Errorf("--policy %q: no such image policy (the repository has %s)", n, strings.Join(have, ", "))
		case 1:
		default:
			return nil, fmt.Errorf("--policy %q is ambiguous: write NAMESPACE/NAME (%s/%s or %s/%s)", n, found[0].Namespace, n, found[1].Namespace, n)
		}
		if !seen[found[0]] {
			seen[found[0]] = true
			out = append(out, found[0])
		}
	}
	return out, nil
}

// EnvRead is what CredentialsFromEnv read.
type EnvRead struct {
	Credentials Credentials
	// Passwords are the passwords read, for the caller to mask.
	Passwords []string
	// Warnings are about variables of the former spelling (see
	// RegistryEnv): read, or left unread as ambiguous.
	Warnings []string
}

// CredentialsFromEnv reads, through getenv, the credentials of the
// policies' registries (FERRY_REGISTRY_<HOST>_USERNAME/_PASSWORD) and
// secretRefs (FERRY_SECRET_<NAME>_USERNAME/_PASSWORD), and the Docker
// config.json in $DOCKER_CONFIG (else ~/.docker). known are the hosts and
// Secret names of the run's configuration (PolicyNames of every policy):
// a variable of the former spelling is read only for a name no other of
// them spells the same way.
func CredentialsFromEnv(getenv func(string) string, ps []*Policy, known Names) (EnvRead, error) {
	var r EnvRead
	var err error
	if r.Credentials.DockerConfig, err = readDockerConfig(getenv); err != nil {
		return r, err
	}
	read := func(prefix, what, name string, known []string) (Basic, bool) {
		b, ok, warning := lookupEnv(getenv, prefix, what, name, func() []string { return known })
		if warning != "" && !slices.Contains(r.Warnings, warning) {
			r.Warnings = append(r.Warnings, warning)
		}
		if ok {
			r.Passwords = append(r.Passwords, b.Password)
		}
		return b, ok
	}
	c := &r.Credentials
	for _, p := range ps {
		if host := p.Registry(); host != "" {
			if b, ok := read(registryPrefix, "host", strings.ToLower(host), known.Hosts); ok {
				if c.Registries == nil {
					c.Registries = map[string]Basic{}
				}
				c.Registries[host] = b
			}
		}
		if p.SecretRef != "" {
			if b, ok := read(secretPrefix, "Secret", p.SecretRef, known.Secrets); ok {
				if c.Secrets == nil {
					c.Secrets = map[string]Basic{}
				}
				c.Secrets[p.SecretRef] = b
			}
		}
	}
	slices.Sort(r.Warnings)
	return r, nil
}

// DockerConfigSecrets returns the secrets of the Docker config.json in
// $DOCKER_CONFIG (else ~/.docker), for the caller to mask: each entry's
// password, auth (base64 of user:password), identity and registry token.
func DockerConfigSecrets(getenv func(string) string) ([]string, error) {
	data, err := readDockerConfig(getenv)
	if err != nil {
		return nil, err
	}
	auths, err := parseDockerConfig(data)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range auths {
		for _, v := range []string{a.Password, a.Auth, a.IdentityToken, a.RegistryToken} {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// readDockerConfig reads config.json in $DOCKER_CONFIG, else in
// ~/.docker; nil when there is none.
func readDockerConfig(getenv func(string) string) ([]byte, error) {
	path := ""
	if dir := getenv("DOCKER_CONFIG"); dir != "" {
		path = filepath.Join(dir, "config.json")
	} else if home := getenv("HOME"); home != "" {
		path = filepath.Join(home, ".docker", "config.json")
	}
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("docker config: %w", err)
	}
	return data, nil
}

// WriteReport writes, per scanned policy, the tag it selected and the
// lines that change (verb: "changed", "would change").
func WriteReport(w io.Writer, res *ScanResult, cs *ChangeSet, verb string) {
	byPolicy := map[string][]Change{}
	for _, c := range cs.Changes() {
		byPolicy[c.Policy.Ref()] = append(byPolicy[c.Policy.Ref()], c)
	}
	for _, r := range res.Policies {
		if r.Tag == "" {
			fmt.Fprintf(w, "%s: no matching tag\n", r.Policy.ID())
			continue
		}
		changes := byPolicy[r.Policy.Ref()]
		state := "up to date"
		if len(changes) > 0 {
			state = fmt.Sprintf("%s %d line(s)", verb, len(changes))
		}
		fmt.Fprintf(w, "%s: %s (%s): %s\n", r.Policy.ID(), r.Tag, r.Digest, state)
		for _, c := range changes {
			fmt.Fprintf(w, "  %s:%d  %s -> %s\n", c.File, c.Line, c.Old, c.New)
		}
	}
}

// Markdown is a scan's step summary: a table of the changed lines, then
// the scan's warnings.
func Markdown(res *ScanResult, cs *ChangeSet, dryRun bool) string {
	var b strings.Builder
	title := "ferry bump"
	if dryRun {
		title += " (dry run)"
	}
	fmt.Fprintf(&b, "### %s\n\n", title)
	changes := cs.Changes()
	if len(changes) == 0 {
		b.WriteString("Every marked image is at its policy's latest tag.\n")
	} else {
		b.WriteString("| policy | file | image | old → new | digest |\n|---|---|---|---|---|\n")
		sort.SliceStable(changes, func(i, j int) bool { return changes[i].Policy.ID() < changes[j].Policy.ID() })
		digest := res.ByRef()
		for _, c := range changes {
			fmt.Fprintf(&b, "| %s | %s | %s | %s → %s | %s |\n", markdown.Text(c.Policy.ID()), markdown.Code(fmt.Sprintf("%s:%d", c.File, c.Line)), markdown.Code(c.Policy.Image), markdown.Code(c.Old), markdown.Code(c.New), markdown.Code(digest[c.Policy.Ref()].Digest))
		}
	}
	for _, w := range res.Warnings() {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> %s\n", markdown.Text(w))
	}
	return b.String()
}
