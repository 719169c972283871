// Package render builds the manifests of one target the way Flux's
// kustomize-controller does, in-process with kustomize's krusty, on a
// filesystem rooted at the repository that decrypts SOPS files as
// kustomize reads them, and writes rendered objects one file per object.
package render
