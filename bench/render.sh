#!/usr/bin/env bash
# Render benchmark: ferry render of every target of a generated repository
# (100 overlays over 20 bases, ~2,000 objects) against the kustomize v5 CLI
# run once per overlay, side by side in one run. Prints wall times, the
# ratio and ferry's peak RSS. Numbers, not a test: nothing here asserts.
#
# Then the same overlays as a Flux fleet against flux build ks per target,
# and render --list of the fleet fixtures.
#
# Usage: bench/render.sh [ROUNDS]   (needs bin/ferry and .cache/testbin/kustomize and flux:
#                                    `make bench-render` builds both)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
repo=$work/repo
bench/genrepo.sh "$repo" 20 100
need_gnu_time

run_ferry() { "$ferry" render --repo "$repo" > "$work/ferry.yaml"; }
run_kustomize() {
  : > "$work/kustomize.yaml"
  for d in "$repo"/apps/overlays/*/; do
    "$kustomize" build "$d" >> "$work/kustomize.yaml"
  done
}

# Warm-up (page cache, first exec), then alternate the two tools.
run_ferry; run_kustomize
fobjs=$(grep -c '^kind:' "$work/ferry.yaml"); kobjs=$(grep -c '^kind:' "$work/kustomize.yaml")
alternate f k run_ferry run_kustomize
rss=$( { /usr/bin/time -f '%M' "$ferry" render --repo "$repo" > /dev/null; } 2>&1 | tail -1)

printf 'render benchmark: %d overlays over %d bases; ferry rendered %s objects, kustomize %s\n' 100 20 "$fobjs" "$kobjs"
printf '  ferry render (all targets, one process)   median %6.2f s over %d rounds\n' "$f" "$rounds"
printf '  kustomize build (v5 CLI, once per overlay)  median %6.2f s over %d rounds\n' "$k" "$rounds"
printf '  ratio kustomize/ferry: %.1fx (target: at least 3x)\n' "$(awk -v k="$k" -v f="$f" 'BEGIN {print k / f}')"
printf '  ferry peak RSS: %d MiB (target: under 500 MiB)\n' "$((rss / 1024))"

# The same 100 overlays as a Flux fleet (no ferry.yaml): a cluster root
# holding one Kustomization per overlay, patched by the root with a
# postBuild default, each with dependsOn and a targetNamespace. ferry
# renders every target in one process; flux build ks (v2.7.5, the oracle)
# runs once per Kustomization, as a Flux user would to see a whole fleet.
flux=$PWD/.cache/testbin/flux
fleet=$work/fleet
cp -r "$repo" "$fleet" && rm "$fleet/ferry.yaml"
mkdir -p "$fleet/clusters/prod/flux-system" "$fleet/clusters/prod/apps"
cat > "$fleet/clusters/prod/flux-system/gotk-sync.yaml" <<Y
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  path: ./clusters/prod
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
Y
cat > "$fleet/clusters/prod/kustomization.yaml" <<Y
resources: [flux-system/gotk-sync.yaml, apps]
patches:
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: |-
      - op: add
        path: /spec/postBuild
        value: {substitute: {CLUSTER: prod}}
Y
: > "$fleet/clusters/prod/apps/kustomization.yaml"
echo "resources:" >> "$fleet/clusters/prod/apps/kustomization.yaml"
for d in "$fleet"/apps/overlays/*/; do
  n=$(basename "$d")
  dep=""; [ "$n" != env0 ] && dep="  dependsOn: [{name: env0}]"
  cat > "$fleet/clusters/prod/apps/$n.yaml" <<Y
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: $n, namespace: flux-system}
spec:
  path: ./apps/overlays/$n
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  targetNamespace: $n
$dep
Y
  echo "  - $n.yaml" >> "$fleet/clusters/prod/apps/kustomization.yaml"
done
run_ferry_fleet() { "$ferry" render --repo "$fleet" > "$work/ferry-fleet.yaml"; }
# flux build ks of the Kustomizations as the root renders them (patched).
"$ferry" render --repo "$fleet" > /dev/null
run_flux_fleet() {
  : > "$work/flux-fleet.yaml"
  for f in "$fleet"/clusters/prod/apps/env*.yaml; do
    n=$(basename "$f" .yaml)
    "$flux" build ks "$n" --path "$fleet/apps/overlays/$n" --kustomization-file "$work/patched/$n.yaml" --dry-run >> "$work/flux-fleet.yaml"
    echo "---" >> "$work/flux-fleet.yaml"
  done
}
mkdir -p "$work/patched"
for f in "$fleet"/clusters/prod/apps/env*.yaml; do
  n=$(basename "$f" .yaml)
  { cat "$f"; printf '  postBuild: {substitute: {CLUSTER: prod}}\n'; } > "$work/patched/$n.yaml"
done
run_ferry_fleet; run_flux_fleet
targets=$("$ferry" render --list --repo "$fleet" | awk 'NR > 1 && $6 == "ok"' | wc -l)
alternate ff fx run_ferry_fleet run_flux_fleet
printf 'flux fleet: %d Kustomizations (one per overlay) under a patched cluster root; ferry found %s targets\n' "$(ls "$fleet"/clusters/prod/apps/env*.yaml | wc -l)" "$targets"
printf '  ferry render (every target, one process)         median %6.2f s over %d rounds (%s objects)\n' "$ff" "$rounds" "$(grep -c '^kind:' "$work/ferry-fleet.yaml")"
printf '  flux build ks --dry-run (v2.7.5, once per target)  median %6.2f s over %d rounds (%s objects)\n' "$fx" "$rounds" "$(grep -c '^kind:' "$work/flux-fleet.yaml")"
printf '  ratio flux/ferry: %.1fx (target: at least 3x)\n' "$(awk -v x="$fx" -v f="$ff" 'BEGIN {print x / f}')"

# render --list of each fleet fixture of the tests (target: under 1 s).
for fx_dir in internal/config/testdata/fleets/*/; do
  : > "$work/list.times"
  for ((i = 0; i < rounds; i++)); do
    t0=$(now); "$ferry" render --list --repo "$fx_dir" > /dev/null; t1=$(now)
    elapsed "$t0" "$t1" >> "$work/list.times"
  done
  printf '  render --list of fixture %-12s median %5.3f s (target: under 1 s)\n' "$(basename "$fx_dir")" "$(median < "$work/list.times")"
done
