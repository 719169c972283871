#!/usr/bin/env bash
# Generates the Flux fleet of the pull-request diff benchmark
# (bench/prdiff.sh), shaped like the "home-operations" repositories
# (onedr0p/home-ops and its kin), as a Git repository in DIR/repo:
#
#   kubernetes/apps/<ns>/kustomization.yaml       namespace: <ns>, the common
#                                                 component, each app's ks.yaml
#   kubernetes/apps/<ns>/<app>/ks.yaml            a Flux Kustomization named
#                                                 <app>: path ./kubernetes/apps/
#                                                 <ns>/<app>/app, targetNamespace
#                                                 <ns>, substitute APP=<app>,
#                                                 maybe dependsOn and components
#   kubernetes/apps/<ns>/<app>/app/               kustomization.yaml with a
#                                                 helmrelease.yaml and its
#                                                 ocirepository.yaml (or plain
#                                                 manifests), some values from a
#                                                 configMapGenerator
#   kubernetes/components/common/                 Namespace "_" (renamed by the
#                                                 namespace transformer), the
#                                                 cluster-settings ConfigMap and
#                                                 the charts' OCI HelmRepository
#   kubernetes/components/volsync/                PVC, ReplicationSource and a
#                                                 ConfigMap named from ${APP};
#                                                 used by exactly 15 apps
#   kubernetes/flux/cluster/ks.yaml               cluster-apps: path
#                                                 ./kubernetes/apps, its patches
#                                                 give every child Kustomization
#                                                 substituteFrom cluster-settings,
#                                                 prune, interval, timeout and
#                                                 HelmRelease defaults
#
# No kustomization.yaml in kubernetes/apps or kubernetes/flux/cluster: Flux
# generates one, as in those repositories. The cluster root is declared
# as home-ops do: the flux-instance HelmRelease (chart flux-instance, a
# stand-in of the Flux Operator's, on the local registry) whose
# values.instance.sync.path is kubernetes/flux/cluster.
#
# 80 apps in 12 namespaces: 71 HelmReleases (helm.toolkit.fluxcd.io/v2)
# over bench/charts (app-template 4.2.0, webapp 1.4.2, platform 2.1.0,
# operator 0.9.0, flux-instance 0.33.0) pushed to REGISTRY (host:port;
# every source says insecure: true): 61 through chartRef to an
# OCIRepository in their own folder, 10 through chart.spec and the OCI
# HelmRepository; 5 take values from a generated ConfigMap too
# (valuesFrom, with a kustomizeconfig.yaml naming the hashed ConfigMap in
# the HelmRelease); 9 apps are plain manifests. Only cert-manager's
# release installs CRDs; no Secrets (ExternalSecrets stand in), no SOPS.
#
# Then three branches from main, one commit of a one-line change each,
# listed in DIR/changes.tsv (branch, file, what changed):
#   pr-value      one HelmRelease value (media/radarr's LOG_LEVEL)
#   pr-manifest   one plain manifest (default/echo-server's image tag)
#   pr-component  one line of the volsync component (its ConfigMap's
#                 RESTIC_COMPRESSION), which 15 apps render
#
# Usage: bench/genprfleet.sh DIR REGISTRY
set -euo pipefail
dir=$1; registry=$2
rm -rf "$dir"; mkdir -p "$dir/repo/kubernetes"
repo=$dir/repo
k=$repo/kubernetes

