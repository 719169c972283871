#!/usr/bin/env bash
# A real Actions runner for the tests: nektos/act driving Debian's rootful
# podman through its Docker-compatible API on a unix socket, private to the
# caller (its own podman configuration, run folder and socket; no TCP
# listener). The recipe is ../shared/RECIPES.md, "A real Actions runner".
#
#   hack/act.sh up STATE     install what is missing, start podman's API
#                            service on STATE/podman.sock with its image
#                            store in STATE, import the job image (its root
#                            file system made once and cached), load ferry's
#                            action image (hack/image.sh, target action, its
#                            layers cached by buildah) as
#                            localhost/ferry-action:TAG.
#                            Writes STATE/env: shell assignments of ACT,
#                            DOCKER_HOST, CONTAINERS_CONF,
#                            CONTAINERS_STORAGE_CONF,
#                            CONTAINERS_REGISTRIES_CONF, JOB_IMAGE,
#                            FERRY_IMAGE and PODMAN_PID.
#   hack/act.sh down STATE   remove every container it ran, stop the
#                            service and what is left of podman's processes
#                            for STATE (exec sessions' conmon linger for
#                            minutes), unmount its overlay mounts, delete
#                            STATE.
#
# Environment:
#   FERRY_ACT_CACHE   act's binary and the job image's root file system,
#                     kept between runs (default ~/.cache/ferry-act).
#                     Images are never pulled: no registry is reachable
#                     here. podman's store is STATE's own: podman records
#                     its run folder in the store, so a store shared
#                     between runs would tie every run to the first's.
#   DEBIAN_MIRROR     mirror for the job image's debootstrap (default: the
#                     one apt uses, else deb.debian.org)
#   FERRY_IMAGE_TAG   tag of the loaded action image (default: git describe)
#
# Needs root (rootful podman) or CI with sudo; installs podman, runc,
# dnsname, debootstrap and buildah with apt-get when missing, and act
# v0.2.89 with go install.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
say() { echo "hack/act.sh: $*" >&2; }
ACT_VERSION=v0.2.89
JOB_IMAGE=localhost/act-debian:bookworm

cmd="${1:-}"; STATE="${2:-}"
if [ -z "$cmd" ] || [ -z "$STATE" ]; then
  echo "usage: hack/act.sh up|down STATE" >&2
  exit 2
fi
CACHE="${FERRY_ACT_CACHE:-$HOME/.cache/ferry-act}"

config() {
  mkdir -p "$STATE"/{conf,run,tmp,storage}
  STATE="$(cd "$STATE" && pwd)"
  GRAPH="$STATE/storage"
  cat > "$STATE/conf/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$GRAPH"
runroot = "$STATE/run"
EOF
  # runc: crun refuses this machine's hybrid cgroups. netns host: the job
  # reaches the test's servers on 127.0.0.1. ulimits the sandbox allows.
  cat > "$STATE/conf/containers.conf" <<EOF
[containers]
netns = "host"
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$STATE/tmp"
EOF
  # The tests' registries (docker-registry, Gitea's) listen on 127.0.0.1
  # and a port chosen at their start, over plain HTTP: pulls from any port
  # of 127.0.0.1 and localhost may use HTTP. containers/image (podman 4.3)
  # matches a location without a port against every port of that host
  # (the prefix match stops at ":"); the runner's podman reads this file
  # once, before any test's registry starts, so the ports cannot be listed.
  cat > "$STATE/conf/registries.conf" <<EOF
unqualified-search-registries = []
[[registry]]
location = "127.0.0.1"
insecure = true
[[registry]]
location = "localhost"
insecure = true
EOF
  export CONTAINERS_STORAGE_CONF="$STATE/conf/storage.conf" CONTAINERS_CONF="$STATE/conf/containers.conf"
  export CONTAINERS_REGISTRIES_CONF="$STATE/conf/registries.conf"
  export TMPDIR="$STATE/tmp" DOCKER_HOST="unix://$STATE/podman.sock"
}

