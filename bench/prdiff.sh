#!/usr/bin/env bash
# Pull-request diff benchmark: ferry diff against flate v0.6.5
# (github.com/home-operations/flate, the renderer home-operations fleets
# run on their pull requests) on a generated fleet shaped like theirs
# (bench/genprfleet.sh: 80 apps, 71 HelmReleases over 5 charts, a
# flux-instance HelmRelease declaring the root, cluster-apps patching
# every child Kustomization, a volsync component shared by 15 apps).
# Three pull requests, one line each: a HelmRelease value, a plain
# manifest, the shared component.
#
# Each side as its users run it on a pull request: ferry reads both
# revisions from Git (`ferry diff --base main --head BRANCH`); flate, in
# changed-only mode, needs the base checked out beside the head, so its
# time counts `git worktree add` of main (and removing it again) with
# `flate diff all --path HEAD/kubernetes --path-orig BASE/kubernetes`.
# The repository's work tree holds the head, as in a CI job.
#
# Warm, the headline: one run of each first, then paired alternating
# rounds. ferry keeps fetched charts, chart renders and kustomize builds
# in --cache-dir; flate keeps charts and also its helm and kustomize
# render output under $XDG_CACHE_HOME/flate (here in the work folder), so
# a warm run of either re-renders nothing it has seen: a CI cache restores
# both (actions/cache for ferry, flate's action's cache: true). Cold:
# empty caches on both sides at each run. ferry's exports of the two
# revisions go where it puts them in CI (/dev/shm when it is a tmpfs and
# TMPDIR is unset); flate's base worktree where a workflow checks it out,
# the work folder on disk.
#
# The charts are served by Debian's docker-registry on 127.0.0.1 over
# HTTPS with a certificate made here: flate reads a source's
# `insecure: true` as "skip TLS verification" and never speaks plain HTTP,
# ferry reads it as Flux documents it ("plain HTTP allowed") and checks
# certificates, so the certificate is trusted through SSL_CERT_FILE.
#
# Checks, printed, never asserted: the Kustomizations and HelmReleases
# each tool finds (ferry render --list, flate get ks/hr), the changed
# objects each reports for each pull request, and the objects of a full
# render of main (ferry's without CRDs and Secrets, which flate leaves out
# by default); a difference is printed on a line starting with "!!!".
# Prints wall and CPU times (CPU says more on a busy machine), the ratios
# ferry/flate (target: at most 1) and ferry's peak RSS (target: under
# 200 MiB for a diff). Exits 0 when it ran, whatever the numbers.
#
# Usage: bench/prdiff.sh [ROUNDS]   (needs bin/ferry, .cache/testbin/helm and
#                                    /usr/bin/docker-registry: `make bench-prdiff`;
#                                    builds .cache/testbin/flate when missing)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
helm=$PWD/.cache/testbin/helm
flate=$PWD/.cache/testbin/flate
registry_bin=/usr/bin/docker-registry
for f in "$ferry" "$helm" "$registry_bin"; do
  [ -x "$f" ] || { echo "bench/prdiff.sh: $f missing: run make bench-prdiff (build, tools, registry)" >&2; exit 1; }
done
command -v openssl > /dev/null || { echo "bench/prdiff.sh: openssl missing (for the registry's certificate)" >&2; exit 1; }
need_gnu_time
# flate v0.6.5 needs Go 1.27; the module's go.mod stays on its own
# version, so the toolchain is named here (cold: a few minutes).
if [ ! -x "$flate" ]; then
  echo "bench/prdiff.sh: building flate v0.6.5 into .cache/testbin (Go 1.27.3)" >&2
  GOTOOLCHAIN=go1.27.3 GOBIN=$PWD/.cache/testbin go install github.com/home-operations/flate/cmd/flate@v0.6.5
fi
# Every cache and configuration in the work folder: helm's, flate's
# ($XDG_CACHE_HOME/flate) and ferry's default one (ferry is given
# --cache-dir anyway).
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data
export XDG_CACHE_HOME=$work/cache