# The apps, one a line: namespace, name, chart (app-template, webapp,
# platform, operator, flux-instance, or plain) and flags, comma-separated:
# v (the volsync component), f (values from a generated ConfigMap),
# h (chart.spec through the HelmRepository instead of an OCIRepository),
# s (a StatefulSet), d=<ns>/<name> (dependsOn; repeatable).
apps=$(cat <<'A'
flux-system flux-instance flux-instance -
cert-manager cert-manager operator h
cert-manager trust-manager operator d=cert-manager/cert-manager
kube-system reloader webapp h
kube-system metrics-server webapp -
kube-system coredns plain -
kube-system descheduler app-template h
kube-system spegel app-template -
kube-system intel-device-plugin operator -
networking envoy-gateway operator d=cert-manager/cert-manager
networking external-dns app-template f
networking cloudflared app-template -
networking echo app-template -
networking k8s-gateway plain -
networking cloudflare-ddns plain -
observability kube-prometheus-stack platform f
observability grafana webapp f,d=observability/kube-prometheus-stack
observability gatus app-template -
observability loki platform -
observability unpoller app-template -
observability blackbox-exporter app-template h
observability smartctl-exporter plain -
observability keda operator h
observability vector app-template -
observability silence-operator operator -
observability alertmanager-discord app-template -
database cloudnative-pg operator -
database dragonfly operator h
database pgadmin app-template v,d=database/cloudnative-pg
database redis webapp -
database emqx platform -
database postgres-cluster plain d=database/cloudnative-pg
default atuin app-template v,d=database/postgres-cluster
default homepage app-template f
default it-tools plain -
default miniflux app-template d=database/postgres-cluster
default paperless app-template v,d=database/postgres-cluster,d=database/dragonfly
default searxng app-template -
default shlink app-template -
default vaultwarden app-template v
default actual app-template v
default linkding app-template v
default echo-server plain -
default mealie app-template v
default immich platform d=database/postgres-cluster
default wallos app-template -
default stirling-pdf app-template -
media radarr app-template v
media sonarr app-template v
media prowlarr app-template -
media bazarr app-template v
media plex app-template v,s
media jellyseerr app-template v
media sabnzbd app-template -
media qbittorrent app-template v
media tautulli app-template -
media recyclarr app-template -
media maintainerr app-template -
media autobrr app-template -
media filebrowser app-template -
home-automation home-assistant app-template v,s
home-automation zigbee2mqtt app-template v,d=home-automation/mosquitto
home-automation mosquitto app-template -
home-automation node-red app-template -
home-automation esphome app-template -
home-automation frigate platform -
home-automation music-assistant app-template -
security pocket-id app-template -
security lldap app-template -
security external-secrets operator h
security kyverno operator -
security onepassword webapp -
storage rook-ceph operator -
storage rook-ceph-cluster platform d=storage/rook-ceph
storage volsync operator h,d=storage/snapshot-controller
storage snapshot-controller webapp h
storage minio webapp f
storage openebs plain -
actions-runner-system actions-runner-controller operator h
actions-runner-system runners plain d=actions-runner-system/actions-runner-controller
A
)
declare -A version=([app-template]=4.2.0 [webapp]=1.4.2 [platform]=2.1.0 [operator]=0.9.0 [flux-instance]=0.33.0)

# The cluster root: cluster-apps, whose patches reach every child
# Kustomization (nested: they also give each child's HelmReleases
# install/upgrade defaults).
mkdir -p "$k/flux/cluster"
cat > "$k/flux/cluster/ks.yaml" <<'Y'
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster-apps
  namespace: flux-system
spec:
  interval: 1h
  path: ./kubernetes/apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  patches:
    - # Cluster settings, pruning and timing for every app
      patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: not-used
        spec:
          interval: 1h
          retryInterval: 2m
          timeout: 5m
          prune: true
          wait: false
          postBuild:
            substituteFrom:
              - kind: ConfigMap
                name: cluster-settings
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
    - # HelmRelease defaults for every app
      patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: not-used
        spec:
          patches:
            - patch: |-
                apiVersion: helm.toolkit.fluxcd.io/v2
                kind: HelmRelease
                metadata:
                  name: not-used
                spec:
                  install:
                    crds: CreateReplace
                    strategy:
                      name: RetryOnFailure
                  rollback:
                    cleanupOnFail: true
                    recreate: true
                  upgrade:
                    cleanupOnFail: true
                    crds: CreateReplace
                    remediation:
                      remediateLastFailure: true
                      retries: 2
                    strategy:
                      name: RemediateOnFailure
              target:
                group: helm.toolkit.fluxcd.io
                kind: HelmRelease
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
Y

