package helmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// WebChart is a small chart as files for testtree, each path prefixed
// with prefix: a Deployment, a ConfigMap of its values, a cluster-scoped
// ClusterRole, a pre-install hook Job, a post-install hook ConfigMap,
// and a test hook Pod that is never part of a target.
func WebChart(prefix string) map[string]string {
	return map[string]string{
		prefix + "Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		prefix + "values.yaml": "replicas: 1\nimage: {repository: nginx, tag: \"1.27\"}\ngreeting: hello\nteam: none\n",
		prefix + "templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - name: web
          image: {{ .Values.image.repository }}:{{ .Values.image.tag }}
`,
		prefix + "templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
  team: {{ .Values.team | quote }}
  chart: {{ .Chart.Version | quote }}
`,
		prefix + "templates/clusterrole.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-reader
rules: []
`,
		prefix + "templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "nginx:1.27"}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-done
  annotations: {helm.sh/hook: post-install}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {helm.sh/hook: test}
spec:
  restartPolicy: Never
  containers: [{name: test, image: "busybox:1.36"}]
`,
	}
}

// FluxFleet is a one-cluster Flux repository as files for testtree: the
// cluster folder clusters/<cluster>/ holds the flux-system sync (the
// repository's GitRepository and the Kustomization of that folder) and
// a Kustomization named target, pruning, whose path is the folder target
// of the repository holding files (paths relative to it).
func FluxFleet(cluster, target string, files map[string]string) map[string]string {
	out := map[string]string{
		"clusters/" + cluster + "/flux-system/gotk-sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: https://example.test/fleet
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/` + cluster + `
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`,
		"clusters/" + cluster + "/" + target + ".yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + target + `
  namespace: flux-system
spec:
  interval: 10m
  path: ./` + target + `
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`,
	}
	for k, v := range files {
		out[target+"/"+k] = v
	}
	return out
}

// Oversized is a chart archive of name and version that is small but
// unpacks past Helm's bound on one file of a chart (5 MiB): a template
// of six MiB of zeros, gzipped to a few KiB.
func Oversized(t testing.TB, name, version string) ([]byte, *chart.Metadata) {
	t.Helper()
	md := &chart.Metadata{APIVersion: "v2", Name: name, Version: version}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{name + "/Chart.yaml", []byte("apiVersion: v2\nname: " + name + "\nversion: " + version + "\n")},
		{name + "/templates/zeros.yaml", make([]byte, 6<<20)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), md
}
