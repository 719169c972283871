#!/usr/bin/env bash
# Installs cosign v3.1.3 (sigstore) into .cache/testbin from the Go module
# proxy, unless it is there already: the release build signs with it
# (make release-local) and the release tests verify with it. Cold: a few
# minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${TESTBIN:-$PWD/.cache/testbin}"
COSIGN_VERSION=v3.1.3
mkdir -p "$BIN"
if ! "$BIN/cosign" version 2>/dev/null | grep -q "GitVersion: *$COSIGN_VERSION\$"; then
  echo "hack/cosign.sh: installing cosign $COSIGN_VERSION into $BIN" >&2
  (cd / && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOBIN="$BIN" go install -trimpath -ldflags "-s -w" "github.com/sigstore/cosign/v3/cmd/cosign@$COSIGN_VERSION")
fi
"$BIN/cosign" version >/dev/null 2>&1