# The common component of every namespace folder.
mkdir -p "$k/components/common/repos"
cat > "$k/components/common/kustomization.yaml" <<'Y'
---
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - ./namespace.yaml
  - ./cluster-settings.yaml
  - ./repos
Y
cat > "$k/components/common/namespace.yaml" <<'Y'
---
apiVersion: v1
kind: Namespace
metadata:
  name: _ # the namespace transformer of each folder names it
  annotations:
    kustomize.toolkit.fluxcd.io/prune: disabled
Y
cat > "$k/components/common/cluster-settings.yaml" <<'Y'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-settings
data:
  SECRET_DOMAIN: home.example.com
  TIMEZONE: Europe/Paris
  CLUSTER_CIDR: 10.42.0.0/16
  SERVICE_CIDR: 10.43.0.0/16
  NAS_SERVER: nas.internal
  GATEWAY_INTERNAL: envoy-internal
  GATEWAY_EXTERNAL: envoy-external
  S3_ENDPOINT: s3.home.example.com
  STORAGE_CLASS: ceph-block
Y
printf -- '---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./helmrepository.yaml\n' > "$k/components/common/repos/kustomization.yaml"
cat > "$k/components/common/repos/helmrepository.yaml" <<Y
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: bench-charts
spec:
  type: oci
  interval: 1h
  url: oci://$registry/charts
  insecure: true
Y

# The volsync component, for the apps flagged v.
mkdir -p "$k/components/volsync"
cat > "$k/components/volsync/kustomization.yaml" <<'Y'
---
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - ./config.yaml
  - ./pvc.yaml
  - ./replicationsource.yaml
Y
cat > "$k/components/volsync/config.yaml" <<'Y'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: "${APP}-volsync"
data:
  RESTIC_REPOSITORY: "s3://${S3_ENDPOINT}/volsync/${APP}"
  RESTIC_COMPRESSION: auto
  RESTIC_CACHE_CAPACITY: "${VOLSYNC_CACHE_CAPACITY:=2Gi}"
  SCHEDULE: "${VOLSYNC_SCHEDULE:=0 * * * *}"
Y
cat > "$k/components/volsync/pvc.yaml" <<'Y'
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: "${APP}"
spec:
  accessModes: ["${VOLSYNC_ACCESSMODES:=ReadWriteOnce}"]
  dataSourceRef:
    kind: ReplicationDestination
    apiGroup: volsync.backube
    name: "${APP}-dst"
  resources:
    requests:
      storage: "${VOLSYNC_CAPACITY:=5Gi}"
  storageClassName: "${VOLSYNC_STORAGECLASS:=${STORAGE_CLASS}}"
Y
cat > "$k/components/volsync/replicationsource.yaml" <<'Y'
---
apiVersion: volsync.backube/v1alpha1
kind: ReplicationSource
metadata:
  name: "${APP}"
spec:
  sourcePVC: "${APP}"
  trigger:
    schedule: "${VOLSYNC_SCHEDULE:=0 * * * *}"
  restic:
    copyMethod: Snapshot
    pruneIntervalDays: 14
    repository: "${APP}-volsync-secret"
    volumeSnapshotClassName: csi-ceph-blockpool
    cacheCapacity: "${VOLSYNC_CACHE_CAPACITY:=2Gi}"
    cacheStorageClassName: openebs-hostpath
    storageClassName: "${VOLSYNC_STORAGECLASS:=${STORAGE_CLASS}}"
    moverSecurityContext:
      runAsUser: ${VOLSYNC_PUID:=1000}
      runAsGroup: ${VOLSYNC_PGID:=1000}
      fsGroup: ${VOLSYNC_PGID:=1000}
    retain:
      hourly: 24
      daily: 7
Y

