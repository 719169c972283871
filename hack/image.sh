#!/usr/bin/env bash
# Builds ferry's container image from the Dockerfile (target "image") with
# buildah -- no Docker daemon -- pushes it to an OCI registry on 127.0.0.1,
# pulls it back with crane, and runs it the way a runner would: the image's
# entrypoint, inside the image's own filesystem (chroot as 65532:65532 when
# root; otherwise the extracted binary with the image's CA certificates).
# It runs `ferry version` and `ferry render` of examples/gpu-cluster and
# prints the image's size as registries count it (compressed layers and
# config).
#
# Environment:
#   REGISTRY           host:port of a registry to push to (default: a
#                      docker-registry started here on a free port)
#   REGISTRY_USER, REGISTRY_PASSWORD   its credentials, if it wants them
#   VERSION            version stamped into the binary (default: git describe)
#   FERRY_IMAGE_CACHE  buildah storage and the Go build base, kept between
#                      runs (default: ~/.cache/ferry-image)
#   MAX_IMAGE_BYTES    fail when the image is larger (default: 40 MB)
#   TARGET             the Dockerfile's target (default: image; action is
#                      what runners build for action.yml)
#   LOAD_INTO          instead of the registry round trip and the checks,
#                      push the built image to this buildah destination
#                      (e.g. containers-storage:[overlay@GRAPH+RUN]NAME:TAG,
#                      a podman store: hack/act.sh) and stop there
#
# Needs buildah, debootstrap (once, for the build stage's base), Debian's
# docker-registry (when REGISTRY is unset) and Go; installs the Debian
# packages with apt-get when root or in CI, and builds crane from the main
# module's graph into .cache/testbin.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
say() { echo "hack/image.sh: $*" >&2; }

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
CACHE="${FERRY_IMAGE_CACHE:-$HOME/.cache/ferry-image}"
MAX_IMAGE_BYTES="${MAX_IMAGE_BYTES:-40000000}"
TARGET="${TARGET:-image}"
LOAD_INTO="${LOAD_INTO:-}"
TESTBIN="$ROOT/.cache/testbin"
GO_VERSION="$(go env GOVERSION)"
GOROOT="$(go env GOROOT)"
BASE="localhost/ferry-go-build:$GO_VERSION"
mkdir -p "$CACHE" "$TESTBIN"
# One build at a time per cache: the image test and the runner test (hack/act.sh)
# may run at once, and a prune of one must not take the other's layers.
exec 9>"$CACHE/.lock"
flock 9

# --- tools -------------------------------------------------------------
need=()
command -v buildah >/dev/null || need+=(buildah)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ -z "$LOAD_INTO" ] && [ -z "${REGISTRY:-}" ] && [ ! -x /usr/bin/docker-registry ]; then need+=(docker-registry); fi
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] || [ "${CI:-}" = true ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
    if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
      $sudo systemctl stop docker-registry || true # listens on every interface; not used
    fi
  else
    say "missing ${need[*]}; install with: sudo apt-get install -y --no-install-recommends ${need[*]}"
    exit 1
  fi
fi
CRANE="$TESTBIN/crane"
want_crane="$(go list -m -f '{{.Version}}' github.com/google/go-containerregistry)"
if [ -z "$LOAD_INTO" ] && ! "$CRANE" version 2>/dev/null | grep -cx "$want_crane" >/dev/null; then
  say "building crane $want_crane into $TESTBIN"
  go build -trimpath -o "$CRANE" github.com/google/go-containerregistry/cmd/crane
fi

WORK="$(mktemp -d)"
REG_PID=""
cleanup() {
  if [ -n "$REG_PID" ]; then kill "$REG_PID" 2>/dev/null || true; wait "$REG_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# buildah keeps its images and layer cache under $CACHE. overlay when root
# and the kernel has it (a rebuild copies nothing), else vfs (every layer a
# full copy: slow, but needs nothing); chroot isolation needs no user
# namespaces.
DRIVER=vfs
if [ "$(id -u)" = 0 ] && grep -qw overlay /proc/filesystems; then DRIVER=overlay; fi
export STORAGE_DRIVER="$DRIVER" BUILDAH_ISOLATION=chroot
STORE=(--root "$CACHE/storage-$DRIVER" --runroot "$CACHE/run-$DRIVER" --storage-driver "$DRIVER")
cat > "$WORK/registries.conf" <<'EOF'
unqualified-search-registries = []
[[registry]]
location = "127.0.0.1"
insecure = true
EOF
export CONTAINERS_REGISTRIES_CONF="$WORK/registries.conf"

# --- registry ----------------------------------------------------------
if [ -n "$LOAD_INTO" ]; then
  REGISTRY=localhost # the image is named, never pushed there
elif [ -z "${REGISTRY:-}" ]; then
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  REGISTRY="127.0.0.1:$PORT"
  cat > "$WORK/registry.yml" <<EOF
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $WORK/registry}, delete: {enabled: true}}
http: {addr: $REGISTRY}
EOF
  /usr/bin/docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
  REG_PID=$!
  for _ in $(seq 100); do
    curl -fsS "http://$REGISTRY/v2/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://$REGISTRY/v2/" >/dev/null || { cat "$WORK/registry.log" >&2; say "registry did not start"; exit 1; }
  say "registry on $REGISTRY"
