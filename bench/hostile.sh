#!/usr/bin/env bash
# Hostile-input benchmark: what inputs built to exhaust the runner cost
# ferry, against the kustomize v5 CLI on the same input, side by side in one
# run: a YAML alias bomb (10^9 scalars once expanded) and a 200 MB resource
# file, each as `ferry render` and `kustomize build` of the same folder, with
# wall time, exit status and peak RSS. kustomize runs under a 4 GiB address
# limit and a 20 s timeout so the bomb cannot take the machine. Then SIGTERM
# during a render of a large repository: how long ferry takes to exit, and
# with which status. Then the budgets of issue 26: runaway charts (a
# template loop, a 320 MB amplification, a doubling string, a tpl
# recursion), a chart archive of a million entries and JSON patches that
# double an object, each through ferry render with the default limits
# (wall time, exit status, peak RSS: ferry's or its chart render
# process's, whichever is larger); and the time from SIGTERM or SIGINT to
# exit during a chart's template loop and a stalled chart download.
# Numbers, not a test: nothing here asserts (the corpus in
# cmd/ferry/hostile_test.go asserts exit 2 and the 1 GiB bound).
#
# Targets (issue 12): each exhausting input fails with exit 2 within 10 s
# under 1 GiB of peak RSS; SIGTERM exits 2 within 2 s.
#
# Usage: bench/hostile.sh   (needs bin/ferry and .cache/testbin/kustomize:
#                            `make bench-hostile` builds both)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
need_gnu_time

# measure LABEL CMD...: prints wall seconds, exit status and peak RSS.
measure() {
  local label=$1; shift
  local status=0
  /usr/bin/time -o "$work/time" -f '%e %M' "$@" > /dev/null 2> "$work/stderr" || status=$?
  read -r wall rss < <(tail -1 "$work/time")
  printf '    %-34s %6.2f s  exit %-3s  peak RSS %5d MiB\n' "$label" "$wall" "$status" "$((rss / 1024))"
}

# kustomize with the machine protected: 4 GiB of address space, 20 s.
bounded_kustomize=(bash -c 'ulimit -v $((4 << 20)); exec timeout 20 "$0" build "$1"' "$kustomize")

bomb() {
  local prev line
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  x: y\nz:\n  '
  echo 'x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]'
  for i in 1 2 3 4 5 6 7 8; do
    prev="*a$((i - 1))"
    line="$prev"; for _ in 2 3 4 5 6 7 8 9 10; do line="$line, $prev"; done
    echo "  x$i: &a$i [$line]"
  done
}

mkrepo() {
  local repo=$work/$1
  mkdir -p "$repo/app"
  printf 'targets:\n  - name: app\n    path: app\n' > "$repo/ferry.yaml"
  printf 'resources: [%s]\n' "$2" > "$repo/app/kustomization.yaml"
  echo "$repo"
}

echo "hostile-input benchmark: ferry against kustomize build on inputs built to exhaust the runner"

repo=$(mkrepo bomb bomb.yaml)
bomb > "$repo/app/bomb.yaml"
echo "  YAML alias bomb (app/bomb.yaml, $(wc -c < "$repo/app/bomb.yaml") bytes, 10^9 scalars expanded)"
measure "ferry render" "$ferry" render --repo "$repo"
measure "kustomize build (4 GiB, 20 s cap)" "${bounded_kustomize[@]}" "$repo/app"

repo=$(mkrepo big big.yaml)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  k: ' > "$repo/app/big.yaml"
head -c $((200 << 20)) /dev/zero | tr '\0' 'a' >> "$repo/app/big.yaml"
echo "  200 MB resource (app/big.yaml)"
measure "ferry render" "$ferry" render --repo "$repo"
measure "kustomize build (4 GiB, 20 s cap)" "${bounded_kustomize[@]}" "$repo/app"

