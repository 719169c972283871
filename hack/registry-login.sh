#!/usr/bin/env bash
# Logs the release job in to a container registry without a Docker daemon:
# writes a Docker config (the file go-containerregistry and cosign read)
# holding HOST's credentials to a private folder and, in Actions, points
# the job's later steps at it (DOCKER_CONFIG through $GITHUB_ENV).
#
#   REGISTRY_USERNAME=… REGISTRY_PASSWORD=… hack/registry-login.sh HOST
#
# The folder is $DOCKER_CONFIG when set, else $RUNNER_TEMP/ferry-docker-config
# (removed by hack/registry-login.sh --logout). The password is read from
# the environment, never from the command line, and never printed.
set -euo pipefail
say() { echo "hack/registry-login.sh: $*" >&2; }
dir="${DOCKER_CONFIG:-${RUNNER_TEMP:-/tmp}/ferry-docker-config}"

if [ "${1:-}" = --logout ]; then
  rm -f "$dir/config.json"
  say "removed $dir/config.json"
  exit 0
fi
host="${1:-}"
if [ -z "$host" ] || [ $# -ne 1 ]; then
  say "usage: REGISTRY_USERNAME=… REGISTRY_PASSWORD=… hack/registry-login.sh HOST | --logout"
  exit 2
fi
case "$host" in
  */* | *' '* | *'"'*) say "$host: a registry host[:port], without a scheme or path"; exit 2 ;;
esac
if [ -z "${REGISTRY_USERNAME:-}" ] || [ -z "${REGISTRY_PASSWORD:-}" ]; then
  say "REGISTRY_USERNAME and REGISTRY_PASSWORD must be set for $host"
  exit 2
fi
mkdir -p "$dir"
chmod 700 "$dir"
auth="$(printf '%s:%s' "$REGISTRY_USERNAME" "$REGISTRY_PASSWORD" | base64 -w0)"
(umask 077 && printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$host" "$auth" >"$dir/config.json")
if [ -n "${GITHUB_ENV:-}" ]; then
  echo "DOCKER_CONFIG=$dir" >>"$GITHUB_ENV"
fi
say "logged in to $host as $REGISTRY_USERNAME ($dir/config.json)"