# at_values I APP NS FLAGS: the values of an app-template release (the
# one line pr-value changes is its LOG_LEVEL).
at_values() {
  local i=$1 app=$2 ns=$3 flags=$4 env=${2//-/_}
  env=${env^^}
  cat <<Y
controllers:
  $app:
    type: $([[ ,$flags, == *,s,* ]] && echo statefulset || echo deployment)
    annotations:
      reloader.stakater.com/auto: "true"
    pod:
      securityContext:
        runAsUser: $((1000 + i % 3))
        runAsGroup: $((1000 + i % 3))
        runAsNonRoot: true
        fsGroup: $((1000 + i % 3))
        fsGroupChangePolicy: OnRootMismatch
    containers:
      app:
        image:
          repository: ghcr.io/home-operations/$app
          tag: $((1 + i % 5)).$((i % 11)).$((i % 7))@sha256:$(printf '%064x' $((i * 7919 + 104729)))
        env:
          TZ: \${TIMEZONE}
          LOG_LEVEL: info
          ${env}__SERVER__PORT: &port $((3000 + i))
          ${env}__APP__INSTANCENAME: $app
          PUBLIC_URL: https://$app.\${SECRET_DOMAIN}
Y
  [ $((i % 3)) = 0 ] && cat <<Y
        envFrom:
          - secretRef:
              name: $app-secret
Y
  cat <<Y
        probes:
          liveness: &probes
            enabled: true
            custom: true
            spec:
              httpGet:
                path: /healthz
                port: *port
              initialDelaySeconds: 0
              periodSeconds: 10
              timeoutSeconds: 1
              failureThreshold: 3
          readiness: *probes
          startup:
            enabled: $([ $((i % 2)) = 0 ] && echo true || echo false)
            type: TCP
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: ["ALL"]}
        resources:
          requests:
            cpu: $((10 * (1 + i % 5)))m
          limits:
            memory: $((256 * (1 + i % 4)))Mi
service:
  app:
    controller: $app
    ports:
      http:
        port: *port
route:
  app:
    hostnames: ["{{ .Release.Name }}.\${SECRET_DOMAIN}"]
    parentRefs:
      - name: \${GATEWAY_INTERNAL}
        namespace: kube-system
        sectionName: https
    rules:
      - backendRefs:
          - identifier: app
            port: $((3000 + i))
persistence:
Y
  if [[ ,$flags, == *,v,* ]]; then
    printf '  config:\n    existingClaim: %s\n' "$app"
  else
    printf '  config:\n    type: emptyDir\n'
  fi
  cat <<Y
  tmp:
    type: emptyDir
    medium: Memory
Y
  [ "$ns" = media ] && cat <<Y
  media:
    type: nfs
    server: \${NAS_SERVER}
    path: /mnt/tank/media
    globalMounts:
      - path: /media
        readOnly: $([ $((i % 2)) = 0 ] && echo true || echo false)
Y
  [ $((i % 4)) = 1 ] && cat <<Y
serviceMonitor:
  app:
    serviceName: app
    endpoints:
      - port: http
        path: /metrics
        interval: 1m
Y
  return 0
}

# chart_values CHART I APP NS: the values of a webapp, platform, operator
# or flux-instance release.
chart_values() {
  local chart=$1 i=$2 app=$3 ns=$4
  case $chart in
  webapp) cat <<Y
replicaCount: $((1 + i % 3))
image:
  repository: ghcr.io/home-operations/$app
  tag: "3.$((i % 7)).$((i % 3))"
config:
  LOG_LEVEL: info
  PUBLIC_URL: https://$app.\${SECRET_DOMAIN}
  REGION: eu-west-$((1 + i % 3))
ingress:
  enabled: $([ $((i % 2)) = 0 ] && echo true || echo false)
  className: internal
  hosts:
    - host: $app.\${SECRET_DOMAIN}
      paths: [{path: /, pathType: Prefix}]
autoscaling:
  enabled: $([ $((i % 3)) = 1 ] && echo true || echo false)
  maxReplicas: $((4 + i % 6))
