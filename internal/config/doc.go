// Package config finds a repository's targets: from ferry.yaml when it
// declares them, otherwise from the Flux Kustomization objects the
// repository holds, found the way Flux finds them; it renders them with
// their dependencies resolved, lists them with their state, and reads the
// repository's image policies.
package config