# The registry (lib.sh): HTTPS with a certificate made for it, trusted
# through SSL_CERT_FILE; stopped on exit.
cleanup() {
  stop_registry
  [ -d "${repo:-}" ] && git -C "$repo" worktree prune 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
start_registry tls

# The charts, packaged and pushed; the fleet and its branches.
mkdir -p "$work/packages"
for c in app-template webapp platform operator flux-instance; do
  "$helm" package "bench/charts/$c" -d "$work/packages" > /dev/null
done
for p in "$work"/packages/*.tgz; do
  "$helm" push "$p" "oci://$registry/charts" > /dev/null 2>&1
done
bench/genprfleet.sh "$work/gen" "$registry"
repo=$work/gen/repo
git() { command git -C "$repo" "$@"; }

# What each tool finds in main: Kustomizations as "name path",
# HelmReleases as "namespace/name", sorted.
"$ferry" render --list --format json --repo "$repo" --cache-dir "$work/ferry-cache" > "$work/list.json" 2> "$work/list.err" \
  || printf '!!! ferry render --list failed: %s\n' "$(head -c 2000 "$work/list.err")"
python3 - "$work/list.json" "$work/ferry.ks" "$work/ferry.hr" "$work/ferry.root" <<'P'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    d = {}
ts = d.get("targets") or []
open(sys.argv[2], "w").write("".join(sorted(f"{t['name']} {t['path']}\n" for t in ts)))
open(sys.argv[3], "w").write("".join(sorted(f"{r['namespace']}/{r['name']}\n" for t in ts for r in t.get("releases") or [])))
open(sys.argv[4], "w").write("; ".join(f"{c['Path']} from the {c['From']} ({c['Origin']})" for c in d.get("clusters") or []) or "none")
P
"$flate" get ks --path "$repo/kubernetes" > "$work/flate-ks.txt" 2> "$work/flate-ks.err" \
  || printf '!!! flate get ks failed: %s\n' "$(head -c 2000 "$work/flate-ks.err")"
"$flate" get hr --path "$repo/kubernetes" > "$work/flate-hr.txt" 2> "$work/flate-hr.err" \
  || printf '!!! flate get hr failed: %s\n' "$(head -c 2000 "$work/flate-hr.err")"
awk 'NR > 1 {sub("^\\./", "", $3); print $2, $3}' "$work/flate-ks.txt" | sort > "$work/flate.ks"
awk 'NR > 1 {print $1 "/" $2}' "$work/flate-hr.txt" | sort > "$work/flate.hr"
printf 'pull-request diff benchmark: a home-operations style fleet, %d apps in %d namespaces, charts on a local docker-registry\n' \
  "$(find "$repo/kubernetes/apps" -mindepth 2 -maxdepth 2 -type d | wc -l)" "$(find "$repo/kubernetes/apps" -mindepth 1 -maxdepth 1 -type d | wc -l)"
printf '  ferry finds the cluster root %s\n' "$(cat "$work/ferry.root")"
printf '  Flux Kustomizations: ferry %d, flate %d; HelmReleases: ferry %d, flate %d\n' \
  "$(wc -l < "$work/ferry.ks")" "$(wc -l < "$work/flate.ks")" "$(wc -l < "$work/ferry.hr")" "$(wc -l < "$work/flate.hr")"
for k in ks hr; do
  if ! cmp -s "$work/ferry.$k" "$work/flate.$k"; then
    printf '  !!! MISMATCH: the tools find different %s (< ferry only, > flate only):\n' "$([ $k = ks ] && echo Kustomizations || echo HelmReleases)"
    diff "$work/ferry.$k" "$work/flate.$k" | grep '^[<>]' | head -20 | sed 's/^/  !!!   /'
  fi
done

# The changed objects of a report, "Kind namespace/name" (or "Kind name"),
# sorted: ferry's text report heads each with "--- Kind[.group]/[ns/]name
# (action)"; flate's unified diff (-o diff) with "--- Kind [ns/]name" and
# "+++" of the same.
ferry_changed() {
  sed -n 's/^--- \(.*\) (\(added\|changed\|removed\)[^)]*)$/\1/p' "$1" \
    | awk -F/ '{k = $1; sub(/\..*/, "", k); print k, (NF == 3 ? $2 "/" $3 : $2)}' | sort -u
}
flate_changed() {
  awk 'prev != "" && $0 == "+++ " substr(prev, 5) {print substr(prev, 5)} {prev = /^--- / ? $0 : ""}' "$1" | sort -u
}

