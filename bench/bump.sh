#!/usr/bin/env bash
# Chart bump benchmark: one `ferry bump --dry-run --format json` of a Flux
# repository holding 50 HelmReleases over 10 charts (bench/genbump.sh),
# each chart at 100 versions in a local docker-registry (OCI, plain HTTP),
# against what a user would script without ferry, side by side in one
# run. ferry scans the registry, picks each release's newest allowed
# version, renders both versions of every release and diffs them. The
# script: per chart, `crane ls` of its repository and the newest version
# in the pinned one's major (grep of X.Y.Z, so no pre-release, and sort
# -V); then per HelmRelease `helm template` (v4.3.2) of the pinned and of
# the new version with the release's values and `diff -u` of the two,
# one release after the other.
#
# The tags of each chart: 1.M.P (M 0-10, P 0-8, one left out), 1.99.0-rc.1
# and 2.0.0, pushed in shuffled order, so the newest in major 1 (1.10.7
# or 1.10.8) is neither the last pushed, the largest, nor the last in a
# plain sort. Each version renders differently (image tag, labels, and
# from some minors on a probe and a port). The charts are packaged with
# tar (what `helm package` writes, without a helm process per version)
# and pushed with `helm push`, several at a time.
#
# Warm, the headline, as a CI job with caches would run: ferry with a
# --cache-dir filled by an earlier run (it still lists every chart's tags
# from the registry); the script templates .tgz files that `helm pull`
# fetched once into a folder (it still runs crane ls). Cold: ferry with
# an empty --cache-dir, the script with an empty folder (a helm pull per
# chart version it needs). If `ferry bump` takes no --cache-dir, ferry
# runs without one and the header says so.
#
# Before timing: ferry's JSON must hold 50 changes (.updates[].changes[]),
# each moving a release from its pinned version to the version the
# script picked for its chart, every update must carry a diff with
# targets (.updates[].diff.targets) and no renderError, .errors must be
# empty and the repository untouched; the script's own picks are checked
# against the versions genbump.sh pushed. Any mismatch prints a `!!!`
# line (the timing goes on); a ferry without chart bumps (no --format, no
# changes) is not timed, and the script is timed alone. Prints wall and
# CPU times (medians), the ratio and ferry's peak RSS. Numbers, not a
# test: nothing here asserts.
#
# Usage: bench/bump.sh [ROUNDS]   (needs bin/ferry, .cache/testbin/helm and
#                                  crane, /usr/bin/docker-registry, jq:
#                                  `make bench-bump`)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
helm=$PWD/.cache/testbin/helm
crane=$PWD/.cache/testbin/crane
registry_bin=/usr/bin/docker-registry
for f in "$ferry" "$helm" "$crane" "$registry_bin"; do
  [ -x "$f" ] || { echo "bench/bump.sh: $f missing: run make bench-bump (build, tools, registry, crane)" >&2; exit 1; }
done
command -v jq > /dev/null || { echo "bench/bump.sh: jq missing" >&2; exit 1; }
need_gnu_time
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data
export DOCKER_CONFIG=$work/docker
mkdir -p "$DOCKER_CONFIG"; echo '{}' > "$DOCKER_CONFIG/config.json"
trap 'stop_registry; rm -rf "$work"' EXIT

