// Package config finds a repository's targets: from ferry.yaml when it
// declares them, otherwise from the Flux Kustomization objects the
// repository holds, found the way Flux finds them.
package config
