# shellcheck shell=bash
# flux_root REPO REGISTRY writes the root of the cluster clusters/prod
# that the generated benchmark repositories share (bench/genhelm.sh,
# bench/genbump.sh): the flux-system GitRepository and Kustomization, as
# `flux bootstrap` writes them, and clusters/prod/charts.yaml, the OCI
# HelmRepository "charts" on REGISTRY (host:port, plain HTTP). The
# caller writes clusters/prod/kustomization.yaml. flux_team REPO TEAM
# writes clusters/prod/TEAM.yaml, the Flux Kustomization of ./apps/TEAM.
# Sourced, not run.
flux_root() {
  local repo=$1 registry=$2
  mkdir -p "$repo/clusters/prod/flux-system"
  cat > "$repo/clusters/prod/flux-system/gotk-sync.yaml" <<Y
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 1m
  url: https://git.example.com/fleet.git
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 10m
  path: ./clusters/prod
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
Y
  cat > "$repo/clusters/prod/charts.yaml" <<Y
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec:
  type: oci
  interval: 1h
  url: oci://$registry/charts
  insecure: true
Y
}
flux_team() {
  cat > "$1/clusters/prod/$2.yaml" <<Y
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: $2, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/$2
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
Y
}