install() {
  local need=()
  command -v podman >/dev/null || need+=(podman)
  command -v runc >/dev/null || need+=(runc)
  [ -e /usr/lib/cni/dnsname ] || need+=(golang-github-containernetworking-plugin-dnsname)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v buildah >/dev/null || need+=(buildah)
  if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" != 0 ] && [ "${CI:-}" != true ]; then
      say "missing ${need[*]}; install with: sudo apt-get install -y ${need[*]}"
      exit 1
    fi
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq "${need[@]}" >&2
  fi
  if [ "$(id -u)" != 0 ]; then
    say "rootful podman needs root"
    exit 1
  fi
  mkdir -p "$CACHE/bin"
  if ! "$CACHE/bin/act" --version 2>/dev/null | grep -q "${ACT_VERSION#v}$"; then
    say "installing act $ACT_VERSION"
    GOBIN="$CACHE/bin" GOFLAGS= go install "github.com/nektos/act@$ACT_VERSION"
  fi
}

mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  local m
  m="$( (sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
         sed -n 's/^deb \(\[[^]]*\] \)\?\([^ ]*\).*/\2/p' /etc/apt/sources.list 2>/dev/null || true) | grep -v security | head -1)"
  echo "${m:-http://deb.debian.org/debian}"
}

# The job image: what ubuntu-latest gives the steps ferry's workflows run
# (bash, git, CA certificates, node for JavaScript actions, curl for the
# setup action's download), made with debootstrap from the Debian mirror,
# since no registry can be reached. The tarball's name changes with its
# package list, so an older cache is not reused.
job_image() {
  if podman image exists "$JOB_IMAGE"; then return; fi
  local tarball="$CACHE/act-debian-bookworm-curl.tar"
  if [ ! -s "$tarball" ]; then
    say "debootstrap bookworm (bash, git, ca-certificates, nodejs, curl) for the job image; cached in $tarball"
    local rootfs="$STATE/rootfs"
    debootstrap --variant=minbase --include=bash,git,ca-certificates,nodejs,curl bookworm "$rootfs" "$(mirror)" >"$STATE/debootstrap.log" 2>&1 \
      || { tail -20 "$STATE/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
  fi
  say "importing $JOB_IMAGE"
  podman import -q --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$tarball" "$JOB_IMAGE" >/dev/null
}

# ferry's action image (the Dockerfile's last stage, as a runner builds it
# for action.yml), built by hack/image.sh and pushed straight into podman's
# store.
ferry_image() {
  local tag="${FERRY_IMAGE_TAG:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
  FERRY_IMAGE="localhost/ferry-action:$tag"
  say "building $FERRY_IMAGE (hack/image.sh, target action)"
  TARGET=action VERSION="$tag" LOAD_INTO="containers-storage:[overlay@$GRAPH+$STATE/run]$FERRY_IMAGE" \
    bash "$ROOT/hack/image.sh" >&2
}

up() {
  install
  config
  podman system service --time=0 "$DOCKER_HOST" >"$STATE/podman-service.log" 2>&1 &
  local pid=$!
  echo "$pid" > "$STATE/podman.pid"
  for _ in $(seq 100); do
    curl -sf --unix-socket "$STATE/podman.sock" http://d/_ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf --unix-socket "$STATE/podman.sock" http://d/_ping >/dev/null \
    || { cat "$STATE/podman-service.log" >&2; say "podman's service did not start"; exit 1; }
  job_image
  ferry_image
  cat > "$STATE/env" <<EOF
ACT=$CACHE/bin/act
DOCKER_HOST=$DOCKER_HOST
CONTAINERS_CONF=$CONTAINERS_CONF
CONTAINERS_STORAGE_CONF=$CONTAINERS_STORAGE_CONF
CONTAINERS_REGISTRIES_CONF=$CONTAINERS_REGISTRIES_CONF
JOB_IMAGE=$JOB_IMAGE
FERRY_IMAGE=$FERRY_IMAGE
PODMAN_PID=$pid
EOF
  say "ready: $DOCKER_HOST"
}

down() {
  [ -d "$STATE" ] || return 0
  config
  podman rm -af -t 0 >/dev/null 2>&1 || true
  if [ -s "$STATE/podman.pid" ]; then
    local pid; pid="$(cat "$STATE/podman.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # conmon of finished exec sessions waits minutes (--exit-delay) and
  # ignores SIGTERM.
  pkill -9 -f -- "$STATE/" 2>/dev/null || true
  # Overlay mounts of containers that were still up, under the graph root
  # and the run folder.
  { grep -oE " $STATE/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$STATE"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) echo "usage: hack/act.sh up|down STATE" >&2; exit 2 ;;
esac
