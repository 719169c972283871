package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// identityRepo is a repository whose ferry.yaml target app renders the
// folder app, listing resources (spec holds further target fields,
// indented by four spaces); charts are chart folders under charts/, by
// name, each version 1.2.0 with its templates by file name.
func identityRepo(spec string, app map[string]string, resources []string, charts map[string]map[string]string) map[string]string {
	files := map[string]string{
		"ferry.yaml":             "targets:\n  - name: app\n    path: app\n" + spec,
		"app/kustomization.yaml": "resources: [" + strings.Join(resources, ", ") + "]\n",
	}
	for k, v := range app {
		files["app/"+k] = v
	}
	for name, templates := range charts {
		files["charts/"+name+"/Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 1.2.0\n"
		for k, v := range templates {
			files["charts/"+name+"/templates/"+k] = v
		}
	}
	return files
}

// folderRelease is a HelmRelease of namespace shop whose chart is the
// folder charts/<chart> of this repository.
func folderRelease(name, chart string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ` + name + `, namespace: shop}
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/` + chart + `
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`
}

const (
	adminBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: admin%s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}]
`
	adminHook = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: admin
  annotations: {helm.sh/hook: pre-install}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: shop}]
`
	settings         = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings%s}\ndata: {from: %s}\n"
	clusterIssuerCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterissuers.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: ClusterIssuer, plural: clusterissuers}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	clusterIssuer = "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: le}\nspec: {acme: {}}\n"
)

// TestOneIdentityOneObject: within a target, an identity (group, kind,
// namespace, name) is one object across the kustomize build, the
// objects of its charts and their hooks. A second one fails the render,
// naming where each came from: the kustomize file (or the build, when no
// one file holds it), the HelmRelease with its chart and template. A
// hook of both phases is one object; the namespace of a cluster-scoped
// object does not make it another.
func TestOneIdentityOneObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		// want is the render's error, or "" for a render that succeeds
		// with the objects of ids, each with its hook phases.
		want string
		ids  []string
	}{
		{
			name: "hook vs plain manifest",
			files: identityRepo("", map[string]string{"crb.yaml": fmt.Sprintf(adminBinding, ""), "release.yaml": folderRelease("web", "web")},
				[]string{"crb.yaml", "release.yaml"}, map[string]map[string]string{"web": {"hook.yaml": adminHook}}),
			want: `target "app": ClusterRoleBinding.rbac.authorization.k8s.io/admin is defined twice: by app/crb.yaml and by HelmRelease/shop/web (chart web 1.2.0, templates/hook.yaml)`,
		},
		{
			name: "chart object vs plain manifest",
			files: identityRepo("", map[string]string{"cm.yaml": fmt.Sprintf(settings, ", namespace: shop", "git"), "release.yaml": folderRelease("web", "web")},
				[]string{"cm.yaml", "release.yaml"}, map[string]map[string]string{"web": {"cm.yaml": fmt.Sprintf(settings, "", "chart")}}),
			want: `target "app": ConfigMap/shop/settings is defined twice: by app/cm.yaml and by HelmRelease/shop/web (chart web 1.2.0, templates/cm.yaml)`,
		},
		{
			name: "plain object renamed by kustomize vs chart object",
			files: func() map[string]string {
				f := identityRepo("", map[string]string{"cm.yaml": fmt.Sprintf(settings, ", namespace: shop", "git"), "release.yaml": folderRelease("web", "web")},
					[]string{"cm.yaml", "release.yaml"}, map[string]map[string]string{"web": {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x-settings}\n"}})
				f["app/kustomization.yaml"] += "namePrefix: x-\n"
				return f
			}(),
			want: `target "app": ConfigMap/shop/x-settings is defined twice: by the kustomize build of app and by HelmRelease/shop/x-web (chart web 1.2.0, templates/cm.yaml)`,
		},
		{
			name: "two releases rendering the same object",
			files: identityRepo("", map[string]string{"a.yaml": folderRelease("a", "shared"), "b.yaml": folderRelease("b", "shared")},
				[]string{"a.yaml", "b.yaml"}, map[string]map[string]string{"shared": {"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: shared-reader}\nrules: []\n"}}),
			want: `target "app": ClusterRole.rbac.authorization.k8s.io/shared-reader is defined twice: by HelmRelease/shop/a (chart shared 1.2.0, templates/role.yaml) and by HelmRelease/shop/b (chart shared 1.2.0, templates/role.yaml)`,
		},
		{
			name: "a chart rendering one object twice",
			files: identityRepo("", map[string]string{"release.yaml": folderRelease("web", "web")}, []string{"release.yaml"},
				map[string]map[string]string{"web": {"a.yaml": fmt.Sprintf(settings, "", "a"), "b.yaml": fmt.Sprintf(settings, "", "b")}}),
			want: `target "app": ConfigMap/shop/settings is defined twice: by HelmRelease/shop/web (chart web 1.2.0, templates/a.yaml) and by HelmRelease/shop/web (chart web 1.2.0, templates/b.yaml)`,
		},
		{
			name: "a hook with the identity of its chart's object",
			files: identityRepo("", map[string]string{"release.yaml": folderRelease("web", "web")}, []string{"release.yaml"},
				map[string]map[string]string{"web": {"cm.yaml": fmt.Sprintf(settings, "", "object"), "hook.yaml": strings.Replace(fmt.Sprintf(settings, "", "hook"), "{name: settings}", "{name: settings, annotations: {helm.sh/hook: post-install}}", 1)}}),
			want: `target "app": ConfigMap/shop/settings is defined twice: by HelmRelease/shop/web (chart web 1.2.0, templates/cm.yaml) and by HelmRelease/shop/web (chart web 1.2.0, templates/hook.yaml)`,
		},
		{
			name: "two versions of one kind in the kustomize build",
			files: identityRepo("", map[string]string{
				"v1.yaml": "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: shop}\nspec: {maxReplicas: 3, scaleTargetRef: {kind: Deployment, name: web}}\n",
				"v2.yaml": "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: shop}\nspec: {maxReplicas: 4, scaleTargetRef: {kind: Deployment, name: web}}\n",
			}, []string{"v1.yaml", "v2.yaml"}, nil),
			want: `target "app": HorizontalPodAutoscaler.autoscaling/shop/web is defined twice: by app/v1.yaml and by app/v2.yaml`,
		},
		{
			name: "cluster-scoped object with a namespace of its own vs hook",
			files: identityRepo("    targetNamespace: shop\n", map[string]string{"crb.yaml": fmt.Sprintf(adminBinding, ", namespace: other"), "release.yaml": folderRelease("web", "web")},
				[]string{"crb.yaml", "release.yaml"}, map[string]map[string]string{"web": {"hook.yaml": adminHook}}),
			want: `target "app": ClusterRoleBinding.rbac.authorization.k8s.io/admin is defined twice: by app/crb.yaml and by HelmRelease/shop/web (chart web 1.2.0, templates/hook.yaml)`,
		},
		{
			name: "cluster-scoped custom resource given the targetNamespace vs chart object",
			files: identityRepo("    targetNamespace: shop\n", map[string]string{"crd.yaml": clusterIssuerCRD, "issuer.yaml": clusterIssuer, "release.yaml": folderRelease("web", "web")},
				[]string{"crd.yaml", "issuer.yaml", "release.yaml"}, map[string]map[string]string{"web": {"issuer.yaml": clusterIssuer}}),
			want: `target "app": ClusterIssuer.cert-manager.io/le is defined twice: by app/issuer.yaml and by HelmRelease/shop/web (chart web 1.2.0, templates/issuer.yaml)`,
		},
		{
			name: "a pre+post hook is one object with both phases",
			files: identityRepo("", map[string]string{"release.yaml": folderRelease("web", "web")}, []string{"release.yaml"},
				map[string]map[string]string{"web": {
					"check.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: check\n  annotations: {helm.sh/hook: \"pre-install,post-install\"}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}\n",
					"lock.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lock\n  annotations: {helm.sh/hook: \"pre-upgrade,post-install\"}\n",
					"done.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: done\n  annotations: {helm.sh/hook: post-upgrade}\n",
				}}),
			ids: []string{
				"HelmRelease.helm.toolkit.fluxcd.io/shop/web ",
				"Job.batch/shop/check pre,post",
				"ConfigMap/shop/lock pre,post",
				"ConfigMap/shop/done post",
			},
		},
		{
			name: "same name, different namespace",
			files: identityRepo("", map[string]string{"cm.yaml": fmt.Sprintf(settings, ", namespace: other", "git"), "release.yaml": folderRelease("web", "web")},
				[]string{"cm.yaml", "release.yaml"}, map[string]map[string]string{"web": {"cm.yaml": fmt.Sprintf(settings, "", "chart")}}),
			ids: []string{"ConfigMap/other/settings ", "HelmRelease.helm.toolkit.fluxcd.io/shop/web ", "ConfigMap/shop/settings "},
		},
		{
			name: "same name, different group or kind",
			files: identityRepo("", map[string]string{
				"crb.yaml":     fmt.Sprintf(adminBinding, ""),
				"other.yaml":   "apiVersion: example.com/v1\nkind: ClusterRoleBinding\nmetadata: {name: admin}\n",
				"role.yaml":    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: admin}\nrules: []\n",
				"release.yaml": folderRelease("web", "web"),
			}, []string{"crb.yaml", "other.yaml", "role.yaml", "release.yaml"},
				map[string]map[string]string{"web": {"sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: admin}\n"}}),
			ids: []string{
				"ClusterRole.rbac.authorization.k8s.io/admin ",
				"ClusterRoleBinding.example.com/admin ",
				"ClusterRoleBinding.rbac.authorization.k8s.io/admin ",
				"HelmRelease.helm.toolkit.fluxcd.io/shop/web ",
				"ServiceAccount/shop/admin ",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := load(t, testtree.New(t, tc.files))
			res, err := repo.Render(t.Context(), mustTarget(t, repo, "app"))
			if tc.want != "" {
				if err == nil {
					t.Fatalf("rendered %v, want the error %s", res.Set.IDs(), tc.want)
				}
				if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				var dup *manifest.DuplicateError
				if !errors.As(err, &dup) {
					t.Errorf("error %T is no *manifest.DuplicateError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range res.Set.Objects {
				got = append(got, manifest.IDOf(o).String()+" "+o.GetAnnotations()[config.HelmHookAnnotation])
			}
			if diff := cmp.Diff(tc.ids, got); diff != "" {
				t.Errorf("objects and hook phases (-want +got):\n%s", diff)
			}
		})
	}
}
