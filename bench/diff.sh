#!/usr/bin/env bash
# Diff benchmark: ferry diff of a pull request on a generated repository
# (100 overlays over 10 bases) against what a naive action does: check out
# both revisions, `kustomize build` every overlay at each, `diff -u` the
# outputs. Three pull requests: one overlay's patch changed, one shared
# base (built by 10 overlays) changed, and every base changed (all 100
# overlays). Prints wall times and ratios, then what finding the risks
# (the report's first section) adds to ferry's time: ferry diff against
# ferry diff --risks=false, paired, on the last two (target: under 10%).
# Numbers, not a test: nothing here asserts.
#
# Usage: bench/diff.sh [ROUNDS]   (needs bin/ferry and .cache/testbin/kustomize:
#                                  `make bench-diff` builds both)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
repo=$work/repo
bench/genrepo.sh "$repo" 10 100
git() { command git -C "$repo" -c user.email=bench@ferry.invalid -c user.name=bench "$@"; }
git init -q
git add -A && git commit -qm base
base=$(git rev-parse HEAD)
sed -i 's/spec: {replicas: \([0-9]\)}/spec: {replicas: 9}/' "$repo/apps/overlays/env7/replicas.yaml"
git commit -qam "one overlay"
overlay=$(git rev-parse HEAD)
sed -i 's/port: 80,/port: 8080,/' "$repo/apps/base/app3/service.yaml"
git commit -qam "shared base"
shared=$(git rev-parse HEAD)
sed -i 's/targetPort: 8080/targetPort: 8081/' "$repo"/apps/base/*/service.yaml
git commit -qam "every base"
every=$(git rev-parse HEAD)

run_ferry() { # base head
  "$ferry" diff --repo "$repo" --base "$1" --head "$2" --format markdown > "$work/ferry.md"
}
run_ferry_norisks() { # base head
  "$ferry" diff --repo "$repo" --base "$1" --head "$2" --format markdown --risks=false > "$work/ferry-norisks.md"
}
run_naive() { # base head
  rm -rf "$work/b" "$work/h" "$work/out"; mkdir -p "$work/b" "$work/h" "$work/out"
  git archive "$1" | tar -x -C "$work/b"
  git archive "$2" | tar -x -C "$work/h"
  for d in "$work"/h/apps/overlays/*/; do
    o=$(basename "$d")
    "$kustomize" build "$work/b/apps/overlays/$o" > "$work/out/$o.base.yaml"
    "$kustomize" build "$d" > "$work/out/$o.head.yaml"
    diff -u "$work/out/$o.base.yaml" "$work/out/$o.head.yaml" >> "$work/out/diff.txt" || true
  done
}

bench() { # name base head target
  local name=$1 b=$2 h=$3 target=$4
  run_ferry "$b" "$h"; run_naive "$b" "$h" # warm-up
  local targets; targets=$(grep -c '^| `env' "$work/ferry.md" || true)
  local f n
  alternate f n run_ferry run_naive "$b" "$h"
  printf '%s (ferry reports %s affected target(s)):\n' "$name" "$targets"
  printf '  ferry diff                                   median %6.2f s over %d rounds\n' "$f" "$rounds"
  printf '  checkout x2 + kustomize build x200 + diff -u  median %6.2f s over %d rounds\n' "$n" "$rounds"
  printf '  ratio naive/ferry: %.1fx (target: at least %s)\n' "$(awk -v n="$n" -v f="$f" 'BEGIN {print n / f}')" "$target"
}

printf 'diff benchmark: 100 overlays over 10 bases\n'
bench "PR changing one overlay's patch" "$base" "$overlay" 20x
bench "PR changing a base shared by 10 overlays" "$overlay" "$shared" 3x

risks() { # name base head
  local name=$1 b=$2 h=$3 with without
  run_ferry "$b" "$h"; run_ferry_norisks "$b" "$h" # warm-up
  alternate with without run_ferry run_ferry_norisks "$b" "$h"
  printf 'risks on the %s PR (%s objects changed):\n' "$name" "$(grep -c '<summary>' "$work/ferry.md" || true)"
  printf '  ferry diff                  median %6.3f s over %d rounds\n' "$with" "$rounds"
  printf '  ferry diff --risks=false    median %6.3f s over %d rounds\n' "$without" "$rounds"
  printf '  the risks add %s%% (target: under 10%%)\n' "$(awk -v a="$with" -v b="$without" 'BEGIN {printf "%.1f", (a - b) * 100 / b}')"
}
bench "PR changing every base (100 overlays)" "$shared" "$every" 3x
risks "shared-base" "$overlay" "$shared"
risks "every-base" "$shared" "$every"