# SIGTERM half a second into a render of 40 targets x 400 kustomizations.
repo=$work/large
bench/genrepo.sh "$repo" 20 400 > /dev/null
echo "  SIGTERM 0.5 s into ferry render of $(ls "$repo/apps/overlays" | wc -l) overlays"
for round in 1 2 3; do
  "$ferry" render --repo "$repo" > /dev/null 2> "$work/stderr" &
  pid=$!
  sleep 0.5
  t0=$(date +%s.%N)
  kill -TERM "$pid" 2>/dev/null || true
  status=0; wait "$pid" || status=$?
  t1=$(date +%s.%N)
  printf '    round %d: exited %s after the signal, exit %s (%s)\n' "$round" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f s", b - a}')" "$status" "$(tail -1 "$work/stderr" | cut -c1-60)"
done

# Budgets (issue 26): charts, patches and archives built to run away, each
# through ferry render with the default limits, and SIGTERM/SIGINT during a
# chart's template loop and a stalled chart download.

# helmrepo NAME: a repository whose app renders the HelmRelease apps/NAME
# of the chart folder charts/NAME (its files written by the caller).
helmrepo() {
  local repo=$work/helm-$1
  mkdir -p "$repo/app" "$repo/charts/$1/templates"
  printf 'targets:\n  - name: app\n    path: app\n' > "$repo/ferry.yaml"
  printf 'resources: [release.yaml]\n' > "$repo/app/kustomization.yaml"
  cat > "$repo/app/release.yaml" <<YAML
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: $1, namespace: apps}
spec:
  chart:
    spec:
      chart: ./charts/$1
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
YAML
  printf 'apiVersion: v2\nname: %s\nversion: 0.1.0\n' "$1" > "$repo/charts/$1/Chart.yaml"
  echo "$repo"
}

# copies N: a JSON patch that adds a field and copies it into itself N
# times, doubling it each time.
copies() {
  echo "- {op: add, path: /data/d, value: {x: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy}}"
  for ((i = 0; i < $1; i++)); do echo "- {op: copy, from: /data/d, path: /data/d/c$i}"; done
}

echo "  budgets, default limits (renderTime 20s, renderMemory 512Mi, templateStack 16Mi, chartFiles 10000, patchCopySize 8Mi):"
repo=$(helmrepo loop)
echo '{{- range 1000000000000 }}{{ end }}' > "$repo/charts/loop/templates/loop.yaml"
measure "template loop (10^12 times)" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

repo=$(helmrepo amplify)
printf 'word: %s\n' "$(head -c 32 /dev/zero | tr '\0' x)" > "$repo/charts/amplify/values.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: amplify}\ndata:\n  big: "{{ range 10000000 }}{{ $.Values.word }}{{ end }}"\n' > "$repo/charts/amplify/templates/amplify.yaml"
measure "template amplifies to 320 MB" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

repo=$(helmrepo double)
echo '{{- $s := "xxxxxxxxxxxxxxxx" }}{{ range 40 }}{{ $s = print $s $s }}{{ end }}{{ $s }}' > "$repo/charts/double/templates/double.yaml"
measure "template doubles a string 40 times" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

repo=$(helmrepo recurse)
echo "again: '{{ tpl .Values.again . }}'" > "$repo/charts/recurse/values.yaml"
echo '{{ tpl .Values.again . }}' > "$repo/charts/recurse/templates/recurse.yaml"
measure "tpl recursion" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

repo=$(helmrepo many)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many}\ndata: {a: b}\n' > "$repo/charts/many/templates/cm.yaml"
mkdir -p "$repo/charts/many/charts"
python3 - "$repo/charts/many/charts/bomb.tgz" <<'PY'
import gzip, io, sys, tarfile
with gzip.open(sys.argv[1], "wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
    meta = b"apiVersion: v2\nname: bomb\nversion: 0.1.0\n"
    info = tarfile.TarInfo("bomb/Chart.yaml"); info.size = len(meta)
    tar.addfile(info, io.BytesIO(meta))
    for i in range(1_000_000):
        tar.addfile(tarfile.TarInfo("bomb/files/%07d" % i))
PY
measure "chart archive of 10^6 entries ($(($(wc -c < "$repo/charts/many/charts/bomb.tgz") >> 20)) MiB)" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

repo=$(helmrepo post)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: post}\ndata: {a: b}\n' > "$repo/charts/post/templates/cm.yaml"
{ printf '  postRenderers:\n    - kustomize:\n        patches:\n          - target: {kind: ConfigMap}\n            patch: |\n'; copies 40 | sed 's/^/              /'; } >> "$repo/app/release.yaml"
measure "post-renderer patch, 40 doubling copies" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

