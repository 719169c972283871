#!/usr/bin/env bash
# Helm benchmark: one `ferry render` of a Flux repository holding 50
# HelmReleases over 3 charts (bench/charts: webapp, platform with two
# subcharts, operator) against `helm template` (v4.3.2) once per release
# with the same values files, side by side in one run. The charts are
# pushed with `helm push` to Debian's docker-registry on 127.0.0.1 (plain
# HTTP, no auth) and the repository's OCI HelmRepository points there
# (bench/genhelm.sh writes it).
#
# Warm, the headline: charts already cached on both sides. ferry renders
# with a --cache-dir filled by one earlier run (it still asks the
# registry for each chart's manifest, as it does for every tag it
# resolves, and it keeps renders there too: a release rendered before
# with the same chart digest and values is read back, not templated);
# helm templates the .tgz files `helm pull` fetched once, with no network
# at all. Cold is the comparison of templating: nothing kept. Cold: ferry with an empty --cache-dir (each chart
# fetched once per run), against helm templating straight from oci://
# with an empty --content-cache at the start of each round (helm v4.3.2
# still pulls the chart for every release: its content cache does not
# spare the download, as the registry's access log shows).
#
# Before timing, both sides' objects of the charts (those labelled
# app.kubernetes.io/managed-by: Helm) are listed by kind, namespace and
# name and compared; a mismatch is printed loudly. Prints wall and CPU
# times (the CPU time says more on a busy machine), the ratios and
# ferry's peak RSS. Numbers, not a test: nothing here asserts.
#
# Usage: bench/helm.sh [ROUNDS]   (needs bin/ferry, .cache/testbin/helm and
#                                  /usr/bin/docker-registry: `make bench-helm`)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
helm=$PWD/.cache/testbin/helm
registry_bin=/usr/bin/docker-registry
for f in "$ferry" "$helm" "$registry_bin"; do
  [ -x "$f" ] || { echo "bench/helm.sh: $f missing: run make bench-helm (build, tools, registry)" >&2; exit 1; }
done
need_gnu_time
# helm's configuration, caches and registry logins stay in the work folder.
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data

# The registry (lib.sh), stopped on exit.
trap 'stop_registry; rm -rf "$work"' EXIT
start_registry

# The charts, packaged and pushed; the repository; the .tgz files of the
# warm helm side, pulled back from the registry.
mkdir -p "$work/packages" "$work/pulled"
for c in webapp platform operator; do
  "$helm" package "bench/charts/$c" -d "$work/packages" > /dev/null
done
for p in "$work"/packages/*.tgz; do
  "$helm" push "$p" "oci://$registry/charts" --plain-http > /dev/null 2>&1
done
bench/genhelm.sh "$work/gen" "$registry" 50
repo=$work/gen/repo
releases=$work/gen/releases.tsv
cut -f3,4 "$releases" | sort -u | while read -r chart version; do
  "$helm" pull "oci://$registry/charts/$chart" --version "$version" --plain-http -d "$work/pulled" > /dev/null 2>&1
done

run_ferry() { "$ferry" render --repo "$repo" --cache-dir "$1" > "$work/ferry.yaml"; } # cache dir
run_ferry_warm() { run_ferry "$work/ferry-cache"; }
run_ferry_cold() { rm -rf "$work/ferry-cold"; run_ferry "$work/ferry-cold"; }
# helm template, once per release, Flux's values order (the valuesFrom
# file, then the inline values), the release name and namespace of the
# HelmRelease, CRDs included (install.crds: Create) and ferry's default
# Kubernetes version. $1 is the chart: "local" (.tgz) or "oci".
run_helm() {
  local name ns chart version vf inline ref
  : > "$work/helm.yaml"
  while IFS=$'\t' read -r name ns chart version vf inline; do
    if [ "$1" = local ]; then
      ref=("$work/pulled/$chart-$version.tgz")
    else
      ref=("oci://$registry/charts/$chart" --version "$version" --plain-http --content-cache "$work/helm-content")
    fi
    "$helm" template "$name" "${ref[@]}" --namespace "$ns" -f "$vf" -f "$inline" \
      --include-crds --kube-version v1.37.0 >> "$work/helm.yaml" 2> "$work/helm.err" \
      || { cat "$work/helm.err" >&2; return 1; } # (helm prints Pulled: and Digest: of oci:// charts)
    echo "---" >> "$work/helm.yaml"
  done < "$releases"
}
run_helm_local() { run_helm local; }
run_helm_cold() { rm -rf "$work/helm-content"; run_helm oci; }

# Warm-up: fills ferry's cache; the first helm and ferry runs also warm
# the page cache. Then the check of both sides' objects.
run_ferry_warm; run_helm_local
chart_objects "$work/ferry.yaml" > "$work/ferry.ids"
chart_objects "$work/helm.yaml" > "$work/helm.ids"
fobjs=$(wc -l < "$work/ferry.ids"); hobjs=$(wc -l < "$work/helm.ids")
nrel=$(wc -l < "$releases")
printf 'helm benchmark: %d HelmReleases over %d charts (%s) on a local docker-registry\n' \
  "$nrel" "$(cut -f3 "$releases" | sort -u | wc -l)" "$(cut -f3,4 "$releases" | sort -u | tr '\t\n' ' ,' | sed 's/,$//; s/,/, /g')"
printf '  chart objects: ferry %d, helm template %d\n' "$fobjs" "$hobjs"
if ! cmp -s "$work/ferry.ids" "$work/helm.ids"; then
  printf '  !!! MISMATCH: the two sides render different objects (< ferry only, > helm only):\n'
  diff "$work/ferry.ids" "$work/helm.ids" | grep '^[<>]' | head -20 | sed 's/^/  !!!   /'
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b > 0) ? a / b : 0}'; }

timed_rounds fw hw run_ferry_warm run_helm_local
rss=$(/usr/bin/time -f %M "$ferry" render --repo "$repo" --cache-dir "$work/ferry-cache" 2>&1 > /dev/null | tail -1)
printf '  warm (charts cached on both sides), medians over %d rounds:           wall      CPU\n' "$rounds"
printf '    ferry render --cache-dir (one process)                          %6.2f s %6.2f s\n' "$fw" "$fw_cpu"
printf '    helm template of the pulled .tgz (one process per release)      %6.2f s %6.2f s\n' "$hw" "$hw_cpu"
printf '    ratio helm/ferry: %sx wall, %sx CPU (target: at least 5x)\n' "$(ratio "$hw" "$fw")" "$(ratio "$hw_cpu" "$fw_cpu")"
printf '    ferry peak RSS: %d MiB (target: under 500 MiB)\n' "$((rss / 1024))"

timed_rounds fc hc run_ferry_cold run_helm_cold
printf '  cold, medians over %d rounds:                                          wall      CPU\n' "$rounds"
printf '    ferry render, empty --cache-dir (each chart fetched once)       %6.2f s %6.2f s\n' "$fc" "$fc_cpu"
printf '    helm template oci://, empty --content-cache at each round start %6.2f s %6.2f s\n' "$hc" "$hc_cpu"
printf '    ratio helm/ferry: %sx wall, %sx CPU\n' "$(ratio "$hc" "$fc")" "$(ratio "$hc_cpu" "$fc_cpu")"
