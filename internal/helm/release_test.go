package helm_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/helm"
)

func TestParseRelease(t *testing.T) {
	t.Parallel()
	r, err := helm.ParseRelease(releaseObject(t, "v2", "podinfo", "apps", `
releaseName: podinfo-web
targetNamespace: web
storageNamespace: flux-system
chart:
  spec:
    chart: podinfo
    sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}
    valuesFiles: [values.yaml, values-prod.yaml]
values:
  replicaCount: 2
valuesFrom:
  - kind: ConfigMap
    name: podinfo-values
  - kind: Secret
    name: podinfo-secret
    valuesKey: token
    targetPath: auth.token
    optional: true
install: {crds: CreateReplace}
postRenderers:
  - kustomize:
      patches:
        - target: {kind: Deployment, name: podinfo}
          patch: |
            - op: add
              path: /metadata/labels/patched
              value: "yes"
      images:
        - name: ghcr.io/stefanprodan/podinfo
          newTag: 6.7.0
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &helm.Release{
		APIVersion: "helm.toolkit.fluxcd.io/v2", Name: "podinfo", Namespace: "apps",
		ReleaseName: "podinfo-web", TargetNamespace: "web", StorageNamespace: "flux-system",
		Chart: &helm.ChartTemplate{Chart: "podinfo", Version: "*",
			SourceRef:   helm.ObjectRef{Kind: "HelmRepository", Name: "podinfo", Namespace: "flux-system"},
			ValuesFiles: []string{"values.yaml", "values-prod.yaml"}},
		Values: map[string]any{"replicaCount": float64(2)},
		ValuesFrom: []helm.ValuesReference{
			{Kind: "ConfigMap", Name: "podinfo-values", ValuesKey: "values.yaml"},
			{Kind: "Secret", Name: "podinfo-secret", ValuesKey: "token", TargetPath: "auth.token", Optional: true},
		},
		InstallCRDs: helm.CreateReplaceCRDs, UpgradeCRDs: helm.SkipCRDs,
		PostRenderers: []helm.Kustomize{{
			Patches: []helm.Patch{{Target: &helm.Selector{Kind: "Deployment", Name: "podinfo"},
				Patch: "- op: add\n  path: /metadata/labels/patched\n  value: \"yes\"\n"}},
			Images: []helm.Image{{Name: "ghcr.io/stefanprodan/podinfo", NewTag: "6.7.0"}},
		}},
		PostRenderStrategy: helm.PostRenderNoHooks,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := r.ReleaseNamespace(); got != "web" {
		t.Errorf("release namespace %q, want web", got)
	}
}

func TestParseReleaseChartRefAndV2beta2(t *testing.T) {
	t.Parallel()
	r, err := helm.ParseRelease(releaseObject(t, "v2", "app", "apps", `chartRef: {kind: OCIRepository, name: app-chart}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&helm.ObjectRef{Kind: "OCIRepository", Name: "app-chart", Namespace: "apps"}, r.ChartRef); diff != "" {
		t.Errorf("chartRef (-want +got):\n%s", diff)
	}
	if r.InstallCRDs != helm.CreateCRDs || r.UpgradeCRDs != helm.SkipCRDs {
		t.Errorf("CRD policies %s/%s, want Flux's defaults Create/Skip", r.InstallCRDs, r.UpgradeCRDs)
	}

	old, err := helm.ParseRelease(releaseObject(t, "v2beta2", "legacy", "apps", `
chart:
  spec:
    chart: legacy
    version: ">=1.0.0 <2.0.0"
    sourceRef: {kind: GitRepository, name: fleet}
    valuesFile: base.yaml
    valuesFiles: [prod.yaml]
install: {skipCRDs: true}
postRenderers:
  - kustomize:
      patchesStrategicMerge:
        - {apiVersion: apps/v1, kind: Deployment, metadata: {name: legacy}, spec: {replicas: 0}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"base.yaml", "prod.yaml"}, old.Chart.ValuesFiles); diff != "" {
		t.Errorf("valuesFile comes first (-want +got):\n%s", diff)
	}
	if old.InstallCRDs != helm.SkipCRDs {
		t.Errorf("install.skipCRDs: policy %s, want Skip", old.InstallCRDs)
	}
	if len(old.PostRenderers) != 1 || !strings.Contains(old.PostRenderers[0].Patches[0].Patch, "replicas: 0") {
		t.Errorf("patchesStrategicMerge not read as a patch: %+v", old.PostRenderers)
	}
}

func TestParseReleaseErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ spec, want string }{
		"no chart":        {`values: {}`, "HelmRelease/apps/bad: neither spec.chart nor spec.chartRef is set"},
		"both":            {`{chart: {spec: {chart: a, sourceRef: {kind: HelmRepository, name: r}}}, chartRef: {kind: OCIRepository, name: o}}`, "mutually exclusive"},
		"source kind":     {`chart: {spec: {chart: a, sourceRef: {kind: OCIRepository, name: r}}}`, `HelmRelease/apps/bad: spec.chart.spec.sourceRef.kind "OCIRepository" is not HelmRepository, GitRepository, Bucket`},
		"chartRef kind":   {`chartRef: {kind: GitRepository, name: r}`, `spec.chartRef.kind "GitRepository" is not OCIRepository, HelmChart`},
		"valuesFrom kind": {`{chartRef: {kind: HelmChart, name: c}, valuesFrom: [{kind: Deployment, name: x}]}`, `spec.valuesFrom[0]: kind "Deployment" is not ConfigMap or Secret`},
		"crds policy":     {`{chartRef: {kind: HelmChart, name: c}, upgrade: {crds: Always}}`, `spec.upgrade.crds "Always" is not Skip, Create or CreateReplace`},
		"bad values":      {`{chartRef: {kind: HelmChart, name: c}, values: [1, 2]}`, "HelmRelease/apps/bad: reading spec"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := helm.ParseRelease(releaseObject(t, "v2", "bad", "apps", tc.spec))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	u := releaseObject(t, "v1", "old", "apps", `chartRef: {kind: HelmChart, name: c}`)
	if _, err := helm.ParseRelease(u); err == nil || !strings.Contains(err.Error(), "HelmRelease/apps/old: not a HelmRelease of helm.toolkit.fluxcd.io/v2 or v2beta2") {
		t.Errorf("v1: error %v", err)
	}
}

// TestReleaseName follows helm-controller: [<targetNamespace>-]<name>,
// and a name past 53 characters cut to 40, a dash and 12 hex digits of
// its SHA-256.
func TestReleaseName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 30)
	for name, tc := range map[string]struct {
		r    helm.Release
		want string
	}{
		"name":             {helm.Release{Name: "podinfo"}, "podinfo"},
		"target namespace": {helm.Release{Name: "podinfo", TargetNamespace: "web"}, "web-podinfo"},
		"release name":     {helm.Release{Name: "podinfo", TargetNamespace: "web", ReleaseName: "pi"}, "pi"},
		"53 characters":    {helm.Release{Name: strings.Repeat("b", 53)}, strings.Repeat("b", 53)},
		// 27 + 1 + 30 = 58 characters: "team-observability-platform-aaa...".
		// The hash is printf %s team-observability-platform-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | sha256sum.
		"58 characters": {helm.Release{Name: long, TargetNamespace: "team-observability-platform"},
			"team-observability-platform-aaaaaaaaaaaa-" + "a1c189825e07"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := helm.ReleaseName(&tc.r)
			if got != tc.want {
				t.Errorf("ReleaseName = %q, want %q", got, tc.want)
			}
			if len(got) > 53 {
				t.Errorf("%d characters", len(got))
			}
		})
	}
}

// FuzzParseRelease: any spec a HelmRelease may hold parses or fails with
// an error naming the object, and never panics; what parses composes.
func FuzzParseRelease(f *testing.F) {
	f.Add(`chart: {spec: {chart: a, sourceRef: {kind: HelmRepository, name: r}}}`)
	f.Add(`{chartRef: {kind: OCIRepository, name: o}, values: {a: {b: [1, 2]}}, valuesFrom: [{kind: Secret, name: s, targetPath: "a.b[3]"}]}`)
	f.Add(`{chartRef: {kind: HelmChart, name: c}, postRenderers: [{kustomize: {patches: [{patch: "x", target: {kind: D}}]}}], install: {crds: Skip}}`)
	f.Fuzz(func(t *testing.T, spec string) {
		s := map[string]any{}
		if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
			return
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
			"metadata": map[string]any{"name": "f", "namespace": "ns"}, "spec": s,
		}}
		r, err := helm.ParseRelease(u)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "HelmRelease/ns/f: ") {
				t.Errorf("error without the object: %v", err)
			}
			return
		}
		secret := func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
			return &unstructured.Unstructured{Object: map[string]any{"kind": kind,
				"stringData": map[string]any{"values.yaml": spec}, "data": map[string]any{"values.yaml": spec}}}, true
		}
		_, _ = helm.ComposeValues(r, secret)
	})
}
