package helmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Deployment is the template of a chart's Deployment named after the
// release: .Values.replicas pods running
// .Values.image.repository:.Values.image.tag.
const Deployment = `apiVersion: apps/v1
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
`

// WebChart is a small chart as files for testtree, each path prefixed
// with prefix: a Deployment, a ConfigMap of its values, a cluster-scoped
// ClusterRole, a pre-install hook Job, a post-install hook ConfigMap,
// and a test hook Pod that is never part of a target.
func WebChart(prefix string) map[string]string {
	return map[string]string{
		prefix + "Chart.yaml":                "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		prefix + "values.yaml":               "replicas: 1\nimage: {repository: nginx, tag: \"1.27\"}\ngreeting: hello\nteam: none\n",
		prefix + "templates/deployment.yaml": Deployment,
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
// cluster folder clusters/<cluster>/ holds the flux-system sync
// (FluxSync) and a Kustomization named target, pruning, whose path is the
// folder target of the repository holding files (paths relative to it).
func FluxFleet(cluster, target string, files map[string]string) map[string]string {
	out := map[string]string{
		"clusters/" + cluster + "/flux-system/gotk-sync.yaml": FluxSync(cluster, "https://example.test/fleet"),
		"clusters/" + cluster + "/" + target + ".yaml":        FluxKustomization(target, "./"+target, ""),
	}
	for k, v := range files {
		out[target+"/"+k] = v
	}
	return out
}

// FluxSync is clusters/<cluster>/flux-system/gotk-sync.yaml as `flux
// bootstrap` writes it: the GitRepository flux-system of url on branch
// main, and the Kustomization flux-system that syncs ./clusters/<cluster>
// from it.
func FluxSync(cluster, url string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: ` + url + `
  ref: {branch: main}
---
` + FluxKustomization("flux-system", "./clusters/"+cluster, "")
}

// FluxKustomization is the Flux Kustomization name in flux-system of
// path in the GitRepository flux-system, pruning, with the spec lines of
// extra (each indented by two spaces) added.
func FluxKustomization(name, path, extra string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: flux-system
spec:
  interval: 10m
  path: ` + path + `
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
` + extra
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
