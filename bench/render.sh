#!/usr/bin/env bash
# Render benchmark: ferry render of every target of a generated repository
# (100 overlays over 20 bases, ~2,000 objects) against the kustomize v5 CLI
# run once per overlay, side by side in one run. Prints wall times, the
# ratio and ferry's peak RSS. Numbers, not a test: nothing here asserts.
#
# Usage: bench/render.sh [ROUNDS]   (needs bin/ferry and .cache/testbin/kustomize:
#                                    `make bench-render` builds both)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
ferry=$PWD/bin/ferry
kustomize=$PWD/.cache/testbin/kustomize
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
bench/genrepo.sh "$repo" 20 100

if [ ! -x /usr/bin/time ]; then
  echo "bench/render.sh: installing GNU time (for peak RSS)" >&2
  apt-get install -y --no-install-recommends time >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends time >/dev/null; }
fi

run_ferry() { "$ferry" render --repo "$repo" > "$work/ferry.yaml"; }
run_kustomize() {
  : > "$work/kustomize.yaml"
  for d in "$repo"/apps/overlays/*/; do
    "$kustomize" build "$d" >> "$work/kustomize.yaml"
  done
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", b - a}'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Warm-up (page cache, first exec), then alternate the two tools.
run_ferry; run_kustomize
fobjs=$(grep -c '^kind:' "$work/ferry.yaml"); kobjs=$(grep -c '^kind:' "$work/kustomize.yaml")
: > "$work/f.times"; : > "$work/k.times"
for ((i = 0; i < rounds; i++)); do
  t0=$(now); run_ferry; t1=$(now); run_kustomize; t2=$(now)
  elapsed "$t0" "$t1" >> "$work/f.times"
  elapsed "$t1" "$t2" >> "$work/k.times"
done
f=$(median < "$work/f.times"); k=$(median < "$work/k.times")
rss=$( { /usr/bin/time -f '%M' "$ferry" render --repo "$repo" > /dev/null; } 2>&1 | tail -1)

printf 'render benchmark: %d overlays over %d bases; ferry rendered %s objects, kustomize %s\n' 100 20 "$fobjs" "$kobjs"
printf '  ferry render (all targets, one process)   median %6.2f s over %d rounds\n' "$f" "$rounds"
printf '  kustomize build (v5 CLI, once per overlay)  median %6.2f s over %d rounds\n' "$k" "$rounds"
printf '  ratio kustomize/ferry: %.1fx (target: at least 3x)\n' "$(awk -v k="$k" -v f="$f" 'BEGIN {print k / f}')"
printf '  ferry peak RSS: %d MiB (target: under 500 MiB)\n' "$((rss / 1024))"