podDisruptionBudget: {enabled: $([ $((i % 4)) -lt 2 ] && echo true || echo false)}
networkPolicy:
  enabled: true
  allowFrom: [networking, observability]
env:
  TZ: \${TIMEZONE}
Y
  ;;
  platform) cat <<Y
global:
  environment: production
  labels: {home.arpa/app: $app}
api:
  replicas: $((1 + i % 3))
  logLevel: info
  extraArgs: ["--max-inflight=$((100 * (1 + i % 4)))", "--external-url=https://$app.\${SECRET_DOMAIN}"]
database:
  host: postgres-cluster-rw.database.svc
  name: ${app//-/_}
cache:
  enabled: $([ $((i % 3)) = 2 ] && echo false || echo true)
  persistence: {size: $((1 + i % 4))Gi}
features: {search: true, exports: $([ $((i % 2)) = 0 ] && echo true || echo false), audit: true}
worker:
  enabled: $([ $((i % 2)) = 1 ] && echo true || echo false)
  queues: [default, mail, reports]
  schedule: "*/$((5 + i % 10)) * * * *"
Y
  ;;
  operator) cat <<Y
image: {repository: ghcr.io/home-operations/$app}
watchNamespaces: []
crds: {install: $([ "$app" = cert-manager ] && echo true || echo false)}
controllers:
  backup: {enabled: true, replicas: 1, concurrency: $((1 + i % 4))}
  cleanup: {enabled: $([ $((i % 2)) = 0 ] && echo true || echo false), replicas: 1, concurrency: 1}
  sync: {enabled: true, replicas: $((1 + i % 2)), concurrency: 8}
priorityClass: {create: false}
webhook: {failurePolicy: $([ $((i % 2)) = 0 ] && echo Fail || echo Ignore)}
Y
  ;;
  flux-instance) cat <<Y
instance:
  distribution:
    version: 2.7.x
    registry: ghcr.io/fluxcd
    artifact: oci://ghcr.io/controlplaneio-fluxcd/flux-operator-manifests:latest
  cluster:
    networkPolicy: false
  components:
    - source-controller
    - kustomize-controller
    - helm-controller
    - notification-controller
  sync:
    kind: GitRepository
    url: https://github.com/bench-ops/home-ops.git
    ref: refs/heads/main
    path: kubernetes/flux/cluster
    interval: 1h
Y
  ;;
  esac
}

# plain_manifests I APP NS DIR: the files of a plain app; the one line
# pr-manifest changes is echo-server's image.
plain_manifests() {
  local i=$1 app=$2 ns=$3 d=$4
  if [ "$app" = postgres-cluster ]; then
    cat > "$d/cluster.yaml" <<Y
---
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: postgres-cluster
spec:
  instances: 3
  imageName: ghcr.io/cloudnative-pg/postgresql:17.6-standard-bookworm
  primaryUpdateStrategy: unsupervised
  storage:
    size: 20Gi
    storageClass: \${STORAGE_CLASS}
  superuserSecret:
    name: postgres-cluster-superuser
  postgresql:
    parameters:
      max_connections: "400"
      shared_buffers: 256MB
  backup:
    retentionPolicy: 30d
    barmanObjectStore:
      destinationPath: s3://postgres/
      endpointURL: https://\${S3_ENDPOINT}
      serverName: postgres-cluster-v1
Y
    cat > "$d/externalsecret.yaml" <<Y
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: postgres-cluster-superuser
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: onepassword}
  target: {name: postgres-cluster-superuser}
  dataFrom:
    - extract: {key: cloudnative-pg}
Y
    printf -- '---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./cluster.yaml\n  - ./externalsecret.yaml\n' > "$d/kustomization.yaml"
    return
  fi
  cat > "$d/deployment.yaml" <<Y
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $app
  labels:
    app.kubernetes.io/name: $app
