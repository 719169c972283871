#!/usr/bin/env bash
# Chart signature benchmark: one `ferry render` of the Helm benchmark's
# repository (bench/genhelm.sh: 50 HelmReleases over 3 charts in a local
# docker-registry), every HelmRelease's chart.spec asking for a cosign
# signature (spec.verify, a key in a Secret), against what a user would
# script without ferry: `cosign verify --key` of each release's chart,
# then `helm template` of the chart, one release after the other, side by
# side in one run. The charts are signed by cosign v3.1.3 with a key and
# no transparency log, in its default format (a Sigstore bundle referrer).
#
# Warm on both sides: ferry with a --cache-dir filled by an earlier run
# (the signatures are still read from the registry on every run, as the
# manifests are); helm templates the .tgz files `helm pull` fetched once.
# Also prints ferry's render without spec.verify, so the cost of the
# check itself shows. Before timing, the chart objects of both sides are
# compared, and a render of a tag re-pushed unsigned must fail (else !!!).
# Numbers, not a test: nothing here asserts.
#
# Usage: bench/verify.sh [ROUNDS]   (make bench-verify)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
helm=$PWD/.cache/testbin/helm
cosign=$PWD/.cache/testbin/cosign
registry_bin=/usr/bin/docker-registry
for f in "$ferry" "$helm" "$cosign" "$registry_bin"; do
  [ -x "$f" ] || { echo "bench/verify.sh: $f missing: run make bench-verify (build, tools, cosign, registry)" >&2; exit 1; }
done
need_gnu_time
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data
export COSIGN_PASSWORD=bench DOCKER_CONFIG=$work/docker
mkdir -p "$DOCKER_CONFIG"; echo '{}' > "$DOCKER_CONFIG/config.json"
trap 'stop_registry; rm -rf "$work"' EXIT
start_registry

mkdir -p "$work/packages" "$work/pulled" "$work/keys"
(cd "$work/keys" && "$cosign" generate-key-pair > /dev/null 2>&1)
for c in webapp platform operator; do
  "$helm" package "bench/charts/$c" -d "$work/packages" > /dev/null
