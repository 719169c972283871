#!/usr/bin/env bash
# The README's main command: ferry's main job on the bundled GPU-cluster
# example, end to end. It renders the example with its throwaway age key,
# then applies it to a cluster: the one KUBECONFIG names, or, when none is
# configured, a local control plane (etcd + kube-apiserver, built once into
# .cache/testbin). It re-applies (everything unchanged), removes one service
# from a copy of the example and applies with pruning, printing each step.
set -euo pipefail
cd "$(dirname "$0")/.."
ferry=$PWD/bin/ferry
export SOPS_AGE_KEY_FILE=$PWD/examples/age-test-key.txt
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "ferry render --repo examples/gpu-cluster (decrypted, rendered YAML)"
"$ferry" render --repo examples/gpu-cluster

kubeconfig=${KUBECONFIG:-}
if [ -z "$kubeconfig" ]; then
  step "no KUBECONFIG: starting a local control plane (the first run builds it, which takes minutes)"
  hack/controlplane.sh >/dev/null
  kubeconfig=$work/kubeconfig
  # Built, then run directly: killing `go run` would leave its child running.
  go build -o "$work/devcluster" ./hack/devcluster
  "$work/devcluster" "$kubeconfig" &
  pid=$!
  for _ in $(seq 1 120); do [ -s "$kubeconfig" ] && break; sleep 0.5; done
  [ -s "$kubeconfig" ] || { echo "the local control plane did not start" >&2; exit 2; }
else
  step "using the cluster of KUBECONFIG=$kubeconfig"
fi

# Work on a copy, so the checkout is never changed.
cp -r examples/gpu-cluster "$work/repo"
rev=$(git rev-parse HEAD 2>/dev/null || echo example)

step "ferry apply (first apply)"
"$ferry" apply --repo "$work/repo" --kubeconfig "$kubeconfig" --revision "$rev"

step "ferry apply again (nothing changed in Git: everything unchanged)"
"$ferry" apply --repo "$work/repo" --kubeconfig "$kubeconfig" --revision "$rev"

step "remove ./services/notebook from apps/stage and ferry apply --prune"
sed -i 's|^  - ./services/notebook|  # - ./services/notebook|' "$work/repo/apps/stage/kustomization.yaml"
"$ferry" apply --repo "$work/repo" --kubeconfig "$kubeconfig" --revision "$rev" --prune
