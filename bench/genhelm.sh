#!/usr/bin/env bash
# Generates the Flux repository of the Helm benchmark (bench/helm.sh):
# one cluster, clusters/prod, whose root holds an OCI HelmRepository on
# REGISTRY (host:port, plain HTTP) and one Flux Kustomization per team;
# each team's folder holds its HelmReleases (helm.toolkit.fluxcd.io/v2)
# over the three charts of bench/charts (webapp 1.4.2, platform 2.1.0,
# operator 0.9.0), spread over two namespaces per team. Each release
# takes values from a ConfigMap made by kustomize's configMapGenerator
# from values/<release>.yaml (valuesFrom), then inline values.
#
# Besides the repository, DIR/releases.tsv lists what `helm template`
# needs for each release, one a line: name, namespace, chart, version,
# the values file and the inline values (written to inline/<release>.yaml,
# applied after it, in Flux's order).
#
# Usage: bench/genhelm.sh DIR REGISTRY [RELEASES]   (RELEASES: 50 by default)
set -euo pipefail
# shellcheck source=bench/fluxroot.sh
. "$(dirname "$0")/fluxroot.sh"
dir=$1; registry=$2; n=${3:-50}
rm -rf "$dir"; mkdir -p "$dir/repo/clusters/prod/flux-system" "$dir/inline"
repo=$dir/repo
teams=(shop payments search identity data)

flux_root "$repo" "$registry"
{
  echo "resources: [flux-system/gotk-sync.yaml, charts.yaml]"
} > "$repo/clusters/prod/kustomization.yaml"
for t in "${teams[@]}"; do
  echo "  - $t.yaml" >> "$dir/teams.list"
  flux_team "$repo" "$t"
  mkdir -p "$repo/apps/$t/values"
  cat > "$repo/apps/$t/namespaces.yaml" <<Y
apiVersion: v1
kind: Namespace
metadata: {name: $t}
---
apiVersion: v1
kind: Namespace
metadata: {name: $t-jobs}
Y
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespaces.yaml\n' > "$repo/apps/$t/kustomization.yaml"
done
{
  echo "resources:"
  echo "  - flux-system/gotk-sync.yaml"
  echo "  - charts.yaml"
  cat "$dir/teams.list"
} > "$repo/clusters/prod/kustomization.yaml"
rm "$dir/teams.list"