fi
CREDS=()
if [ -n "${REGISTRY_USER:-}" ]; then
  CREDS=(--creds "$REGISTRY_USER:$REGISTRY_PASSWORD")
  export DOCKER_CONFIG="$WORK/docker"
  "$CRANE" auth login "$REGISTRY" -u "$REGISTRY_USER" -p "$REGISTRY_PASSWORD" >/dev/null 2>&1
fi
IMAGE="$REGISTRY/ferry:$VERSION"

# --- the build stage's base: Debian minbase + ca-certificates + this Go --
if ! buildah "${STORE[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
  ROOTFS_TAR="$CACHE/bookworm-minbase.tar"
  if [ ! -s "$ROOTFS_TAR" ]; then
    say "debootstrap bookworm (minbase, ca-certificates) for the build stage; cached in $ROOTFS_TAR"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
      || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
    tar -C "$WORK/rootfs" -cf "$ROOTFS_TAR.tmp" . && mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
    rm -rf "$WORK/rootfs"
  fi
  say "making $BASE (Go $GO_VERSION from $GOROOT)"
  ctr="$(buildah "${STORE[@]}" from scratch)"
  buildah "${STORE[@]}" add "$ctr" "$ROOTFS_TAR" / >/dev/null
  buildah "${STORE[@]}" copy "$ctr" "$GOROOT" /usr/local/go >/dev/null
  buildah "${STORE[@]}" config --env PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env GOPATH=/go --env GOMODCACHE=/go/pkg/mod --env GOCACHE=/root/.cache/go-build "$ctr"
  buildah "${STORE[@]}" commit --rm "$ctr" "$BASE" >/dev/null
fi

# --- build, push -------------------------------------------------------
# The build stage never reaches the network: the host downloads every
# module of the graph first (it trusts the proxy's TLS; the Debian base
# made above does not, and must not be given the host's CA), the host's
# module and build caches are mounted into the stage, and the stage runs
# with GOPROXY=off, so a module missing from the cache fails at once
# instead of being fetched. go.sum still verifies every module.
say "downloading every module into the host's cache ($(go env GOMODCACHE))"
go mod download
say "building $IMAGE (Dockerfile, target $TARGET)"
begin=$SECONDS
buildah "${STORE[@]}" build --layers --pull=false --target "$TARGET" \
  --build-arg "GO_IMAGE=$BASE" --build-arg "VERSION=$VERSION" \
  --build-arg "GOPROXY=off" --build-arg "GOSUMDB=off" \
  -v "$(go env GOMODCACHE):/go/pkg/mod" -v "$(go env GOCACHE):/root/.cache/go-build" \
  -t "$IMAGE" -f Dockerfile . >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log" >&2; exit 1; }
