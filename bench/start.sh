#!/usr/bin/env bash
# Start benchmark (make bench-start; a benchmark, not a test: nothing
# asserts a speed). In the act runner on podman (hack/act.sh up/down), the
# time from a job's start (act's first line for the job) to ferry's first
# output line (`ferry version`), for
#
#   (a) the pinned image, `docker://REG/ferry:V@sha256:...`, pulled cold
#       from a local docker-registry (removed from podman's store before
#       each round);
#   (b) the same image, already pulled;
#   (c) the setup action (ferry-ci/ferry/setup): the release archive
#       downloaded from a local HTTP server, its sha256 checked against the
#       action's setup/checksums.txt, extracted into an empty tool cache,
#       then `run: ferry version`;
#   (d) today's Dockerfile action (`image: Dockerfile`) with an empty build
#       cache: what a runner's build does, here `go mod download` into an
#       empty GOMODCACHE (every module from the module proxy) and
#       hack/image.sh TARGET=action from an empty GOCACHE and a buildah
#       store of its own (no layer cache), loaded into the runner's store;
#       download and build time plus the job's run. The Go build base is
#       made, not timed (a runner pulls golang:1.26.8-bookworm).
#
# and a floor: the same job whose first step is a shell `run:` (what every
# job pays before any step prints). It prints each (the median of ROUNDS
# rounds; (d) runs once), the ratio (d)/(a) and what (a) adds over the
# floor (targets: (a) adds under 10 s, (d)/(a) >= 20), the image's
# compressed size with what its layer holds, and the binary broken down by
# module (bench/binsize, on an unstripped build of the same source).
#
# The release is cmd/ferry-release's (what `make release-local` runs),
# unsigned, of a snapshot of the work tree, pushed to a docker-registry on
# 127.0.0.1; the jobs use its dist/action, the release commit's action
# files, pinned to the action image's digest.
#
#   bench/start.sh [ROUNDS]      (default 3)
#
# Needs root (rootful podman, like the act runner tests), Debian's
# docker-registry (installed by hack/image.sh when missing), python3, and
# the Go module proxy for (d). Takes 10-20 minutes on 2 busy cores, most of
# it (d)'s build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
say() { echo "bench/start.sh: $*" >&2; }
ROUNDS="${1:-3}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: bench/start.sh [ROUNDS]" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
  say "the act runner's podman runs rootful: run as root"
  exit 1
fi
[ -x /usr/bin/docker-registry ] || { say "missing Debian's docker-registry: apt-get install -y --no-install-recommends docker-registry"; exit 1; }

work="$(mktemp -d /tmp/ferry-bench-start.XXXXXX)"
STATE="$work/act"
REG_PID="" HTTP_PID=""
cleanup() {
  bash "$ROOT/hack/act.sh" down "$STATE" || true
  # buildah's overlay mounts of the cold build, if any are left.
  { grep -oE " $work/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  for pid in $REG_PID $HTTP_PID; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }
median() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- the runner -----------------------------------------------------------
say "starting the act runner (hack/act.sh up)"
FERRY_IMAGE_TAG=bench-warm bash hack/act.sh up "$STATE" >"$work/act-up.log" 2>&1 || { tail -30 "$work/act-up.log" >&2; exit 1; }
while IFS='=' read -r k v; do
  case "$k" in
    ACT | DOCKER_HOST | CONTAINERS_CONF | CONTAINERS_STORAGE_CONF | CONTAINERS_REGISTRIES_CONF | JOB_IMAGE) export "$k=$v" ;;
  esac
done <"$STATE/env"
[ -n "${CONTAINERS_REGISTRIES_CONF:-}" ] || { say "hack/act.sh gives podman no registries.conf: it cannot pull from the plain-HTTP registry"; exit 1; }
GRAPH="$STATE/storage"

# --- the registry and the release -----------------------------------------
REG="127.0.0.1:$(freeport)"
mkdir -p "$work/registry"
cat >"$work/registry.yml" <<EOF
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/registry}, delete: {enabled: true}}
http: {addr: $REG}
EOF
/usr/bin/docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do curl -fsS "http://$REG/v2/" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://$REG/v2/" >/dev/null || { cat "$work/registry.log" >&2; say "the registry did not start"; exit 1; }