done
for p in "$work"/packages/*.tgz; do
  out=$("$helm" push "$p" "oci://$registry/charts" --plain-http 2>&1)
  ref=$(awk '/^Pushed:/ {print $2}' <<< "$out"); digest=$(awk '/^Digest:/ {print $2}' <<< "$out")
  "$cosign" sign --yes --key "$work/keys/cosign.key" --use-signing-config=false --tlog-upload=false \
    --allow-insecure-registry --allow-http-registry "${ref%:*}@$digest" > /dev/null 2>&1
done
bench/genhelm.sh "$work/gen" "$registry" 50
repo=$work/gen/repo
releases=$work/gen/releases.tsv
cut -f3,4 "$releases" | sort -u | while read -r chart version; do
  "$helm" pull "oci://$registry/charts/$chart" --version "$version" --plain-http -d "$work/pulled" > /dev/null 2>&1
done
# The same repository with spec.verify on every release and the key in a
# Secret of the cluster's root, in the HelmRepository's namespace (where
# helm-controller makes the HelmChart whose secretRef it is).
cp -r "$repo" "$work/plain"
find "$repo/apps" -name '*.yaml' -exec sed -i \
  's|^      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}$|&\n      verify: {provider: cosign, secretRef: {name: cosign-keys}}|' {} +
{
  printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: cosign-keys, namespace: flux-system}\nstringData:\n  cosign.pub: |\n'
  sed 's/^/    /' "$work/keys/cosign.pub"
} > "$repo/clusters/prod/cosign-keys.yaml"
sed -i 's|^  - charts.yaml$|&\n  - cosign-keys.yaml|' "$repo/clusters/prod/kustomization.yaml"
verified=$(grep -rc 'verify: {provider: cosign' "$repo/apps" | awk -F: '{s += $2} END {print s}')

run_ferry() { "$ferry" render --repo "$1" --cache-dir "$work/ferry-cache" > "$work/$2.yaml"; }
run_ferry_verify() { run_ferry "$repo" ferry; }
run_ferry_plain() { run_ferry "$work/plain" plain; }
run_user() {
  local name ns chart version vf inline
  : > "$work/helm.yaml"
  while IFS=$'\t' read -r name ns chart version vf inline; do
    "$cosign" verify --key "$work/keys/cosign.pub" --insecure-ignore-tlog --allow-insecure-registry --allow-http-registry \
      "$registry/charts/$chart:$version" > /dev/null 2> "$work/cosign.err" || { cat "$work/cosign.err" >&2; return 1; }
    "$helm" template "$name" "$work/pulled/$chart-$version.tgz" --namespace "$ns" -f "$vf" -f "$inline" \
      --include-crds --kube-version v1.37.0 >> "$work/helm.yaml" 2> "$work/helm.err" || { cat "$work/helm.err" >&2; return 1; }
    echo "---" >> "$work/helm.yaml"
  done < "$releases"
}

run_ferry_verify; run_ferry_plain; run_user
chart_objects "$work/ferry.yaml" > "$work/ferry.ids"
chart_objects "$work/helm.yaml" > "$work/helm.ids"
nrel=$(wc -l < "$releases")
printf 'chart signature benchmark: %d HelmReleases (%d with spec.verify) over %d signed charts on a local docker-registry\n' \
  "$nrel" "$verified" "$(cut -f3 "$releases" | sort -u | wc -l)"
printf '  chart objects: ferry %d, cosign verify + helm template %d\n' "$(wc -l < "$work/ferry.ids")" "$(wc -l < "$work/helm.ids")"
if [ "$verified" -ne "$nrel" ] || ! cmp -s "$work/ferry.ids" "$work/helm.ids"; then
  printf '  !!! MISMATCH: not every release asks for a signature, or the sides render different objects\n'
  diff "$work/ferry.ids" "$work/helm.ids" | grep '^[<>]' | head -10 | sed 's/^/  !!!   /'
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b > 0) ? a / b : 0}'; }
timed_rounds fv uv run_ferry_verify run_user
timed_rounds fp fv2 run_ferry_plain run_ferry_verify
printf '  warm, medians over %d rounds:                                       wall      CPU\n' "$rounds"
printf '    ferry render, every chart verified (one process)               %6.2f s %6.2f s\n' "$fv" "$fv_cpu"
printf '    cosign verify + helm template per release                       %6.2f s %6.2f s\n' "$uv" "$uv_cpu"
printf '    ratio script/ferry: %sx wall, %sx CPU\n' "$(ratio "$uv" "$fv")" "$(ratio "$uv_cpu" "$fv_cpu")"
printf '    ferry render without spec.verify                               %6.2f s %6.2f s\n' "$fp" "$fp_cpu"
printf '    (paired with verified: %6.2f s): the check adds %s%% wall\n' "$fv2" "$(awk -v a="$fv2" -v b="$fp" 'BEGIN {printf "%.0f", (b > 0) ? (a - b) * 100 / b : 0}')"

# A tag re-pushed unsigned: ferry must refuse it.
chart=$(cut -f3 "$releases" | head -1); version=$(awk -v c="$chart" '$3 == c {print $4; exit}' "$releases")
"$helm" package "bench/charts/$chart" -d "$work/repush" --app-version repushed > /dev/null
"$helm" push "$work/repush/$chart-$version.tgz" "oci://$registry/charts" --plain-http > /dev/null 2>&1
if "$ferry" render --repo "$repo" --cache-dir "$work/ferry-cache" > /dev/null 2> "$work/refused.err"; then
  printf '  !!! the chart re-pushed unsigned was rendered\n'
else
  printf '  re-pushed unsigned: refused (%s)\n' "$(grep -o 'has no cosign signature' "$work/refused.err" | head -1)"
fi