say "built in $((SECONDS - begin))s"
if [ -n "$LOAD_INTO" ]; then
  buildah "${STORE[@]}" push "$IMAGE" "$LOAD_INTO" >"$WORK/push.log" 2>&1 || { cat "$WORK/push.log" >&2; exit 1; }
  buildah "${STORE[@]}" rmi "$IMAGE" >/dev/null 2>&1 || true
  echo "loaded $IMAGE into $LOAD_INTO"
  exit 0
fi
buildah "${STORE[@]}" push "${CREDS[@]}" --tls-verify=false --digestfile "$WORK/digest" "$IMAGE" "docker://$IMAGE" >"$WORK/push.log" 2>&1 \
  || { cat "$WORK/push.log" >&2; exit 1; }
DIGEST="$(cat "$WORK/digest")"
echo "image $IMAGE@$DIGEST"
# Keep the cache bounded: the pushed image and the layers only it used go;
# the build base stays (it is tagged).
buildah "${STORE[@]}" rmi "$IMAGE" >/dev/null 2>&1 || true
buildah "${STORE[@]}" rmi --prune >/dev/null 2>&1 || true

# --- pull back, measure ------------------------------------------------
# crane speaks plain HTTP to 127.0.0.1 by itself.
"$CRANE" manifest "$IMAGE@$DIGEST" > "$WORK/manifest.json"
SIZE="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["config"]["size"]+sum(l["size"] for l in m["layers"]))' "$WORK/manifest.json")"
echo "compressed size $SIZE bytes ($(awk "BEGIN{printf \"%.1f\", $SIZE/1000000}") MB)"
if [ "$SIZE" -gt "$MAX_IMAGE_BYTES" ]; then
  say "the image is $SIZE bytes compressed, more than $MAX_IMAGE_BYTES"
  exit 1
fi
"$CRANE" export "$IMAGE@$DIGEST" - | tar -x -C "$WORK" --one-top-level=rootfs
ROOTFS="$WORK/rootfs"
USERSPEC="$("$CRANE" config "$IMAGE@$DIGEST" | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"].get("User",""))')"
echo "user $USERSPEC"

# --- run it as a runner would -----------------------------------------
# The runner mounts the checkout into the container and starts the
# entrypoint there; here the example is copied into the image's /tmp.
mkdir -p "$ROOTFS/tmp/workspace"
cp -r examples/gpu-cluster "$ROOTFS/tmp/workspace/repo"
KEY="$(grep '^AGE-SECRET-KEY-' examples/age-test-key.txt)"
CHROOT="$(command -v chroot || echo /usr/sbin/chroot)"
if [ "$(id -u)" = 0 ]; then
  chmod -R a+rX "$ROOTFS/tmp/workspace"
  inimage() { env -i HOME=/tmp SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt SOPS_AGE_KEY="$KEY" \
    "$CHROOT" --userspec="$USERSPEC" "$ROOTFS" /ferry "$@"; }
  REPO_ARG=/tmp/workspace/repo
  how="chroot --userspec=$USERSPEC"
else
  inimage() { (cd "$ROOTFS/tmp/workspace" && env -i HOME="$ROOTFS/tmp" SSL_CERT_FILE="$ROOTFS/etc/ssl/certs/ca-certificates.crt" \
    SOPS_AGE_KEY="$KEY" "$ROOTFS/ferry" "$@"); }
  REPO_ARG=repo
  how="the extracted binary with the image's CA certificates (not root: no chroot)"
fi
say "running the image's /ferry: $how"
echo "version $(inimage version)"
inimage render --repo "$REPO_ARG" > "$WORK/render.yaml" 2>"$WORK/render.err" \
  || { cat "$WORK/render.err" >&2; exit 1; }
echo "render $(grep -c '^kind:' "$WORK/render.yaml") objects"
if [ -n "${RENDER_OUT:-}" ]; then cp "$WORK/render.yaml" "$RENDER_OUT"; fi
