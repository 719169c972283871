package config_test

import (
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// ociFleet is a fleet whose apps target holds a HelmRelease web of the
// OCIRepository web at host, with the spec lines extra (a secretRef,
// insecure: true).
func ociFleet(host, extra string) map[string]string {
	return helmFleet("http://127.0.0.1:1", map[string]string{
		"web.yaml": helmRelease("web", "  chartRef: {kind: OCIRepository, name: web}\n"),
		"source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: shop
spec:
  interval: 1h
  url: oci://` + host + `/charts/web
  ref: {tag: "1.0.0"}
` + extra,
	})
}

// Without a Secret in the render, a chart source's credentials come from
// the environment, as ferry bump's do: the secretRef's variables, else
// the host's, else the Docker config. A secretRef found nowhere is an
// error naming the Secret and the variable, and no password.
func TestHelmSourceCredentialsFromEnvironment(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
	hostVar, _ := images.RegistryEnv(reg.Host)

	for _, tc := range []struct {
		name    string
		extra   string
		env     map[string]string
		wantErr []string
	}{
		{"secretRef variables", "  insecure: true\n  secretRef: {name: registry}\n",
			map[string]string{"FERRY_SECRET_REGISTRY_USERNAME": reg.Username, "FERRY_SECRET_REGISTRY_PASSWORD": reg.Password}, nil},
		{"host variables", "  insecure: true\n",
			map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": reg.Password}, nil},
		{"host variables stand in for a secretRef", "  insecure: true\n  secretRef: {name: registry}\n",
			map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": reg.Password}, nil},
		{"secretRef found nowhere", "  insecure: true\n  secretRef: {name: registry}\n", nil,
			[]string{"HelmRelease/shop/web", "OCIRepository/shop/web", "Secret/shop/registry", "FERRY_SECRET_REGISTRY_USERNAME"}},
		{"wrong password", "  insecure: true\n",
			map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": "not-the-password-7781"},
			[]string{"HelmRelease/shop/web", "refused"}},
		{"no credentials", "  insecure: true\n", nil, []string{"HelmRelease/shop/web", "without credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testtree.New(t, ociFleet(reg.Host, tc.extra))
			env := images.NewEnvCredentials(func(k string) string { return tc.env[k] })
			repo, err := config.Load(t.Context(), dir, render.Options{ChartCredentials: env})
			if err != nil {
				t.Fatal(err)
			}
			_, err = repo.Render(t.Context(), mustTarget(t, repo, "apps"))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, tc.wantErr...)
			for _, v := range tc.env {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q holds the value %q of a variable", err, v)
				}
			}
		})
	}
}

// capsChart renders what the capabilities say into a ConfigMap.
func capsChart() map[string]string {
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: caps\nversion: 1.0.0\n",
		"templates/caps.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" | quote }}
  metrics: {{ .Capabilities.APIVersions.Has "metrics.k8s.io/v1beta1" | quote }}
  cert: {{ .Capabilities.APIVersions.Has "cert-manager.io/v1" | quote }}
`,
	}
}

// The capabilities rule: a chart sees the kubeVersion and apiVersions
// declared for its cluster in ferry.yaml (else ferry's client version),
// and the APIs of the CRDs any of the cluster's renders defines, not only
// its own target's: another target's CRD counts, another cluster's not.
func TestHelmReleaseCapabilities(t *testing.T) {
	t.Parallel()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, plural: servicemonitors}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`
	files := helmFleet("http://127.0.0.1:1", map[string]string{
		"caps.yaml": helmRelease("caps", `  chart:
    spec:
      chart: ./charts/caps
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`),
	})
	for k, v := range capsChart() {
		files["charts/caps/"+k] = v
	}
	files["clusters/prod/crds.yaml"] = fluxKustomization("crds", "crds", "  prune: true\n")
	files["crds/crd.yaml"] = crd
	ferryYAML := "clusters:\n  prod:\n    kubeVersion: v1.31.4\n    apiVersions: [metrics.k8s.io/v1beta1]\n"

	for _, tc := range []struct {
		name  string
		extra map[string]string
		want  map[string]string
	}{
		{"declared", map[string]string{"ferry.yaml": ferryYAML},
			map[string]string{"kube": "v1.31.4", "monitoring": "true", "metrics": "true", "cert": "false"}},
		{"defaults", nil,
			map[string]string{"kube": "v1.37.0", "monitoring": "true", "metrics": "false", "cert": "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := map[string]string{}
			for k, v := range files {
				f[k] = v
			}
			for k, v := range tc.extra {
				f[k] = v
			}
			repo := load(t, testtree.New(t, f))
			got := renderedData(t, repo, mustTarget(t, repo, "apps"), "shop", "caps")
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// ferry.yaml's kubeVersion and apiVersions are checked when read.
func TestClusterCapabilitiesAreChecked(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"clusters:\n  prod:\n    kubeVersion: latest\n":      `cluster "prod": kubeVersion "latest" is not a version`,
		"clusters:\n  prod:\n    apiVersions: [a/b/c/d]\n":   `cluster "prod": apiVersions: "a/b/c/d"`,
		"clusters:\n  prod:\n    apiVersions: [\"/v1\"]\n":   `cluster "prod": apiVersions: "/v1"`,
		"clusters:\n  prod:\n    helmReleases: controller\n": "",
		"clusters:\n  prod:\n    kubeVersion: \"1.30\"\n":    "",
	} {
		_, err := config.ParseFile([]byte(in))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		wantError(t, err, want)
	}
}

// render.Options.HelmReleases overrides every cluster's setting: a
// cluster left to helm-controller in ferry.yaml renders its charts, and
// the other way round; a bad value is refused.
func TestHelmReleasesOverride(t *testing.T) {
	t.Parallel()
	files := helmFleet("http://127.0.0.1:1", map[string]string{
		"caps.yaml": helmRelease("caps", `  chart:
    spec:
      chart: ./charts/caps
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`),
	})
	for k, v := range capsChart() {
		files["charts/caps/"+k] = v
	}
	files["ferry.yaml"] = "clusters:\n  prod:\n    helmReleases: controller\n"
	dir := testtree.New(t, files)
	for mode, wantCaps := range map[string]bool{"": false, "controller": false, "render": true} {
		repo, err := config.Load(t.Context(), dir, render.Options{HelmReleases: mode})
		if err != nil {
			t.Fatal(err)
		}
		res, err := repo.Render(t.Context(), mustTarget(t, repo, "apps"))
		if err != nil {
			t.Fatal(err)
		}
		has := false
		for _, o := range res.Set.Objects {
			has = has || o.GetKind() == "ConfigMap" && o.GetName() == "caps"
		}
		if has != wantCaps {
			t.Errorf("HelmReleases %q: chart rendered = %v, want %v", mode, has, wantCaps)
		}
	}
	_, err := config.Load(t.Context(), dir, render.Options{HelmReleases: "helm"})
	wantError(t, err, `"helm" is not render or controller`)
}