# Setup: the registry, the charts and the repository, every chart at
# every version packaged and pushed (8 at a time).
t_setup=$(now)
# shellcheck disable=SC2119 # plain HTTP: no tls argument
start_registry
bench/genbump.sh "$work/gen" "$registry"
repo=$work/gen/repo
releases=$work/gen/releases.tsv
# push_one CHART VERSION: the chart at VERSION (version and appVersion in
# its Chart.yaml), as a .tgz, pushed to the registry.
push_one() {
  local s=$work/stage/$1-$2
  if ! { mkdir -p "$s" && cp -r "$work/gen/charts/$1" "$s/" \
    && sed -i "s/^version: .*/version: $2/; s/^appVersion: .*/appVersion: \"$2\"/" "$s/$1/Chart.yaml" \
    && tar -czf "$s.tgz" -C "$s" "$1" \
    && "$helm" push "$s.tgz" "oci://$registry/charts" --plain-http > "$s.log" 2>&1; }; then
    echo "bench/bump.sh: pushing $1 $2 failed: $(cat "$s.log" 2>/dev/null)" >&2
    return 1
  fi
  rm -rf "$s" "$s.tgz" "$s.log"
}
export -f push_one
export work helm registry
t_push=$(now)
# shellcheck disable=SC2016 # expanded by the bash that xargs starts
tr '\t' '\n' < "$work/gen/tags.tsv" | xargs -n 2 -P 8 bash -c 'push_one "$1" "$2"' _
t_pushed=$(now)

# The script a user would write. $1 is the folder of pulled charts.
# Writes $work/peer/picks.tsv (chart, major, newest) and one diff per
# release under $work/peer/diffs.
run_peer() {
  local cache=$1 chart major tags name ns version vf new v
  local -A pick=()
  mkdir -p "$cache" "$work/peer/diffs"
  : > "$work/peer/picks.tsv"
  while read -r chart major; do
    tags=$("$crane" ls --insecure "$registry/charts/$chart")
    new=$(grep -E "^$major\.[0-9]+\.[0-9]+\$" <<< "$tags" | sort -V | tail -n 1) || true
    pick[$chart/$major]=$new
    printf '%s\t%s\t%s\n' "$chart" "$major" "$new" >> "$work/peer/picks.tsv"
  done < <(awk -F'\t' '{split($4, v, "."); print $3, v[1]}' "$releases" | sort -u)
  while IFS=$'\t' read -r name ns chart version vf; do
    new=${pick[$chart/${version%%.*}]}
    if [ -z "$new" ] || [ "$new" = "$version" ]; then continue; fi
    for v in "$version" "$new"; do
      [ -f "$cache/$chart-$v.tgz" ] || "$helm" pull "oci://$registry/charts/$chart" --version "$v" --plain-http -d "$cache" > /dev/null 2>&1
      "$helm" template "$name" "$cache/$chart-$v.tgz" --namespace "$ns" -f "$vf" --kube-version v1.37.0 \
        > "$work/peer/$v.yaml" 2> "$work/peer/helm.err" || { cat "$work/peer/helm.err" >&2; return 1; }
    done
    diff -u --label "$name@$version" --label "$name@$new" "$work/peer/$version.yaml" "$work/peer/$new.yaml" \
      > "$work/peer/diffs/$name.diff" || [ $? = 1 ]
  done < "$releases"
}
run_peer_warm() { run_peer "$work/pulled"; }
run_peer_cold() { rm -rf "$work/pulled-cold"; run_peer "$work/pulled-cold"; }

# ferry. $1 is its --cache-dir, if it takes one.
# (The help is read whole first: grep -q stopping early would kill
# ferry with SIGPIPE, a failure under pipefail.)
ferry_help=$("$ferry" bump --help 2>/dev/null || true)
ferry_cache=no
grep -q -- '--cache-dir' <<< "$ferry_help" && ferry_cache=yes
run_ferry() {
  local args=(bump --dry-run --repo "$repo" --insecure-registry "$registry" --format json) rc=0
  [ "$ferry_cache" = no ] || args+=(--cache-dir "$1")
  "$ferry" "${args[@]}" > "$work/ferry.json" 2> "$work/ferry.err" || rc=$?
  if [ "$rc" -gt 1 ]; then cat "$work/ferry.err" >&2; return "$rc"; fi
}
run_ferry_warm() { run_ferry "$work/ferry-cache"; }
run_ferry_cold() { rm -rf "$work/ferry-cold"; run_ferry "$work/ferry-cold"; }

# Warm-up: fills the script's folder of pulled charts (and the page cache).
run_peer_warm
t_ready=$(now)