# The runs. A failed run is noted (its exit status in a file) and the
# benchmark goes on; the check lines say so.
branch=main
ferry_cache=$work/ferry-cache
flate_opts=()
run_ferry() {
  "$ferry" diff --repo "$repo" --base main --head "$branch" --format text --color never --cache-dir "$ferry_cache" \
    > "$work/ferry.out" 2> "$work/ferry.err" || echo $? > "$work/ferry.rc"
}
run_flate() {
  git worktree add -q --detach "$work/base" main
  "$flate" diff all --path "$repo/kubernetes" --path-orig "$work/base/kubernetes" "${flate_opts[@]}" \
    > "$work/flate.out" 2> "$work/flate.err" || echo $? > "$work/flate.rc"
  git worktree remove --force "$work/base"
}
run_ferry_cold() { rm -rf "$work/ferry-cold"; ferry_cache=$work/ferry-cold run_ferry; }
run_flate_cold() { rm -rf "$work/cold-cache"; XDG_CACHE_HOME=$work/cold-cache run_flate; }
failed() { # tool: a line when its last run failed
  [ -f "$work/$1.rc" ] || return 0
  printf '  !!! %s exited %s: %s\n' "$1" "$(cat "$work/$1.rc")" "$(head -c 1500 "$work/$1.err" | tr '\n' ' ')"
  rm -f "$work/$1.rc"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }
mib() { echo $(($1 / 1024)); }

while IFS=$'\t' read -r branch file what; do
  git checkout -q "$branch"
  printf '\nPR %s: %s, one line of %s\n' "$branch" "$what" "$file"
  # Warm-up, which also gives the checks: flate with its plain unified
  # diff (-o diff), which names each object.
  run_ferry; failed ferry
  flate_opts=(-o diff); run_flate; failed flate; flate_opts=()
  ferry_changed "$work/ferry.out" > "$work/ferry.changed"
  flate_changed "$work/flate.out" > "$work/flate.changed"
  printf '  changed objects: ferry %d, flate %d' "$(wc -l < "$work/ferry.changed")" "$(wc -l < "$work/flate.changed")"
  if cmp -s "$work/ferry.changed" "$work/flate.changed"; then
    printf ' (the same):\n'
    sed 's/^/    /' "$work/ferry.changed"
  else
    printf '\n  !!! MISMATCH: the tools report different changed objects (< ferry only, > flate only):\n'
    diff "$work/ferry.changed" "$work/flate.changed" | grep '^[<>]' | head -30 | sed 's/^/  !!!   /'
  fi

  timed_rounds fw lw run_ferry run_flate
  failed ferry; failed flate
  rss=$(/usr/bin/time -f %M "$ferry" diff --repo "$repo" --base main --head "$branch" --format text --color never \
    --cache-dir "$work/ferry-cache" 2>&1 > /dev/null | tail -1)
  git worktree add -q --detach "$work/base" main
  lrss=$(/usr/bin/time -f %M "$flate" diff all --path "$repo/kubernetes" --path-orig "$work/base/kubernetes" 2>&1 > /dev/null | tail -1)
  git worktree remove --force "$work/base"
  printf '  warm (one run before), medians over %d rounds:                      wall      CPU\n' "$rounds"
  printf '    ferry diff --base main --head %-12s                      %6.2f s %6.2f s\n' "$branch" "$fw" "$fw_cpu"
  printf '    git worktree add main + flate diff all --path-orig              %6.2f s %6.2f s\n' "$lw" "$lw_cpu"
  printf '    ratio ferry/flate: %s wall, %s CPU (target: at most 1)\n' "$(ratio "$fw" "$lw")" "$(ratio "$fw_cpu" "$lw_cpu")"
  printf '    peak RSS: ferry diff %d MiB (target: under 200 MiB), flate diff %d MiB\n' "$(mib "$rss")" "$(mib "$lrss")"

  timed_rounds fc lc run_ferry_cold run_flate_cold
  failed ferry; failed flate
  printf '  cold (empty caches at each run), medians over %d rounds:            wall      CPU\n' "$rounds"
  printf '    ferry diff, empty --cache-dir                                   %6.2f s %6.2f s\n' "$fc" "$fc_cpu"
  printf '    git worktree add main + flate diff all, empty cache             %6.2f s %6.2f s\n' "$lc" "$lc_cpu"
  printf '    ratio ferry/flate: %s wall, %s CPU\n' "$(ratio "$fc" "$lc")" "$(ratio "$fc_cpu" "$lc_cpu")"
