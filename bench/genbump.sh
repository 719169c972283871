#!/usr/bin/env bash
# Generates what the chart bump benchmark (bench/bump.sh) needs, under DIR:
#
#   charts/chart-00 ... chart-09  ten small charts (a Deployment, a Service
#       and a ConfigMap from values: replicas, image, port, config), their
#       Chart.yaml at version 0.0.0; bench/bump.sh packages each at every
#       version of tags.tsv. What a version renders depends on it: the
#       image tag is the appVersion, every object carries the chart's
#       version in its labels, and from 1.5.0 on the container has a
#       readiness probe, from 1.8.0 on a second port.
#   tags.tsv  chart and version, one a line, in push order (shuffled): per
#       chart 100 tags, the 98 versions 1.M.P (M 0-10, P 0-8; chart-00,
#       -02, ... without 1.10.8, chart-01, -03, ... without 1.10.0), a
#       pre-release 1.99.0-rc.1 and 2.0.0, so that the newest version in
#       major 1 is 1.10.7 or 1.10.8 and neither the last one pushed, the
#       largest, nor the first in a plain (not version) sort.
#   repo  a Flux repository as bench/genhelm.sh lays it out, committed once
#       (git init, one commit on main): one cluster, clusters/prod, whose
#       root holds an OCI HelmRepository `charts` on REGISTRY (plain HTTP:
#       spec.insecure) and one Flux Kustomization per team; each team's
#       folder (apps/<team>) holds a Namespace and ten HelmReleases, one per
#       chart, with inline values of their own. 50 releases in 5
#       namespaces, 5 per chart, pinned at 1.0.0, 1.2.3, 1.4.8, 1.7.0 or
#       1.9.5 (one of each per chart).
#   releases.tsv  per release, one a line: name, namespace, chart, pinned
#       version, and the release's values file (values/<name>.yaml, the
#       same as its inline values), for `helm template -f`.
#
# Usage: bench/genbump.sh DIR REGISTRY   (REGISTRY: host:port)
set -euo pipefail
# shellcheck source=bench/fluxroot.sh
. "$(dirname "$0")/fluxroot.sh"
dir=$1; registry=$2
rm -rf "$dir"; mkdir -p "$dir/charts" "$dir/values" "$dir/repo/clusters/prod/flux-system"
teams=(shop payments search identity data)
pinned=(1.0.0 1.2.3 1.4.8 1.7.0 1.9.5)

# The charts. The templates are the same for each; names, ports and
# defaults differ.
for ((k = 0; k < 10; k++)); do
  c=$(printf 'chart-%02d' "$k")
  d=$dir/charts/$c
  mkdir -p "$d/templates"
  cat > "$d/Chart.yaml" <<Y
apiVersion: v2
name: $c
description: ferry bump benchmark chart $k
type: application
version: 0.0.0
appVersion: "0.0.0"
Y
  cat > "$d/values.yaml" <<Y
replicaCount: 1
image:
  repository: registry.example.com/bench/$c
  tag: ""
service:
  port: $((8080 + k))
config:
  COMPONENT: $c
resources: {}
Y
  cat > "$d/templates/_helpers.tpl" <<'Y'
{{- define "bench.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "bench.labels" -}}
{{ include "bench.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}
Y
  cat > "$d/templates/deployment.yaml" <<'Y'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "bench.selector" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "bench.labels" . | nindent 8 }}
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          ports:
            - {name: http, containerPort: {{ .Values.service.port }}}
            {{- if semverCompare ">=1.8.0" .Chart.Version }}
            - {name: metrics, containerPort: 9090}
            {{- end }}
          envFrom:
            - configMapRef: {name: {{ .Release.Name }}}
          {{- if semverCompare ">=1.5.0" .Chart.Version }}
          readinessProbe:
            httpGet: {path: /ready, port: http}
            periodSeconds: 10
          {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
Y
  cat > "$d/templates/service.yaml" <<'Y'
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  selector:
    {{- include "bench.selector" . | nindent 4 }}
  ports:
    - {name: http, port: 80, targetPort: http}
Y
  cat > "$d/templates/configmap.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
data:
  CHART_VERSION: {{ .Chart.Version | quote }}
  {{- range $k, $v := .Values.config }}
  {{ $k }}: {{ $v | quote }}
  {{- end }}
Y
done

# The tags, shuffled (reproducibly) into the order they are pushed in.
for ((k = 0; k < 10; k++)); do
  c=$(printf 'chart-%02d' "$k")
  drop=1.10.8; [ $((k % 2)) = 1 ] && drop=1.10.0
  for ((m = 0; m <= 10; m++)); do
    for ((p = 0; p <= 8; p++)); do
      [ "1.$m.$p" = "$drop" ] || printf '%s\t1.%d.%d\n' "$c" "$m" "$p"
    done
  done
  printf '%s\t1.99.0-rc.1\n%s\t2.0.0\n' "$c" "$c"
done | shuf --random-source=<(yes) > "$dir/tags.tsv"

# The repository.
repo=$dir/repo
flux_root "$repo" "$registry"
{
  echo "resources:"
  echo "  - flux-system/gotk-sync.yaml"
  echo "  - charts.yaml"
  printf '  - %s.yaml\n' "${teams[@]}"
} > "$repo/clusters/prod/kustomization.yaml"
for t in "${teams[@]}"; do
  flux_team "$repo" "$t"
  mkdir -p "$repo/apps/$t"
  printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$t" > "$repo/apps/$t/namespace.yaml"
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n' > "$repo/apps/$t/kustomization.yaml"
done

# The releases: release i is chart i % 10 in team i / 10, pinned at the
# team's version; its inline values differ from every other release's.
: > "$dir/releases.tsv"
for ((i = 0; i < 50; i++)); do
  k=$((i % 10)); j=$((i / 10)); t=${teams[j]}
  c=$(printf 'chart-%02d' "$k")
  name=$t-$c
  vf=$dir/values/$name.yaml
  cat > "$vf" <<Y
replicaCount: $((1 + i % 4))
config:
  LOG_LEVEL: $([ $((i % 3)) = 0 ] && echo debug || echo info)
  UPSTREAM: http://api.$t.svc:8080
  CACHE_TTL: "$((30 * (1 + i % 5)))s"
  RELEASE: $name
resources:
  requests: {cpu: $((50 + 10 * (i % 5)))m, memory: $((64 * (1 + i % 3)))Mi}
  limits: {memory: $((256 * (1 + i % 2)))Mi}
Y
  {
    cat <<Y
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: $name
  namespace: $t
spec:
  interval: 30m
  chart:
    spec:
      chart: $c
      version: "${pinned[j]}"
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
  install: {remediation: {retries: 3}}
  values:
Y
    sed 's/^/    /' "$vf"
  } > "$repo/apps/$t/$name.yaml"
  echo "  - $name.yaml" >> "$repo/apps/$t/kustomization.yaml"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$t" "$c" "${pinned[j]}" "$vf" >> "$dir/releases.tsv"
done

# One commit, the one ferry bump's diff starts from.
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@example.com -c commit.gpgsign=false \
  commit -q -m "fleet of 50 HelmReleases over 10 charts"