spec:
  replicas: $((1 + i % 2))
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: $app
  template:
    metadata:
      labels:
        app.kubernetes.io/name: $app
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534
      containers:
        - name: $app
          image: ghcr.io/home-operations/$app:1.$((i % 9)).0
          args: ["--listen=:8080", "--log-level=info"]
          envFrom:
            - configMapRef:
                name: $app-config
          ports:
            - name: http
              containerPort: 8080
          resources:
            requests: {cpu: 10m, memory: 32Mi}
            limits: {memory: 128Mi}
Y
  cat > "$d/service.yaml" <<Y
---
apiVersion: v1
kind: Service
metadata:
  name: $app
spec:
  selector:
    app.kubernetes.io/name: $app
  ports:
    - name: http
      port: 80
      targetPort: http
Y
  cat > "$d/configmap.yaml" <<Y
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: $app-config
data:
  TZ: \${TIMEZONE}
  DOMAIN: \${SECRET_DOMAIN}
  UPSTREAM: http://$app.$ns.svc.cluster.local
Y
  cat > "$d/httproute.yaml" <<Y
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: $app
spec:
  hostnames: ["$app.\${SECRET_DOMAIN}"]
  parentRefs:
    - name: \${GATEWAY_INTERNAL}
      namespace: kube-system
      sectionName: https
  rules:
    - backendRefs:
        - name: $app
          port: 80
Y
  printf -- '---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./configmap.yaml\n  - ./deployment.yaml\n  - ./service.yaml\n  - ./httproute.yaml\n' > "$d/kustomization.yaml"
}

