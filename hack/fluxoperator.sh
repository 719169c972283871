#!/usr/bin/env bash
# Installs the Flux Operator CLI v0.59.0 as flux-operator into .cache/testbin
# (or $TESTBIN) from the Go module proxy, unless it is there already: it is
# the black-box oracle of internal/resourceset (`flux-operator build rset`).
# The module needs Go 1.27, so this script alone builds with a 1.27
# toolchain (GOTOOLCHAIN, fetched from the module proxy as a Go module);
# ferry itself stays on the installed Go. The version string comes from
# ldflags (main.VERSION), as in the project's own release builds.
# Cold (toolchain and modules downloaded, nothing built): 8 minutes of CPU,
# 18 minutes wall on 2 cores beside a busy CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${TESTBIN:-$PWD/.cache/testbin}"
FLUX_OPERATOR_VERSION=0.59.0
FLUX_OPERATOR_GO=go1.27.3
mkdir -p "$BIN"
if ! "$BIN/flux-operator" version --client 2>/dev/null | grep -q "^client: $FLUX_OPERATOR_VERSION\$"; then
  echo "hack/fluxoperator.sh: installing flux-operator v$FLUX_OPERATOR_VERSION into $BIN" >&2
  gobin=$(mktemp -d)
  trap 'rm -rf "$gobin"' EXIT
  (cd / && GOTOOLCHAIN="$FLUX_OPERATOR_GO" CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOBIN="$gobin" go install -trimpath -ldflags "-s -w -X main.VERSION=$FLUX_OPERATOR_VERSION" "github.com/controlplaneio-fluxcd/flux-operator/cmd/cli@v$FLUX_OPERATOR_VERSION")
  mv "$gobin/cli" "$BIN/flux-operator"
fi
"$BIN/flux-operator" version --client >/dev/null 2>&1
