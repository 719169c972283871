#!/usr/bin/env bash
# Makes sure the Debian OCI registry (docker-registry, distribution 2.8) and
# htpasswd (apache2-utils) are installed, for the bump tests and the scan
# benchmark. Installs them with apt-get when missing and running as root or
# in CI; otherwise says what to install. Prints where the registry binary is.
# The tests start it themselves (internal/images/registrytest) with their
# own config on 127.0.0.1, never the package's system service.
set -euo pipefail
REGISTRY=/usr/bin/docker-registry
if [ ! -x "$REGISTRY" ] || ! command -v htpasswd >/dev/null; then
  if [ "$(id -u)" = 0 ] || [ "${CI:-}" = true ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "hack/registry.sh: installing docker-registry apache2-utils" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq --no-install-recommends docker-registry apache2-utils >&2
    # The package starts a registry listening on every interface; the tests
    # do not need it.
    if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
      $sudo systemctl stop docker-registry || true
    fi
  else
    echo "hack/registry.sh: $REGISTRY or htpasswd is missing; install them with:" >&2
    echo "  sudo apt-get install -y --no-install-recommends docker-registry apache2-utils" >&2
    exit 1
  fi
fi
echo "$REGISTRY"
