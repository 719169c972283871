package config

import (
	"errors"
	"fmt"
	"strings"
)

// A target name is printed in lists and logs and becomes the folder
// `ferry render -o DIR` writes the target's files to, so every part of it
// is one plain word: Kubernetes names (what Flux Kustomizations and
// namespaces are called) and cluster folder names, joined by '/'.

// nameRule says what a name part may hold, for error messages.
const nameRule = "lowercase letters, digits, '-', '.' and '_', not starting with '-' or '.', at most 253 characters"

// errBadName is wrapped by every name error, so callers can tell one.
var errBadName = errors.New("not a valid name")

// checkNamePart returns an error when s is not a valid part of a target
// name: a Kubernetes object or namespace name, or a cluster name. That
// rules out separators, "." and "..", blanks, control characters and
// upper case (which Kubernetes refuses in names as well).
func checkNamePart(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty (want %s)", errBadName, nameRule)
	}
	if len(s) > 253 {
		return fmt.Errorf("%w: %d characters (want %s)", errBadName, len(s), nameRule)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || i > 0 && (r == '-' || r == '.')
		if !ok {
			return fmt.Errorf("%w: %q at offset %d (want %s)", errBadName, r, i, nameRule)
		}
	}
	return nil
}

// checkTargetName returns an error when name is not a valid target name:
// one or more valid parts (see checkNamePart) separated by '/'.
func checkTargetName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", errBadName)
	}
	for _, part := range strings.Split(name, "/") {
		if err := checkNamePart(part); err != nil {
			if part == "" {
				return fmt.Errorf("%w: an empty part between '/' (want parts of %s)", errBadName, nameRule)
			}
			return err
		}
	}
	return nil
}

// checkClusterNames refuses clusters whose name (a clusters/<name>/
// folder, or the last folder of a sync Kustomization's path) cannot be
// part of a target name.
func checkClusterNames(roots []clusterRoot) error {
	for _, r := range roots {
		if err := checkNamePart(r.Name); err != nil {
			return fmt.Errorf("cluster folder %q: cluster name %q: %w; rename the folder", r.Path, r.Name, err)
		}
	}
	return nil
}

// checkDiscoveredNames refuses discovered targets, and skipped
// Kustomizations, whose name or namespace cannot be part of a target name
// (with the cluster, checked by checkClusterNames, they are joined by '/'
// to make one), naming the file the Kustomization came from.
func checkDiscoveredNames(targets []*Target, skipped []Skipped) error {
	var errs []error
	check := func(origin, kind, value string) {
		if err := checkNamePart(value); err != nil {
			errs = append(errs, fmt.Errorf("%s: Kustomization %s %q: %w", origin, kind, value, err))
		}
	}
	for _, t := range targets {
		check(t.Origin, "name", t.Kustomization.GetName())
		check(t.Origin, "namespace", t.Namespace)
	}
	for _, s := range skipped {
		check(s.Origin, "name", s.Name)
	}
	return errors.Join(errs...)
}
