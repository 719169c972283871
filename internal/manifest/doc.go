// Package manifest holds rendered Kubernetes objects: their identity
// (group, kind, namespace, name), ordered sets of them, and their YAML form.
package manifest
