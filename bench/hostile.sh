#!/usr/bin/env bash
# Hostile-input benchmark: what inputs built to exhaust the runner cost
# ferry, against the kustomize v5 CLI on the same input, side by side in one
# run: a YAML alias bomb (10^9 scalars once expanded) and a 200 MB resource
# file, each as `ferry render` and `kustomize build` of the same folder, with
# wall time, exit status and peak RSS. kustomize runs under a 4 GiB address
# limit and a 20 s timeout so the bomb cannot take the machine. Then SIGTERM
# during a render of a large repository: how long ferry takes to exit, and
# with which status. Numbers, not a test: nothing here asserts (the corpus in
# cmd/ferry/hostile_test.go asserts exit 2 and the 1 GiB bound).
#
# Targets (issue 12): each exhausting input fails with exit 2 within 10 s
# under 1 GiB of peak RSS; SIGTERM exits 2 within 2 s.
#
# Usage: bench/hostile.sh   (needs bin/ferry and .cache/testbin/kustomize:
#                            `make bench-hostile` builds both)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
need_gnu_time

# measure LABEL CMD...: prints wall seconds, exit status and peak RSS.
measure() {
  local label=$1; shift
  local status=0
  /usr/bin/time -o "$work/time" -f '%e %M' "$@" > /dev/null 2> "$work/stderr" || status=$?
  read -r wall rss < <(tail -1 "$work/time")
  printf '    %-34s %6.2f s  exit %-3s  peak RSS %5d MiB\n' "$label" "$wall" "$status" "$((rss / 1024))"
}

# kustomize with the machine protected: 4 GiB of address space, 20 s.
bounded_kustomize=(bash -c 'ulimit -v $((4 << 20)); exec timeout 20 "$0" build "$1"' "$kustomize")

bomb() {
  local prev line
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  x: y\nz:\n  '
  echo 'x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]'
  for i in 1 2 3 4 5 6 7 8; do
    prev="*a$((i - 1))"
    line="$prev"; for _ in 2 3 4 5 6 7 8 9 10; do line="$line, $prev"; done
    echo "  x$i: &a$i [$line]"
  done
}

mkrepo() {
  local repo=$work/$1
  mkdir -p "$repo/app"
  printf 'targets:\n  - name: app\n    path: app\n' > "$repo/ferry.yaml"
  printf 'resources: [%s]\n' "$2" > "$repo/app/kustomization.yaml"
  echo "$repo"
}

echo "hostile-input benchmark: ferry against kustomize build on inputs built to exhaust the runner"

repo=$(mkrepo bomb bomb.yaml)
bomb > "$repo/app/bomb.yaml"
echo "  YAML alias bomb (app/bomb.yaml, $(wc -c < "$repo/app/bomb.yaml") bytes, 10^9 scalars expanded)"
measure "ferry render" "$ferry" render --repo "$repo"
measure "kustomize build (4 GiB, 20 s cap)" "${bounded_kustomize[@]}" "$repo/app"

repo=$(mkrepo big big.yaml)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  k: ' > "$repo/app/big.yaml"
head -c $((200 << 20)) /dev/zero | tr '\0' 'a' >> "$repo/app/big.yaml"
echo "  200 MB resource (app/big.yaml)"
measure "ferry render" "$ferry" render --repo "$repo"
measure "kustomize build (4 GiB, 20 s cap)" "${bounded_kustomize[@]}" "$repo/app"

# SIGTERM half a second into a render of 40 targets x 400 kustomizations.
repo=$work/large
bench/genrepo.sh "$repo" 20 400 > /dev/null
echo "  SIGTERM 0.5 s into ferry render of $(ls "$repo/apps/overlays" | wc -l) overlays"
for round in 1 2 3; do
  "$ferry" render --repo "$repo" > /dev/null 2> "$work/stderr" &
  pid=$!
  sleep 0.5
  t0=$(date +%s.%N)
  kill -TERM "$pid" 2>/dev/null || true
  status=0; wait "$pid" || status=$?
  t1=$(date +%s.%N)
  printf '    round %d: exited %s after the signal, exit %s (%s)\n' "$round" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f s", b - a}')" "$status" "$(tail -1 "$work/stderr" | cut -c1-60)"
done
echo "  targets: exit 2 within 10 s under 1 GiB for each input; SIGTERM exits 2 within 2 s"