repo=$(mkrepo patch cm.yaml)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: grow}\ndata: {a: b}\n' > "$repo/app/cm.yaml"
printf 'patches:\n  - target: {kind: ConfigMap}\n    path: grow.yaml\n' >> "$repo/app/kustomization.yaml"
copies 40 > "$repo/app/grow.yaml"
measure "kustomization patch, 40 doubling copies" "$ferry" render --repo "$repo"
tail -1 "$work/stderr" | cut -c1-160 | sed 's/^/      /'

# signal_exit LABEL SIG READY_FILE CMD...: starts CMD, waits until
# READY_FILE exists (or 2 s), sends SIG and prints how long the exit took.
signal_exit() {
  local label=$1 sig=$2 ready=$3; shift 3
  "$@" > /dev/null 2> "$work/stderr" &
  local pid=$! i
  for ((i = 0; i < 200; i++)); do [ -e "$ready" ] && break; sleep 0.01; done
  sleep 0.5
  local t0 t1 status=0
  t0=$(now)
  kill -"$sig" "$pid" 2>/dev/null || true
  wait "$pid" || status=$?
  t1=$(now)
  printf '    %-34s exited %s s after SIG%s, exit %s (%s)\n' "$label" "$(elapsed "$t0" "$t1")" "$sig" "$status" "$(tail -1 "$work/stderr" | cut -c1-50)"
}

repo=$work/helm-loop
echo "  SIGTERM/SIGINT half a second into a chart's template loop, and into a chart download that stalls"
for sig in TERM INT; do
  signal_exit "template loop" "$sig" /dev/null "$ferry" render --repo "$repo"
done
if command -v python3 > /dev/null; then
  stalled=$work/stalled
  port_file=$work/port
  python3 - "$port_file" "$stalled" <<'PY' &
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path == "/index.yaml":
            body = b"apiVersion: v1\nentries:\n  slow:\n    - {name: slow, version: 0.1.0, urls: [slow-0.1.0.tgz]}\n"
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        else:
            self.send_response(200); self.send_header("Content-Length", "100000"); self.end_headers(); self.wfile.write(b"\x1f\x8b" + b"\0" * 1000); self.wfile.flush()
            open(sys.argv[2], "w").close()
            time.sleep(3600)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
  server=$!
  for ((i = 0; i < 100; i++)); do [ -s "$port_file" ] && break; sleep 0.05; done
  repo=$(mkrepo fetch release.yaml)
  printf 'apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: apps}\nspec: {url: "http://127.0.0.1:%s"}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: slow, namespace: apps}\nspec:\n  chart:\n    spec: {chart: slow, version: 0.1.0, sourceRef: {kind: HelmRepository, name: charts}}\n' "$(cat "$port_file")" > "$repo/app/release.yaml"
  for sig in TERM INT; do
    rm -f "$stalled"
    signal_exit "stalled chart download" "$sig" "$stalled" "$ferry" render --repo "$repo" --cache-dir "$work/cache"
  done
  kill "$server" 2>/dev/null || true
  echo "    chart cache after the stops: $(find "$work/cache" -path '*charts*' -type f 2>/dev/null | wc -l) archives, $(find "$work/cache" -name '.tmp-*' 2>/dev/null | wc -l) temp files"
fi
echo "  targets: exit 2 within 10 s under 1 GiB for each input (the budgets within twice renderTime); SIGTERM exits 2 within 2 s"
