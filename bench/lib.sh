# What the benchmark scripts (render.sh, diff.sh, discover.sh, hostile.sh,
# helm.sh, prdiff.sh) share; each sources it after `set -euo pipefail`. It
# moves to the module root and sets rounds (the script's first argument, 3
# by default), ferry and kustomize (bin/ferry and .cache/testbin/kustomize)
# and work (a temporary folder removed on exit). Then the helpers:
# need_gnu_time, now, elapsed, median, alternate, children_cpu and
# timed_rounds.
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

# children_cpu VAR: sets VAR to the CPU seconds (user + sys) of this
# shell's finished children so far, from the times builtin (in this
# shell: a command substitution would see its own, none).
children_cpu() {
  times > "$work/times.out"
  printf -v "$1" '%s' "$(awk 'NR == 2 {
    t = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
    printf "%.3f\n", t }' "$work/times.out")"
}
# timed_rounds VAR_A VAR_B CMD_A CMD_B: runs CMD_A and CMD_B in turn,
# rounds times, and sets VAR_A and VAR_B to the medians of their wall
# times and VAR_A_cpu and VAR_B_cpu to the medians of their CPU times.
timed_rounds() {
  local _va=$1 _vb=$2 _ca=$3 _cb=$4 _i _c _t0 _c0 _t1 _c1 _v
  : > "$work/a.wall"; : > "$work/a.cpu"; : > "$work/b.wall"; : > "$work/b.cpu"
  for ((_i = 0; _i < rounds; _i++)); do
    for _c in a b; do
      _v=_c$_c
      _t0=$(now); children_cpu _c0
      "${!_v}"
      _t1=$(now); children_cpu _c1
      elapsed "$_t0" "$_t1" >> "$work/$_c.wall"
      elapsed "$_c0" "$_c1" >> "$work/$_c.cpu"
    done
  done
  printf -v "$_va" '%s' "$(median < "$work/a.wall")"; printf -v "${_va}_cpu" '%s' "$(median < "$work/a.cpu")"
  printf -v "$_vb" '%s' "$(median < "$work/b.wall")"; printf -v "${_vb}_cpu" '%s' "$(median < "$work/b.cpu")"
}

# The chart registry of the benchmarks that render charts (helm.sh,
# prdiff.sh): Debian's docker-registry ($registry_bin) on a free port of
# 127.0.0.1 with its own configuration under $work/registry, stopped
# (only this process) by stop_registry. start_registry sets registry to
# its host:port; `start_registry tls` serves HTTPS with a certificate made
# for it, which every Go program started afterwards trusts through
# SSL_CERT_FILE.
registry_pid=""
stop_registry() {
  [ -n "$registry_pid" ] || return 0
  kill "$registry_pid" 2>/dev/null || true
  wait "$registry_pid" 2>/dev/null || true
  registry_pid=""
}
start_registry() {
  local port try i scheme=http tls="" curl_ca=()
  mkdir -p "$work/registry"
  if [ "${1:-}" = tls ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
      -keyout "$work/registry/tls.key" -out "$work/registry/tls.crt" 2>/dev/null
    export SSL_CERT_FILE=$work/registry/tls.crt
    scheme=https tls="tls: {certificate: $work/registry/tls.crt, key: $work/registry/tls.key}" curl_ca=(--cacert "$SSL_CERT_FILE")
  fi
  for try in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue # taken
    cat > "$work/registry/config.yml" <<Y
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $work/registry/data}
  maintenance: {uploadpurging: {enabled: false}}
http:
  addr: "127.0.0.1:$port"
  secret: ferry-bench-$(basename "$0" .sh)
  $tls
Y
    "$registry_bin" serve "$work/registry/config.yml" > "$work/registry/log" 2>&1 &
    registry_pid=$!
    for ((i = 0; i < 200; i++)); do
      kill -0 "$registry_pid" 2>/dev/null || break
      if [ "$(curl -s "${curl_ca[@]}" -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/v2/")" = 200 ]; then
        registry=127.0.0.1:$port
        return 0
      fi
      sleep 0.05
    done
    stop_registry
  done
  echo "bench/$(basename "$0"): docker-registry did not start: $(cat "$work/registry/log")" >&2
  exit 1
}

# The chart objects of a render, "Kind namespace/name", sorted: those
# labelled app.kubernetes.io/managed-by: Helm.
chart_objects() {
  awk '
    function flush() { if (kind != "" && helm) print kind, ns "/" name; kind = ns = name = ""; helm = meta = 0 }
    /^---/ { flush(); next }
    /^kind: / { kind = $2; next }
    /^metadata:/ { meta = 1; next }
    /^[^ #]/ { meta = 0 }
    meta && /^  name: / { name = $2 }
    meta && /^  namespace: / { ns = $2 }
    meta && /^    app\.kubernetes\.io\/managed-by: "?Helm"?$/ { helm = 1 }
    END { flush() }' "$1" | sort
}