i=0
declare -A nsapps
while read -r ns app chart flags; do
  i=$((i + 1))
  a=$k/apps/$ns/$app
  mkdir -p "$a/app"
  nsapps[$ns]+="  - ./$app/ks.yaml"$'\n'
  # ks.yaml, home-ops style: no namespace (the folder's kustomization
  # gives it), anchors, the source in flux-system.
  {
    cat <<Y
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: &app $app
spec:
  commonMetadata:
    labels:
      app.kubernetes.io/name: *app
Y
    [[ ,$flags, == *,v,* ]] && printf '  components:\n    - ../../../../components/volsync\n'
    if [[ $flags == *d=* ]]; then
      echo "  dependsOn:"
      for dep in ${flags//,/ }; do
        [[ $dep == d=* ]] || continue
        dep=${dep#d=}
        printf '    - name: %s\n      namespace: %s\n' "${dep#*/}" "${dep%/*}"
      done
    fi
    cat <<Y
  path: ./kubernetes/apps/$ns/$app/app
  postBuild:
    substitute:
      APP: *app
Y
    [[ ,$flags, == *,v,* ]] && printf '      VOLSYNC_CAPACITY: %dGi\n' $((1 + i % 10))
    cat <<Y
  sourceRef:
    kind: GitRepository
    name: flux-system
    namespace: flux-system
  targetNamespace: $ns
Y
  } > "$a/ks.yaml"

  if [ "$chart" = plain ]; then
    plain_manifests "$i" "$app" "$ns" "$a/app"
    continue
  fi

  # The HelmRelease, its chart source and its values.
  resources=("./helmrelease.yaml")
  {
    cat <<Y
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: &app $app
spec:
  interval: 1h
Y
    if [[ ,$flags, == *,h,* ]]; then
      cat <<Y
  chart:
    spec:
      chart: $chart
      version: ${version[$chart]}
      sourceRef:
        kind: HelmRepository
        name: bench-charts
Y
    else
      printf '  chartRef:\n    kind: OCIRepository\n    name: %s\n' "$app"
    fi
    cat <<Y
  install:
    remediation:
      retries: -1
  upgrade:
    cleanupOnFail: true
    remediation:
      retries: 3
Y
    if [[ ,$flags, == *,f,* ]]; then
      printf '  valuesFrom:\n    - kind: ConfigMap\n      name: %s-values\n' "$app"
    fi
    echo "  values:"
    if [ "$chart" = app-template ]; then
      at_values "$i" "$app" "$ns" "$flags"
    else
      chart_values "$chart" "$i" "$app" "$ns"
    fi | if [[ ,$flags, == *,f,* ]]; then
      # The first half of the values go to the generated ConfigMap, the
      # rest stay inline (both reach the chart, valuesFrom first).
      tee "$a/app/values.full" | awk 'NR == 1 || /^[a-zA-Z]/ {top++} top <= 2' | sed 's/^/    /'
    else
      sed 's/^/    /'
    fi
  } > "$a/app/helmrelease.yaml"
  if [[ ,$flags, == *,f,* ]]; then
    awk '/^[a-zA-Z]/ {top++} top > 2' "$a/app/values.full" > "$a/app/values.yaml"
    rm "$a/app/values.full"
  fi
  if [[ ,$flags, != *,h,* ]]; then
    resources+=("./ocirepository.yaml")
    cat > "$a/app/ocirepository.yaml" <<Y
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: $app
spec:
  interval: 15m
  layerSelector:
    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    operation: copy
  ref:
    tag: ${version[$chart]}
  url: oci://$registry/charts/$chart
  insecure: true
Y
  fi
  if [ $((i % 4)) = 2 ] && [ "$chart" != flux-instance ]; then
    resources+=("./externalsecret.yaml")
    cat > "$a/app/externalsecret.yaml" <<Y
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: $app
spec:
  secretStoreRef:
    kind: ClusterSecretStore
    name: onepassword
  target:
    name: $app-secret
    template:
      data:
        API_KEY: "{{ .${app//-/_}_api_key }}"
  dataFrom:
    - extract:
        key: $app
Y
  fi
  {
    printf -- '---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n'
    printf '  - %s\n' "${resources[@]}"
    if [[ ,$flags, == *,f,* ]]; then
      cat <<Y
configMapGenerator:
  - name: $app-values
    files:
      - values.yaml=./values.yaml
configurations:
  - ./kustomizeconfig.yaml
Y
      cat > "$a/app/kustomizeconfig.yaml" <<'Y'
---
nameReference:
  - kind: ConfigMap
    version: v1
    fieldSpecs:
      - path: spec/valuesFrom/name
        kind: HelmRelease
Y
    fi
  } > "$a/app/kustomization.yaml"
done <<< "$apps"

# Each namespace folder: its namespace, the common component, its apps.
for ns in "${!nsapps[@]}"; do
  {
    printf -- '---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\ncomponents:\n  - ../../components/common\nresources:\n' "$ns"
    printf '%s' "${nsapps[$ns]}"
  } > "$k/apps/$ns/kustomization.yaml"
done

# The repository: main, then one branch per change.
git() { command git -C "$repo" -c user.email=bench@ferry.invalid -c user.name=bench "$@"; }
git init -q -b main
git remote add origin https://github.com/bench-ops/home-ops.git
git add -A && git commit -qm "the fleet"
: > "$dir/changes.tsv"
change() { # branch file sed-expression what
  git checkout -q -b "$1" main
  sed -i "$3" "$repo/$2"
  [ "$(git diff --numstat | awk '{print $1 "+" $2}')" = 1+1 ] || { echo "bench/genprfleet.sh: $1 is not a one-line change" >&2; exit 1; }
  git commit -qam "$4"
  printf '%s\t%s\t%s\n' "$1" "$2" "$4" >> "$dir/changes.tsv"
  git checkout -q main
}
change pr-value kubernetes/apps/media/radarr/app/helmrelease.yaml 's/LOG_LEVEL: info/LOG_LEVEL: debug/' \
  "a HelmRelease value (media/radarr LOG_LEVEL)"
change pr-manifest kubernetes/apps/default/echo-server/app/deployment.yaml 's|\(image: ghcr.io/home-operations/echo-server\):.*|\1:1.9.1|' \
  "a plain manifest (default/echo-server image)"
change pr-component kubernetes/components/volsync/config.yaml 's/RESTIC_COMPRESSION: auto/RESTIC_COMPRESSION: max/' \
  "the volsync component shared by 15 apps (RESTIC_COMPRESSION)"
