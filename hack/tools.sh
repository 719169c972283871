#!/usr/bin/env bash
# Installs the public tools ferry's tests and benchmarks compare against, and
# Alertmanager, which the notify tests send alerts to, into .cache/testbin
# (git-ignored), skipping any that already report the right version.
# Everything comes from the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/.cache/testbin"
mkdir -p "$BIN"

KUSTOMIZE_VERSION=v5.8.1

if ! "$BIN/kustomize" version 2>/dev/null | grep -c "$KUSTOMIZE_VERSION" >/dev/null; then
  echo "hack/tools.sh: installing kustomize $KUSTOMIZE_VERSION into $BIN" >&2
  (cd / && GOFLAGS=-buildvcs=false GOBIN="$BIN" go install -ldflags "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION")
fi
"$BIN/kustomize" version >/dev/null

# flux v2.7.5, the oracle for Flux Kustomizations (`flux build kustomization
# --dry-run`). `go install` is refused: the module embeds manifests its zip
# leaves out, so the module is copied, given an empty manifests folder and
# built. Cold: ~3 minutes on 2 cores.
FLUX_VERSION=2.7.5
if ! "$BIN/flux" version --client 2>/dev/null | grep -c "$FLUX_VERSION" >/dev/null; then
  echo "hack/tools.sh: building flux v$FLUX_VERSION into $BIN" >&2
  src=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/fluxcd/flux2/v2@v$FLUX_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$src" "$work/flux2" && chmod -R u+w "$work/flux2"
  mkdir -p "$work/flux2/cmd/flux/manifests" && touch "$work/flux2/cmd/flux/manifests/empty.yaml"
  (cd "$work/flux2" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w -X main.VERSION=$FLUX_VERSION" -o "$BIN/flux.new" ./cmd/flux)
  mv "$BIN/flux.new" "$BIN/flux"
fi
"$BIN/flux" version --client >/dev/null

# helm v4.3.2, the oracle for HelmRelease rendering (`helm template`). Its
# version string comes from ldflags, as in helm's own release builds.
HELM_VERSION=v4.3.2
if [ "$("$BIN/helm" version --template '{{.Version}}' 2>/dev/null)" != "$HELM_VERSION" ]; then
  echo "hack/tools.sh: installing helm $HELM_VERSION into $BIN" >&2
  (cd / && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOBIN="$BIN" go install -ldflags "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION")
fi
"$BIN/helm" version >/dev/null

# Alertmanager v0.35.0, the real receiver of the alertmanager provider's
# alerts in the notify tests (its API v2). As with flux, `go install` is
# refused: the web UI it embeds (ui/app/dist) is built by npm and left out
# of the module's zip, so the module is copied, given a placeholder page and
# built; the tests use only the API. Cold: ~6 minutes on 2 cores.
AM_VERSION=0.35.0
if ! "$BIN/alertmanager" --version 2>/dev/null | grep -c "version $AM_VERSION " >/dev/null; then
  echo "hack/tools.sh: building alertmanager v$AM_VERSION into $BIN" >&2
  src=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus/alertmanager@v$AM_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  amwork=$(mktemp -d)
  trap 'rm -rf "${work:-}" "$amwork"' EXIT
  cp -r "$src" "$amwork/alertmanager" && chmod -R u+w "$amwork/alertmanager"
  for ui in elm mantine; do
    mkdir -p "$amwork/alertmanager/ui/app/dist/$ui"
    echo '<!doctype html><title>Alertmanager</title><p>This build of Alertmanager has no web UI; its API is at /api/v2/.</p>' >"$amwork/alertmanager/ui/app/dist/$ui/index.html"
  done
  (cd "$amwork/alertmanager" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=$AM_VERSION" -o "$BIN/alertmanager.new" ./cmd/alertmanager)
  mv "$BIN/alertmanager.new" "$BIN/alertmanager"
fi
"$BIN/alertmanager" --version >/dev/null 2>&1

# cosign, which the release build signs with and its tests verify with.
bash hack/cosign.sh

# The Flux Operator CLI, the oracle for ResourceSets (`flux-operator build
# rset`); built with a Go 1.27 toolchain of its own.
bash hack/fluxoperator.sh
