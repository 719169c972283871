#!/usr/bin/env bash
# Generates a GitOps repository for the render benchmark: NB bases and NO
# overlays (overlay i builds base i % NB), ferry.yaml listing every overlay.
# Usage: bench/genrepo.sh DIR [NB] [NO]
set -euo pipefail
dir=$1; nb=${2:-20}; no=${3:-100}
rm -rf "$dir"; mkdir -p "$dir"
for ((b = 0; b < nb; b++)); do
  d="$dir/apps/base/app$b"; mkdir -p "$d"
  cat > "$d/kustomization.yaml" <<Y
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
labels:
  - pairs: {app.kubernetes.io/name: app$b}
    includeSelectors: true
resources: [deployment.yaml, service.yaml, rbac.yaml, config.yaml]
configMapGenerator:
  - name: app$b-settings
    literals: [LOG_LEVEL=info, FEATURE_X=off]
Y
  cat > "$d/deployment.yaml" <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: app$b}
spec:
  replicas: 1
  template:
    spec:
      serviceAccountName: app$b
      containers:
        - name: app
          image: registry.example.com/app$b:1.0.0
          envFrom: [{configMapRef: {name: app$b-settings}}]
          resources: {requests: {cpu: 10m, memory: 16Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: app$b}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: app$b}
  minReplicas: 1
  maxReplicas: 3
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: app$b}
spec: {minAvailable: 1}
Y
  cat > "$d/service.yaml" <<Y
apiVersion: v1
kind: Service
metadata: {name: app$b}
spec:
  ports: [{name: http, port: 80, targetPort: 8080}]
Y
  cat > "$d/rbac.yaml" <<Y
apiVersion: v1
kind: ServiceAccount
metadata: {name: app$b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: app$b}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: app$b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: app$b}
subjects: [{kind: ServiceAccount, name: app$b}]
Y
  : > "$d/config.yaml"
  for ((c = 0; c < 10; c++)); do
    cat >> "$d/config.yaml" <<Y
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app$b-cfg$c}
data: {key: "value $c of app $b"}
Y
  done
done
echo "targets:" > "$dir/ferry.yaml"
for ((o = 0; o < no; o++)); do
  b=$((o % nb)); d="$dir/apps/overlays/env$o"; mkdir -p "$d"
  cat > "$d/kustomization.yaml" <<Y
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: env$o
resources: [namespace.yaml, ../../base/app$b]
images:
  - name: registry.example.com/app$b
    newTag: 1.$o.0
patches:
  - path: replicas.yaml
  - target: {kind: Service}
    patch: |-
      - op: add
        path: /metadata/annotations
        value: {overlay: env$o}
configMapGenerator:
  - name: app$b-settings
    behavior: merge
    literals: [ENVIRONMENT=env$o]
Y
  cat > "$d/namespace.yaml" <<Y
apiVersion: v1
kind: Namespace
metadata: {name: env$o}
Y
  cat > "$d/replicas.yaml" <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: app$b}
spec: {replicas: $((o % 3 + 1))}
Y
  printf '  - name: env%d\n    path: apps/overlays/env%d\n' "$o" "$o" >> "$dir/ferry.yaml"
done
