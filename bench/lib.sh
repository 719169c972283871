# What the benchmark scripts (render.sh, diff.sh, discover.sh, hostile.sh)
# share; each sources it after `set -euo pipefail`. It moves to the module
# root and sets rounds (the script's first argument, 3 by default), ferry
# and kustomize (bin/ferry and .cache/testbin/kustomize) and work (a
# temporary folder removed on exit). Then the helpers: need_gnu_time, now,
# elapsed, median and alternate.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-3}
ferry=$PWD/bin/ferry
kustomize=$PWD/.cache/testbin/kustomize
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# need_gnu_time installs GNU time (for peak RSS) when it is missing.
need_gnu_time() {
  [ -x /usr/bin/time ] && return
  echo "bench/$(basename "$0"): installing GNU time (for peak RSS)" >&2
  apt-get install -y --no-install-recommends time >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends time >/dev/null; }
}

# now (seconds since the epoch), elapsed A B (B - A, 3 decimals), median
# (of the numbers on stdin).
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", b - a}'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# alternate VAR_A VAR_B CMD_A CMD_B [ARG...] runs CMD_A and CMD_B (each
# with the ARGs) in turn, rounds times, and sets VAR_A and VAR_B to the
# medians of their wall times in seconds.
alternate() {
  local _va=$1 _vb=$2 _ca=$3 _cb=$4 _i _t0 _t1 _t2
  shift 4
  : > "$work/a.times"; : > "$work/b.times"
  for ((_i = 0; _i < rounds; _i++)); do
    _t0=$(now); "$_ca" "$@"; _t1=$(now); "$_cb" "$@"; _t2=$(now)
    elapsed "$_t0" "$_t1" >> "$work/a.times"
    elapsed "$_t1" "$_t2" >> "$work/b.times"
  done
  printf -v "$_va" '%s' "$(median < "$work/a.times")"
  printf -v "$_vb" '%s' "$(median < "$work/b.times")"
}
