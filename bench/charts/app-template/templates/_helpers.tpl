{{/* The release's full name (63 characters at most). */}}
{{- define "at.fullname" -}}
{{- if .Values.global.fullnameOverride -}}
{{- .Values.global.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- default .Release.Name .Values.global.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of an item: the full name, suffixed with its identifier unless it is the only one or the primary. */}}
{{- define "at.itemName" -}}
{{- $root := index . 0 -}}{{- $id := index . 1 -}}{{- $all := index . 2 -}}
{{- if or (eq (len $all) 1) (eq $id "main") (eq $id "app") -}}
{{- include "at.fullname" $root -}}
{{- else -}}
{{- printf "%s-%s" (include "at.fullname" $root) $id | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "at.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ include "at.fullname" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.global.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "at.selectorLabels" -}}
{{- $root := index . 0 -}}{{- $controller := index . 1 -}}
app.kubernetes.io/name: {{ include "at.fullname" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/controller: {{ $controller }}
{{- end -}}

{{/* The volumes of a pod: every enabled persistence entry. */}}
{{- define "at.volumes" -}}
{{- $root := . -}}
{{- range $id, $p := .Values.persistence }}
{{- if ne (toString (dig "enabled" true $p)) "false" }}
- name: {{ $id }}
{{- $type := default "persistentVolumeClaim" $p.type }}
{{- if eq $type "persistentVolumeClaim" }}
  persistentVolumeClaim:
    claimName: {{ default (include "at.itemName" (list $root $id $root.Values.persistence)) $p.existingClaim }}
{{- else if eq $type "emptyDir" }}
  emptyDir: {{ pick $p "medium" "sizeLimit" | toJson }}
{{- else if eq $type "configMap" }}
  configMap:
    name: {{ tpl (required (printf "persistence.%s.name" $id) $p.name) $root }}
    {{- with $p.defaultMode }}
    defaultMode: {{ . }}
    {{- end }}
{{- else if eq $type "secret" }}
  secret:
    secretName: {{ tpl (required (printf "persistence.%s.name" $id) $p.name) $root }}
{{- else if eq $type "nfs" }}
  nfs:
    server: {{ $p.server }}
    path: {{ $p.path }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The mounts of a container: globalMounts, and advancedMounts of this controller and container. */}}
{{- define "at.mounts" -}}
{{- $root := index . 0 -}}{{- $cid := index . 1 -}}{{- $name := index . 2 -}}
{{- range $id, $p := $root.Values.persistence }}
{{- if ne (toString (dig "enabled" true $p)) "false" }}
{{- $global := $p.globalMounts }}
{{- if and (not $global) (not $p.advancedMounts) }}{{- $global = list (dict "path" (printf "/%s" $id)) }}{{- end }}
{{- range $m := (default (list) $global) }}
- name: {{ $id }}
  mountPath: {{ default (printf "/%s" $id) $m.path }}
  {{- with $m.subPath }}
  subPath: {{ . }}
  {{- end }}
  {{- if $m.readOnly }}
  readOnly: true
  {{- end }}
{{- end }}
{{- range $m := (dig $cid $name (list) (default (dict) $p.advancedMounts)) }}
- name: {{ $id }}
  mountPath: {{ $m.path }}
  {{- with $m.subPath }}
  subPath: {{ . }}
  {{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* A probe of a container with a service port named http. */}}
{{- define "at.probe" -}}
{{- $kind := index . 0 -}}{{- $p := index . 1 -}}{{- $port := index . 2 -}}
{{- if $p.custom }}
{{- toYaml $p.spec }}
{{- else }}
{{- if eq (default "HTTP" $p.type) "TCP" }}
tcpSocket:
  port: {{ $port }}
{{- else }}
httpGet:
  path: {{ default "/" (dig "path" "" $p) }}
  port: {{ $port }}
{{- end }}
initialDelaySeconds: {{ dig "spec" "initialDelaySeconds" 0 $p }}
periodSeconds: {{ dig "spec" "periodSeconds" 10 $p }}
timeoutSeconds: {{ dig "spec" "timeoutSeconds" 1 $p }}
failureThreshold: {{ dig "spec" "failureThreshold" (ternary 30 3 (eq $kind "startup")) $p }}
{{- end }}
{{- end -}}
