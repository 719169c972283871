#!/usr/bin/env bash
# Discovery benchmark: `ferry render --list` of a generated fleet (three
# clusters, ~1,550 Flux Kustomizations in each cluster root, tenants found
# one level down, legacy files no root reaches) at 2,000 and 5,000
# Kustomizations, against the kustomize v5 CLI building the three cluster
# roots, side by side in one run. The kustomize side is a floor, not the
# whole job: it only builds the roots, where ferry also renders every
# target to find the Kustomizations nested in them. Prints wall times, the
# ratio and the time per Kustomization at both sizes (equal times per
# Kustomization mean linear). Numbers, not a test: nothing here asserts.
#
# Usage: bench/discover.sh [ROUNDS]   (needs bin/ferry and .cache/testbin/kustomize:
#                                      `make bench-discover` builds both)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

echo "discovery benchmark: ferry render --list against kustomize build of the cluster roots"
for n in 2000 5000; do
  repo=$work/fleet-$n
  go test ./internal/config -count=1 -run '^TestWriteFleet$' -fleet.dir "$repo" -fleet.n "$n" > /dev/null
  run_ferry() { "$ferry" render --list --repo "$repo" > "$work/list"; }
  run_kustomize() { for c in "$repo"/clusters/*/; do "$kustomize" build "$c"; done > "$work/roots.yaml"; }
  run_ferry; run_kustomize
  targets=$(wc -l < "$work/list")
  rootks=$(grep -c '^kind: Kustomization$' "$work/roots.yaml")
  alternate f k run_ferry run_kustomize
  printf '  %d Kustomizations: ferry listed %d targets, the roots hold %d\n' "$n" "$targets" "$rootks"
  printf '    ferry render --list                   median %6.2f s over %d rounds (%4.0f µs per target)\n' "$f" "$rounds" "$(awk -v f="$f" -v n="$targets" 'BEGIN {print f * 1e6 / n}')"
  printf '    kustomize build of the 3 cluster roots  median %6.2f s over %d rounds (%4.0f µs per Kustomization)\n' "$k" "$rounds" "$(awk -v k="$k" -v n="$rootks" 'BEGIN {print k * 1e6 / n}')"
  printf '    ratio kustomize/ferry: %.2fx\n' "$(awk -v k="$k" -v f="$f" 'BEGIN {print k / f}')"
done
echo "  target: 5,000 Kustomizations listed in under 5 s"