# The release: cmd/ferry-release (what make release-local runs) on a
# snapshot of this work tree (its files committed in a copy: the release
# tool builds commits only), both image platforms, unsigned, the setup
# action's download URL the HTTP server below.
snap="$work/src"
mkdir -p "$snap"
git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -x -C "$snap"
git -C "$snap" init -q -b main
git -C "$snap" -c user.name=bench -c user.email=bench@ferry.invalid add -A
git -C "$snap" -c user.name=bench -c user.email=bench@ferry.invalid commit -q -m "snapshot of the work tree"
HTTP_PORT="$(freeport)"
dist="$work/dist"
say "release of the work tree (cmd/ferry-release --registry $REG --platforms linux/amd64,linux/arm64 --unsigned)"
go run ./cmd/ferry-release --root "$snap" --dist "$dist" --registry "$REG" --platforms linux/amd64,linux/arm64 \
  --unsigned --download-url "http://127.0.0.1:$HTTP_PORT" >"$work/release.out" 2>"$work/release.log" ||
  { cat "$work/release.log" >&2; exit 1; }
read -r V PINNED < <(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
a = r["images"]["action"]
print(r["version"], a["ref"] + "@" + a["digest"])' "$dist/release.json")
say "release $V, pinned action image $PINNED"
goarch="$(go env GOARCH)"
archive="ferry_${V}_linux_${goarch}.tar.gz"
python3 -m http.server "$HTTP_PORT" --bind 127.0.0.1 --directory "$dist" >"$work/http.log" 2>&1 &
HTTP_PID=$!
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$HTTP_PORT/$archive" 2>/dev/null && break; sleep 0.1; done

# The release commit's action files (dist/action), and a copy whose
# container actions name the image (d) builds instead.
grep -q "docker://$PINNED" "$dist/action/action.yml" || { say "dist/action/action.yml does not pin $PINNED"; exit 1; }
COLD_IMAGE="localhost/ferry-action:bench-cold"
cp -r "$dist/action" "$work/action-dockerfile"
find "$work/action-dockerfile" -name action.yml -exec sed -i "s#docker://$PINNED#docker://$COLD_IMAGE#" {} +
# An unstripped build of the same source, for the breakdown by module.
(cd "$snap" && CGO_ENABLED=0 GOOS=linux GOARCH="$goarch" go build -trimpath -o "$work/ferry-symbols" ./cmd/ferry)

# --- the workflows -------------------------------------------------------
repo="$work/repo"
mkdir -p "$repo/.github/workflows"
workflow() { # NAME STEPS
  printf 'name: start\non: workflow_dispatch\njobs:\n  bench:\n    runs-on: ubuntu-latest\n    steps:\n%s' "$2" >"$repo/.github/workflows/$1.yaml"
}
workflow floor '      - run: echo "ferry v0 (a shell step)"
'
workflow pinned '      - uses: ferry-ci/ferry@pinned
        with:
          command: version
'
workflow dockerfile '      - uses: ferry-ci/ferry@dockerfile
        with:
          command: version
'
workflow setup '      - uses: ferry-ci/ferry/setup@pinned
      - run: ferry version
'
git -C "$repo" init -q -b main
git -C "$repo" remote add origin https://github.com/acme/bench.git
git -C "$repo" -c user.name=bench -c user.email=bench@ferry.invalid add -A
git -C "$repo" -c user.name=bench -c user.email=bench@ferry.invalid commit -q -m bench
echo '{"ref": "refs/heads/main", "inputs": {}}' >"$work/event.json"

# run WORKFLOW [LABEL]: runs it with act (its log run-LABEL-*.log), each line stamped with the time it
# arrived; prints the seconds from the job's first line to the first line
# ferry printed ("| ferry v..."). Fails when the job did.
run() {
  local log
  log="$work/run-${2:-$1}-$(date +%s%N).log"
  (cd "$repo" && XDG_CACHE_HOME="$work/xdg" TMPDIR="$work/tmp" "$ACT" workflow_dispatch \
    -W ".github/workflows/$1.yaml" -e "$work/event.json" -P "ubuntu-latest=$JOB_IMAGE" \
    --pull=false --action-offline-mode --no-cache-server --container-daemon-socket - --rm \
    --local-repository "ferry-ci/ferry@pinned=$dist/action" \
    --local-repository "ferry-ci/ferry@dockerfile=$work/action-dockerfile" 2>&1) |
    python3 -u -c 'import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line))' >"$log" || { tail -30 "$log" >&2; say "act failed: $1 (log $log)"; return 1; }
  awk '/\[start\/bench *\]/ && !t0 { t0 = $1 } /\[start\/bench *\] +\| ferry v[0-9]/ { if (t0) printf "%.1f\n", $1 - t0; found = 1; exit } END { if (!found) exit 1 }' "$log" ||
    { tail -30 "$log" >&2; say "no line of ferry's in $1's log ($log)"; return 1; }
}

mkdir -p "$work/tmp" "$work/xdg"
podman_() { podman "$@" >/dev/null 2>&1 || true; }
for f in floor a b c; do : >"$work/$f"; done
for ((i = 1; i <= ROUNDS; i++)); do
  say "round $i of $ROUNDS: floor, (a) cold pull, (b) pulled, (c) setup action"
  run floor >>"$work/floor"
  podman_ rmi -f "${PINNED%@*}" "$PINNED"
  run pinned cold >>"$work/a"
  run pinned warm >>"$work/b"
  podman_ volume rm -f act-toolcache
  run setup >>"$work/c"
done

# (d) builds in a buildah store of its own (no layer cache, and the shared
# cache's lock is not held for minutes), from the same Go build base: a
# runner pulls golang:1.26.8-bookworm for that, which is not counted.
# Counted: downloading every module (go mod download into an empty
# GOMODCACHE, as the Dockerfile's first RUN does) and the build
# (hack/image.sh's "built in" seconds, from an empty GOCACHE).
say "(d): go mod download and hack/image.sh TARGET=action from empty caches (minutes)"
cold="$work/cold"
mkdir -p "$cold/gomod" "$cold/gocache" "$cold/image-cache"
if [ -s "$HOME/.cache/ferry-image/bookworm-minbase.tar" ]; then
  cp "$HOME/.cache/ferry-image/bookworm-minbase.tar" "$cold/image-cache/"
fi
export GOMODCACHE="$cold/gomod" GOCACHE="$cold/gocache" GOFLAGS=-modcacherw
t0="$(now)"
go mod download
t1="$(now)"
d_mod="$(secs "$t0" "$t1")"
FERRY_IMAGE_CACHE="$cold/image-cache" TARGET=action VERSION="$V" \
  LOAD_INTO="containers-storage:[overlay@$GRAPH+$STATE/run]$COLD_IMAGE" bash hack/image.sh >"$work/cold.log" 2>&1 ||
  { tail -30 "$work/cold.log" >&2; exit 1; }
unset GOMODCACHE GOCACHE GOFLAGS
d_compile="$(sed -n 's/.*built in \([0-9]*\)s$/\1/p' "$work/cold.log")"
[ -n "$d_compile" ] || { cat "$work/cold.log" >&2; say "hack/image.sh printed no build time"; exit 1; }
d_build="$(awk -v x="$d_mod" -v y="$d_compile" 'BEGIN {printf "%.1f", x + y}')"
d_run="$(run dockerfile)"

# Details from the same logs: how long act's pull of the image took in
# (a) (its "docker pull" line to its "docker create" line), and how long
# install.sh ran in (c) (its first line to its "on PATH" line); the rest of
# (c) is act's work around a composite action's steps.
span() { # FIRST-REGEX LAST-REGEX LOG...: the median seconds between the first lines matching each
  local f
  for f in "${@:3}"; do
    awk -v a="$1" -v b="$2" '$0 ~ a && !t0 { t0 = $1 } $0 ~ b && t0 { printf "%.1f\n", $1 - t0; exit }' "$f"
  done | median
}
pull="$(span "docker pull image=$REG/" "docker create image=$REG/" "$work"/run-cold-*.log)"
install="$(span '\\| ferry setup: ' '\\| ferry setup: .* on PATH from ' "$work"/run-setup-*.log)"

floor="$(median <"$work/floor")"
a="$(median <"$work/a")"
b="$(median <"$work/b")"
c="$(median <"$work/c")"
d="$(awk -v x="$d_build" -v y="$d_run" 'BEGIN {printf "%.1f", x + y}')"
ratio="$(awk -v d="$d" -v a="$a" 'BEGIN {printf "%.0f", d / a}')"
adds="$(awk -v a="$a" -v f="$floor" 'BEGIN {printf "%.1f", a - f}')"

# --- the image and the binary ----------------------------------------------
CRANE="${FERRY_TESTBIN:-$ROOT/.cache/testbin}/crane"
if [ ! -x "$CRANE" ]; then
  CRANE="$work/crane"
  go build -o "$CRANE" github.com/google/go-containerregistry/cmd/crane
fi
"$CRANE" manifest --platform "linux/$goarch" "$PINNED" >"$work/manifest.json"
mkdir -p "$work/rootfs"
"$CRANE" export --platform "linux/$goarch" "$PINNED" - | tar -x -C "$work/rootfs"
size_report="$(python3 - "$work/manifest.json" "$work/rootfs" <<'EOF'
import gzip, json, os, sys
m = json.load(open(sys.argv[1]))
root = sys.argv[2]
total = m["config"]["size"] + sum(l["size"] for l in m["layers"])
print(f"compressed {total / 1e6:.1f} MB: config {m['config']['size']} B, {len(m['layers'])} layer(s) " +
      ", ".join(f"{l['size'] / 1e6:.1f} MB" for l in m["layers"]))
print("  the layer's files (uncompressed -> gzip'd alone):")
files = []
for d, _, names in os.walk(root):
    for n in names:
        p = os.path.join(d, n)
        if os.path.isfile(p) and not os.path.islink(p):
            files.append((os.path.getsize(p), os.path.relpath(p, root)))
for size, rel in sorted(files, reverse=True):
    with open(os.path.join(root, rel), "rb") as f:
        z = len(gzip.compress(f.read(), 6))
    print(f"    /{rel}: {size / 1e6:.1f} MB -> {z / 1e6:.1f} MB")
EOF
)"

cat <<EOF

ferry's start in a job (act $("$ACT" --version | awk '{print $NF}') on podman; job start = act's first line for the
job, to ferry's first output line; median of $ROUNDS rounds, (d) once):
  floor: a shell run: step's first line        $floor s
  (a) pinned image, pulled cold               $a s   (adds $adds s over the floor; target < 10 s; act's pull $pull s)
  (b) pinned image, already pulled            $b s
  (c) setup action (download, sha256, cache)  $c s   (install.sh itself $install s)
  (d) Dockerfile action, empty build cache    $d s   (modules $d_mod s + build $d_compile s + job $d_run s)
  (d)/(a) = $ratio   (target >= 20)

image $PINNED (linux/$goarch)
  $size_report
setup action archive $archive: $(awk '{printf "%.1f MB", $1 / 1e6}' <<<"$(stat -c %s "$dist/$archive")")

EOF
go run ./bench/binsize "$work/ferry-symbols" 25