done < "$work/gen/changes.tsv"

# The full render of main, charts included, caches warm on both sides.
git checkout -q main
render_ferry() { "$ferry" render --repo "$repo" --cache-dir "$work/ferry-cache" > "$work/ferry.yaml" 2> "$work/ferry.err" || echo $? > "$work/ferry.rc"; }
render_flate() { "$flate" build all --path "$repo/kubernetes" > "$work/flate.yaml" 2> "$work/flate.err" || echo $? > "$work/flate.rc"; }
# The objects of a render, "Kind namespace/name" (or "Kind name"), sorted.
objects() {
  awk '
    function flush() { if (kind != "") print kind, (ns == "" ? "" : ns "/") name; kind = ns = name = ""; meta = 0 }
    /^---/ { flush(); next }
    /^kind: / { kind = $2; next }
    /^metadata:/ { meta = 1; next }
    /^[^ #]/ { meta = 0 }
    meta && /^  name: / { name = $2 }
    meta && /^  namespace: / { ns = $2 }
    END { flush() }' "$1" | tr -d '"' | sort
}
render_ferry; failed ferry; render_flate; failed flate
objects "$work/ferry.yaml" > "$work/ferry.all"
objects "$work/flate.yaml" > "$work/flate.all"
grep -Ev '^(CustomResourceDefinition|Secret) ' "$work/ferry.all" > "$work/ferry.ids" || true
printf '\nfull render of main (every Kustomization, every chart)\n'
printf '  objects: ferry %d (%d without CRDs and Secrets), flate %d\n' \
  "$(wc -l < "$work/ferry.all")" "$(wc -l < "$work/ferry.ids")" "$(wc -l < "$work/flate.all")"
if ! cmp -s "$work/ferry.ids" "$work/flate.all"; then
  printf '  !!! MISMATCH: the tools render different objects (< ferry only, > flate only):\n'
  diff "$work/ferry.ids" "$work/flate.all" | grep '^[<>]' | head -30 | sed 's/^/  !!!   /'
fi
timed_rounds fr lr render_ferry render_flate
failed ferry; failed flate
rss=$(/usr/bin/time -f %M "$ferry" render --repo "$repo" --cache-dir "$work/ferry-cache" 2>&1 > /dev/null | tail -1)
lrss=$(/usr/bin/time -f %M "$flate" build all --path "$repo/kubernetes" 2>&1 > /dev/null | tail -1)
printf '  warm (one run before), medians over %d rounds:                      wall      CPU\n' "$rounds"
printf '    ferry render --cache-dir                                        %6.2f s %6.2f s\n' "$fr" "$fr_cpu"
printf '    flate build all                                                 %6.2f s %6.2f s\n' "$lr" "$lr_cpu"
printf '    ratio ferry/flate: %s wall, %s CPU\n' "$(ratio "$fr" "$lr")" "$(ratio "$fr_cpu" "$lr_cpu")"
printf '    peak RSS: ferry render %d MiB, flate build %d MiB\n' "$(mib "$rss")" "$(mib "$lrss")"
