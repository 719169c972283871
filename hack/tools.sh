#!/usr/bin/env bash
# Installs the public tools ferry's tests and benchmarks compare against into
# .cache/testbin (git-ignored), skipping any that already report the right
# version. Everything comes from the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/.cache/testbin"
mkdir -p "$BIN"

KUSTOMIZE_VERSION=v5.8.1

if ! "$BIN/kustomize" version 2>/dev/null | grep -q "$KUSTOMIZE_VERSION"; then
  echo "hack/tools.sh: installing kustomize $KUSTOMIZE_VERSION into $BIN" >&2
  (cd / && GOFLAGS=-buildvcs=false GOBIN="$BIN" go install -ldflags "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION")
fi
"$BIN/kustomize" version >/dev/null