# values I: the values file (valuesFrom) and the inline values of release
# I, by chart; each release differs in what it turns on.
webapp_values() {
  local i=$1
  cat <<Y
replicaCount: $((1 + i % 4))
image:
  repository: registry.example.com/${t}/web-$i
  tag: "3.$((i % 7)).$((i % 3))"
config:
  LOG_LEVEL: $([ $((i % 3)) = 0 ] && echo debug || echo info)
  UPSTREAM: http://api.$t.svc:8080
  CACHE_TTL: "$((30 * (1 + i % 5)))s"
  REGION: eu-west-$((1 + i % 3))
ingress:
  enabled: $([ $((i % 2)) = 0 ] && echo true || echo false)
  annotations: {cert-manager.io/cluster-issuer: letsencrypt}
  hosts:
    - host: web-$i.$t.example.com
      paths: [{path: /, pathType: Prefix}, {path: /api, pathType: Prefix}]
  tls: [{secretName: web-$i-tls, hosts: [web-$i.$t.example.com]}]
service:
  extraPorts: [{name: metrics, port: 9090, targetPort: 9090}]
resources:
  requests: {cpu: $((50 + 10 * (i % 5)))m, memory: $((64 * (1 + i % 3)))Mi}
  limits: {memory: $((256 * (1 + i % 2)))Mi}
Y
}
webapp_inline() {
  local i=$1
  cat <<Y
autoscaling:
  enabled: $([ $((i % 3)) = 1 ] && echo true || echo false)
  maxReplicas: $((4 + i % 6))
  targetMemoryUtilizationPercentage: 80
podDisruptionBudget: {enabled: $([ $((i % 4)) -lt 2 ] && echo true || echo false)}
networkPolicy:
  enabled: true
  allowFrom: [ingress-nginx, monitoring]
env:
  FEATURE_CHECKOUT_V2: "$([ $((i % 2)) = 0 ] && echo on || echo off)"
  OTEL_SERVICE_NAME: web-$i
secretEnv:
  SESSION_KEY: not-a-secret-$i
podAnnotations: {team: $t}
Y
}
platform_values() {
  local i=$1
  cat <<Y
global:
  environment: production
  labels: {team: $t, cost-center: cc-$((100 + i))}
api:
  replicas: $((2 + i % 3))
  logLevel: $([ $((i % 2)) = 0 ] && echo info || echo warn)
  extraArgs: [--max-inflight=$((100 * (1 + i % 4))), --read-timeout=30s]
database:
  host: pg-$((i % 3)).databases.svc
  name: platform_$i
cache:
  enabled: $([ $((i % 3)) = 2 ] && echo false || echo true)
  persistence: {size: $((1 + i % 4))Gi}
Y
}
platform_inline() {
  local i=$1
  cat <<Y
features: {search: true, exports: $([ $((i % 2)) = 0 ] && echo true || echo false), audit: true}
worker:
  enabled: $([ $((i % 2)) = 1 ] && echo true || echo false)
  queues: [default, mail, reports]
  schedule: "*/$((5 + i % 10)) * * * *"
Y
}
operator_values() {
  local i=$1
  cat <<Y
image: {repository: registry.example.com/ops/operator-$i}
watchNamespaces: [$t, $t-jobs]
controllers:
  backup: {enabled: true, replicas: 1, concurrency: $((1 + i % 4))}
  cleanup: {enabled: $([ $((i % 2)) = 0 ] && echo true || echo false), replicas: 1, concurrency: 1}
  sync: {enabled: true, replicas: $((1 + i % 2)), concurrency: 8}
Y
}
operator_inline() {
  local i=$1
  cat <<Y
crds: {install: $([ "$i" = 8 ] && echo true || echo false)}
priorityClass: {create: $([ $((i % 3)) = 0 ] && echo true || echo false), value: $((100000 + i))}
webhook: {failurePolicy: $([ $((i % 2)) = 0 ] && echo Fail || echo Ignore)}
Y
}

charts=(webapp webapp webapp webapp webapp platform platform platform operator operator)
declare -A version=([webapp]=1.4.2 [platform]=2.1.0 [operator]=0.9.0)
: > "$dir/releases.tsv"
for ((i = 0; i < n; i++)); do
  t=${teams[i % ${#teams[@]}]}
  chart=${charts[i % 10]}
  ns=$t; [ $((i / 5 % 2)) = 1 ] && ns=$t-jobs
  name=$(printf '%s-%s-%02d' "$t" "$chart" "$i")
  vf=$repo/apps/$t/values/$name.yaml
  "${chart}_values" "$i" > "$vf"
  "${chart}_inline" "$i" > "$dir/inline/$name.yaml"
  {
    cat <<Y
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: $name
  namespace: $ns
spec:
  interval: 30m
  chart:
    spec:
      chart: $chart
      version: "${version[$chart]}"
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
  install: {remediation: {retries: 3}}
  valuesFrom:
    - kind: ConfigMap
      name: $name-values
  values:
Y
    sed 's/^/    /' "$dir/inline/$name.yaml"
  } > "$repo/apps/$t/$name.yaml"
  echo "  - $name.yaml" >> "$repo/apps/$t/kustomization.yaml"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$ns" "$chart" "${version[$chart]}" "$vf" "$dir/inline/$name.yaml" >> "$dir/releases.tsv"
done
# The values ConfigMaps, by kustomize's configMapGenerator (no hash
# suffix: the HelmReleases name them).
for t in "${teams[@]}"; do
  k=$repo/apps/$t/kustomization.yaml
  echo "generatorOptions: {disableNameSuffixHash: true}" >> "$k"
  echo "configMapGenerator:" >> "$k"
  while IFS=$'\t' read -r name ns _ _ vf _; do
    [ "$(dirname "$vf")" = "$repo/apps/$t/values" ] || continue
    printf '  - name: %s-values\n    namespace: %s\n    files: [values.yaml=values/%s.yaml]\n' "$name" "$ns" "$name" >> "$k"
  done < "$dir/releases.tsv"
done
