package main

import (
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/gittest"
)

// Class "identity" (issue 26, item 8): within a target an identity
// (group, kind, namespace, name) is one object across the kustomize
// build, the objects of its charts and their hooks. A pull request that
// adds a chart hook with the identity of a plain manifest (a
// ClusterRoleBinding to cluster-admin) used to be hidden behind the
// unchanged plain copy in the diff while apply sent the hook.

// identityRelease is the HelmRelease of the corpus repo's target app:
// release web in namespace shop of the chart folder charts/web.
const identityRelease = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: shop}
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`

// identityBinding is a plain ClusterRoleBinding admin granting view.
const identityBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}]
`

// identityHook is a chart hook with the identity of identityBinding,
// granting cluster-admin; namespace is a line for its metadata, or "".
func identityHook(namespace string) string {
	return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: admin
` + namespace + `  annotations: {helm.sh/hook: pre-install}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: shop}]
`
}

// identityFiles are the corpus repo's target app with the plain
// ClusterRoleBinding, the HelmRelease and its chart (version 1.2.0, a
// ConfigMap), plus templates of the chart by file name.
func identityFiles(templates map[string]string) map[string]string {
	files := map[string]string{
		"app/kustomization.yaml":           "resources: [deployment.yaml, secret.yaml, crb.yaml, release.yaml]\n",
		"app/crb.yaml":                     identityBinding,
		"app/release.yaml":                 identityRelease,
		"charts/web/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 1.2.0\n",
		"charts/web/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
	}
	for k, v := range templates {
		files["charts/web/templates/"+k] = v
	}
	return files
}

// identityKubeconfig is a kubeconfig (in the repo's root, outside every
// target) whose cluster is the trap listener: a run that fails its render
// must not connect to it.
const identityKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: trap, cluster: {server: "{{URL}}"}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: trap, context: {cluster: trap, user: u}}]
current-context: trap
`

// withKubeconfig is files with identityKubeconfig beside them.
func withKubeconfig(files map[string]string) map[string]string {
	files["kubeconfig"] = identityKubeconfig
	return files
}

// hookDuplicate is what every case of a hook duplicating the plain
// ClusterRoleBinding says.
var hookDuplicate = []string{`target "app"`,
	"ClusterRoleBinding.rbac.authorization.k8s.io/admin is defined twice: by app/crb.yaml and by HelmRelease/shop/web (chart web 1.2.0, templates/hook.yaml)"}

func hostileIdentityCases() []hostileCase {
	return []hostileCase{
		{name: "chart hook with the identity of a plain ClusterRoleBinding", class: "identity",
			files: identityFiles(map[string]string{"hook.yaml": identityHook("")}), want: hookDuplicate},
		{name: "chart hook with the identity of a plain ClusterRoleBinding, render -o", class: "identity",
			files: identityFiles(map[string]string{"hook.yaml": identityHook("")}),
			args:  []string{"render", "--repo", "{{REPO}}", "-o", "{{OUT}}"}, want: hookDuplicate},
		{name: "chart hook with a namespace on a cluster-scoped identity", class: "identity",
			files: identityFiles(map[string]string{"hook.yaml": identityHook("  namespace: {{ .Release.Namespace }}\n")}), want: hookDuplicate},
		{name: "chart object with the identity of a plain Deployment", class: "identity",
			files: func() map[string]string {
				f := identityFiles(map[string]string{"web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec: {template: {spec: {containers: [{name: web, image: \"evil:1\"}]}}}\n"})
				f["app/deployment.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec:\n  template:\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n"
				return f
			}(),
			want: []string{`target "app"`, "Deployment.apps/default/web is defined twice: by app/deployment.yaml and by HelmRelease/shop/web (chart web 1.2.0, templates/web.yaml)"}},
		{name: "two releases rendering one ClusterRole", class: "identity",
			files: func() map[string]string {
				f := identityFiles(map[string]string{"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: web-reader}\nrules: []\n"})
				f["app/kustomization.yaml"] = "resources: [deployment.yaml, secret.yaml, release.yaml, again.yaml]\n"
				f["app/again.yaml"] = strings.Replace(identityRelease, "name: web,", "name: again,", 1)
				return f
			}(),
			want: []string{`target "app"`, "ClusterRole.rbac.authorization.k8s.io/web-reader is defined twice: by HelmRelease/shop/again (chart web 1.2.0, templates/role.yaml) and by HelmRelease/shop/web (chart web 1.2.0, templates/role.yaml)"}},
		{name: "chart rendering one object twice", class: "identity",
			files: identityFiles(map[string]string{"again.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: again}\n"}),
			want:  []string{`target "app"`, "ConfigMap/shop/web-config is defined twice: by HelmRelease/shop/web (chart web 1.2.0, templates/again.yaml) and by HelmRelease/shop/web (chart web 1.2.0, templates/config.yaml)"}},
		{name: "two versions of one kind", class: "identity",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [deployment.yaml, secret.yaml, v1.yaml, v2.yaml]\n",
				"app/v1.yaml":            "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec: {maxReplicas: 3, scaleTargetRef: {kind: Deployment, name: web}}\n",
				"app/v2.yaml":            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec: {maxReplicas: 300, scaleTargetRef: {kind: Deployment, name: web}}\n",
			},
			want: []string{`target "app"`, "HorizontalPodAutoscaler.autoscaling/web is defined twice: by app/v1.yaml and by app/v2.yaml"}},
		{name: "apply of a hook duplicate sends nothing", class: "identity",
			files: withKubeconfig(identityFiles(map[string]string{"hook.yaml": identityHook("")})),
			args:  []string{"apply", "--repo", "{{REPO}}", "--kubeconfig", "{{REPO}}/kubeconfig"}, want: hookDuplicate},
		{name: "drift of a hook duplicate reads nothing", class: "identity",
			files: withKubeconfig(identityFiles(map[string]string{"hook.yaml": identityHook("")})),
			args:  []string{"drift", "--repo", "{{REPO}}", "--kubeconfig", "{{REPO}}/kubeconfig"},
			want:  []string{"could not be checked or healed: app"}, wantOut: hookDuplicate},
		{name: "pre+post hook is one object", class: "identity", succeeds: true,
			files: identityFiles(map[string]string{"check.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: check\n  annotations: {helm.sh/hook: \"pre-install,post-install\"}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: \"busybox:1.36\"}]}}}\n"}),
			args:  []string{"render", "--repo", "{{REPO}}", "--no-decrypt", "-o", "{{OUT}}"}},
		{name: "diff: head adds a hook duplicating a plain ClusterRoleBinding", class: "identity",
			files: identityFiles(nil),
			setup: func(t *testing.T, c *hostileRun) {
				repo := gittest.Init(t, c.repo)
				repo.Commit(t, "base")
				c.write(t, "charts/web/templates/hook.yaml", identityHook(""))
				repo.Commit(t, "head")
			},
			args:    []string{"diff", "--repo", "{{REPO}}", "--base", "HEAD~1"},
			want:    []string{"app (render failed at head)"},
			wantOut: hookDuplicate},
	}
}