nchart=$(cut -f3 "$releases" | sort -u | wc -l)
ntags=$(wc -l < "$work/gen/tags.tsv")
printf 'chart bump benchmark: %d HelmReleases over %d charts, %d tags in all (%d per chart), on a local docker-registry (OCI, plain HTTP)\n' \
  "$(wc -l < "$releases")" "$nchart" "$ntags" "$((ntags / nchart))"
printf '  setup %.0f s (packaging and pushing the %d chart versions %.0f s; the script'"'"'s warm-up run with its helm pulls %.0f s)\n' \
  "$(elapsed "$t_setup" "$t_ready")" "$ntags" "$(elapsed "$t_push" "$t_pushed")" "$(elapsed "$t_pushed" "$t_ready")"

# The script's picks against what genbump.sh pushed: the newest 1.M.P of
# each chart's tags.
while IFS=$'\t' read -r chart major new; do
  want=$(awk -F'\t' -v c="$chart" -v m="$major" '$1 == c {split($2, v, /[.-]/); if (v[1] == m && $2 !~ /-/) print $2}' "$work/gen/tags.tsv" |
    sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
  [ "$new" = "$want" ] || printf '  !!! the script picked %s for %s major %s, the newest pushed is %s\n' "$new" "$chart" "$major" "$want"
done < "$work/peer/picks.tsv"
printf '  the script'"'"'s picks: %s\n' "$(cut -f3 "$work/peer/picks.tsv" | sort | uniq -c | awk '{printf "%s%s (%d charts)", sep, $2, $1; sep = ", "}')"
ndiff=$(find "$work/peer/diffs" -name '*.diff' -size +0 | wc -l)
nimg=$(cat "$work/peer/diffs"/*.diff | grep -c '^+ *image: ' || true)
printf '  the script'"'"'s diffs: %d releases changed, %d lines of diff, %d image lines\n' \
  "$ndiff" "$(cat "$work/peer/diffs"/*.diff | grep -c '^[-+][^-+]' || true)" "$nimg"
[ "$ndiff" = 50 ] && [ "$nimg" = 50 ] || printf '  !!! the script should have diffed 50 releases, each with a new image line\n'

# ferry's output, checked once; a ferry without chart bumps is not timed.
ferry_ok=yes
if ! grep -q -- '--format' <<< "$ferry_help"; then
  printf '  !!! bin/ferry bump has no --format: ferry has no chart bumps yet (make build once it does); timing the script alone\n'
  ferry_ok=no
elif ! run_ferry_warm; then
  printf '  !!! ferry bump failed: %s\n' "$(head -c 400 "$work/ferry.err" | tr '\n' ' ')"
  ferry_ok=no
elif ! jq -e '.updates | type == "array"' "$work/ferry.json" > /dev/null 2>&1; then
  printf '  !!! ferry bump --format json printed no .updates array: %s\n' "$(head -c 300 "$work/ferry.json" | tr '\n' ' ')"
  ferry_ok=no
else
  nchg=$(jq '[.updates[] | (.changes // [])[]] | length' "$work/ferry.json")
  printf '  ferry: %d updates, %d changes, %d errors\n' "$(jq '.updates | length' "$work/ferry.json")" "$nchg" "$(jq '.errors // [] | length' "$work/ferry.json")"
  [ "$nchg" = 50 ] || printf '  !!! ferry has %s changes, not 50\n' "$nchg"
  [ "$nchg" != 0 ] || ferry_ok=no
  # Each release: ferry's field, old and new version against the script's.
  jq -r '.updates[] | (.changes // [])[] | [.object, .field, .old, .new] | @tsv' "$work/ferry.json" > "$work/ferry.changes"
  awk -F'\t' '
    FILENAME == ARGV[1] { pick[$1 "/" $2] = $3; next }
    FILENAME == ARGV[2] { got[$1] = $2 " " $3 " -> " $4; next }
    { obj = "HelmRelease/" $2 "/" $1; split($4, v, "."); want = "spec.chart.spec.version " $4 " -> " pick[$3 "/" v[1]]
      if (!(obj in got)) print "  !!! ferry has no change of " obj " (the script: " want ")"
      else if (got[obj] != want) print "  !!! " obj ": ferry " got[obj] ", the script " want
      delete got[obj] }
    END { for (o in got) print "  !!! ferry changes " o " " got[o] ", not a release of the repository" }' \
    "$work/peer/picks.tsv" "$work/ferry.changes" "$releases" | head -20
  jq -r '.updates[] | select((.diff.targets // []) | length == 0) | "  !!! update \(.key) has no diff targets"' "$work/ferry.json" | head -10
  jq -r '.updates[] | select((.renderError // "") != "") | "  !!! update \(.key): renderError \(.renderError)"' "$work/ferry.json" | head -10
  jq -r '.updates[] | select(.kind != "chart") | "  !!! update \(.key) is of kind \(.kind), not chart"' "$work/ferry.json" | head -10
  jq -r '(.errors // [])[] | "  !!! ferry error: \(.)"' "$work/ferry.json" | head -10
  [ -z "$(git -C "$repo" status --porcelain)" ] || printf '  !!! ferry bump --dry-run changed the repository\n'
fi

fw='' fw_cpu='' pw='' pw_cpu='' fc='' fc_cpu='' pc='' pc_cpu='' # set by timed_rounds
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b > 0) ? a / b : 0}'; }
noop() { :; }
if [ "$ferry_ok" = yes ]; then
  warm=warm; [ "$ferry_cache" = yes ] || warm="ferry cold (bump takes no --cache-dir), the script warm"
  timed_rounds fw pw run_ferry_warm run_peer_warm
  rss_args=(bump --dry-run --repo "$repo" --insecure-registry "$registry" --format json)
  [ "$ferry_cache" = no ] || rss_args+=(--cache-dir "$work/ferry-cache")
  rss=$(/usr/bin/time -f %M "$ferry" "${rss_args[@]}" 2>&1 > /dev/null | tail -n 1)
  printf '  %s, medians over %d rounds:                                           wall      CPU\n' "$warm" "$rounds"
  printf '    ferry bump --dry-run --format json (one process)                 %6.2f s %6.2f s\n' "$fw" "$fw_cpu"
  printf '    crane ls per chart, helm template x2 + diff -u per release       %6.2f s %6.2f s\n' "$pw" "$pw_cpu"
  printf '    ratio script/ferry: %sx wall, %sx CPU (target: at least 5x): ferry is %sx faster\n' \
    "$(ratio "$pw" "$fw")" "$(ratio "$pw_cpu" "$fw_cpu")" "$(ratio "$pw" "$fw")"
  printf '    ferry peak RSS: %d MiB\n' "$((rss / 1024))"
  if [ "$ferry_cache" = yes ]; then
    timed_rounds fc pc run_ferry_cold run_peer_cold
    printf '  cold, medians over %d rounds:                                          wall      CPU\n' "$rounds"
    printf '    ferry bump, empty --cache-dir                                    %6.2f s %6.2f s\n' "$fc" "$fc_cpu"
    printf '    the script, empty folder of pulled charts (helm pull each)       %6.2f s %6.2f s\n' "$pc" "$pc_cpu"
    printf '    ratio script/ferry: %sx wall, %sx CPU\n' "$(ratio "$pc" "$fc")" "$(ratio "$pc_cpu" "$fc_cpu")"
  fi
else
  timed_rounds _n pw noop run_peer_warm
  timed_rounds _n pc noop run_peer_cold
  printf '  the script alone, medians over %d rounds:                              wall      CPU\n' "$rounds"
  printf '    warm: crane ls per chart, helm template x2 + diff -u per release  %6.2f s %6.2f s\n' "$pw" "$pw_cpu"
  printf '    cold: the same, empty folder of pulled charts (helm pull each)    %6.2f s %6.2f s\n' "$pc" "$pc_cpu"
fi
