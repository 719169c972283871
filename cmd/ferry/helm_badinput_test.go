package main

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/ocisig/cosigntest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// badChartRepo serves the charts of the bad-input cases: web 1.0.0 (the
// shared WebChart fixture), three charts failing in their templates (a
// required value missing on line 6 of templates/deployment.yaml, a
// function that does not exist on line 13, a `fail` quoting a value on
// line 1 of templates/config.yaml), and three whose archives
// cannot be used: broken (not a gzip), huge (unpacks past Helm's bound)
// and mismatch (its index entry has another archive's digest).
func badChartRepo(t *testing.T) *helmtest.Repo {
	t.Helper()
	charts := helmtest.NewRepo(t, helmtest.RepoOptions{})
	charts.Add(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")

	required := helmtest.WebChart("")
	required["Chart.yaml"] = "apiVersion: v2\nname: required\nversion: 1.0.0\n"
	required["templates/deployment.yaml"] = strings.Replace(required["templates/deployment.yaml"],
		"  replicas: {{ .Values.replicas }}\n", "  replicas: {{ required \"replicaCount is required\" .Values.replicaCount }}\n", 1)
	charts.Add(t, testtree.New(t, required), "1.0.0")

	nofunc := helmtest.WebChart("")
	nofunc["Chart.yaml"] = "apiVersion: v2\nname: nofunc\nversion: 1.0.0\n"
	nofunc["templates/deployment.yaml"] = strings.Replace(nofunc["templates/deployment.yaml"],
		"{{ .Values.image.tag }}", "{{ .Values.image.tag | nosuchfunction }}", 1)
	charts.Add(t, testtree.New(t, nofunc), "1.0.0")

	failing := helmtest.WebChart("")
	failing["Chart.yaml"] = "apiVersion: v2\nname: failing\nversion: 1.0.0\n"
	failing["templates/config.yaml"] = "{{ fail (printf \"greeting %q is not allowed\" .Values.greeting) }}\n"
	charts.Add(t, testtree.New(t, failing), "1.0.0")

	good, md := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	md.Name = "broken"
	charts.AddArchive(t, md, []byte("this is not a gzipped tar\n"), helmtest.Digest([]byte("this is not a gzipped tar\n")))
	huge, hmd := helmtest.Oversized(t, "huge", "1.0.0")
	charts.AddArchive(t, hmd, huge, helmtest.Digest(huge))
	md.Name = "mismatch"
	charts.AddArchive(t, md, good, helmtest.Digest([]byte("another archive")))
	return charts
}

// badRelease is the HelmRelease web in namespace ns with the given spec
// fields (indented by two spaces).
func badRelease(ns, spec string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: ` + ns + `
spec:
  interval: 10m
` + spec
}

// fromRepo is a spec.chart of chart at version from the HelmRepository
// charts, with values from the Secret web-values (a SOPS file).
func fromRepo(chart, version string) string {
	return `  chart:
    spec:
      chart: ` + chart + `
      version: "` + version + `"
      sourceRef: {kind: HelmRepository, name: charts}
  valuesFrom:
    - kind: Secret
      name: web-values
`
}

// TestHelmBadInputs runs ferry render and ferry apply on a Flux fleet
// whose one HelmRelease cannot be rendered, one reason a case. Each exits
// 2 naming the HelmRelease and the chart or file at fault; apply sends
// nothing to the cluster (the target's plain ConfigMap and its values
// Secret stay absent); and the value of the SOPS-encrypted Secret the
// release takes values from is in no output.
func TestHelmBadInputs(t *testing.T) {
	charts := badChartRepo(t)
	reg := registrytest.Start(t)
	archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	pushed := helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
	// web 1.0.0 carries a cosign signature, by a key the repository does
	// not trust; web 1.1.0 carries none.
	signer := cosigntest.New(t, reg.Host, reg.Username, reg.Password)
	otherKey, _ := signer.KeyPair("other")
	_, trustedPub := signer.KeyPair("trusted")
	signer.Sign(reg.Host+"/charts/web@"+pushed.Manifest, otherKey, false)
	unsignedArchive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.1.0")
	helmtest.Push(t, reg.Host, "charts", unsignedArchive, reg.Username, reg.Password)
	verified := func(tag string) map[string]string {
		return map[string]string{"oci.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: {ns}
spec:
  interval: 1h
  insecure: true
  url: oci://` + reg.Host + `/charts/web
  ref: {tag: ` + tag + `}
  secretRef: {name: registry-creds}
  verify:
    provider: cosign
    secretRef: {name: cosign-keys}
---
apiVersion: v1
kind: Secret
metadata:
  name: registry-creds
  namespace: {ns}
stringData:
  username: ` + reg.Username + `
  password: ` + reg.Password + `
---
apiVersion: v1
kind: Secret
metadata:
  name: cosign-keys
  namespace: {ns}
stringData:
  cosign.pub: |
` + "    " + strings.ReplaceAll(strings.TrimSpace(string(trustedPub)), "\n", "\n    ") + "\n"}
	}

	type tc struct {
		name  string
		spec  string
		files map[string]string // more files of the target, {ns} the namespace
		want  []string          // in stderr, {ns} the namespace
	}
	cases := []tc{
		{name: "chart not in the repository", spec: fromRepo("nosuch", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart nosuch", charts.URL, `no chart "nosuch"`}},
		{name: "version range matching nothing", spec: fromRepo("web", ">=5.0.0 <6.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart web", `">=5.0.0 <6.0.0"`, charts.URL}},
		{name: "registry 401 with wrong credentials",
			spec: strings.Replace(fromRepo("web", "1.0.0"), "name: charts", "name: registry", 1),
			files: map[string]string{"registry.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: registry
  namespace: {ns}
spec:
  type: oci
  insecure: true
  url: oci://` + reg.Host + `/charts
  secretRef: {name: registry-creds}
---
apiVersion: v1
kind: Secret
metadata:
  name: registry-creds
  namespace: {ns}
stringData:
  username: ` + reg.Username + `
  password: not-the-password
`},
			want: []string{"HelmRelease/{ns}/web", "chart web", reg.Host + "/charts", "refused the credentials"}},
		{name: "registry 401 without credentials",
			spec: "  chartRef: {kind: OCIRepository, name: web}\n",
			files: map[string]string{"oci.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: {ns}
spec:
  interval: 1h
  insecure: true
  url: oci://` + reg.Host + `/charts/web
  ref: {tag: 1.0.0}
`},
			want: []string{"HelmRelease/{ns}/web", reg.Host + "/charts/web", "401 Unauthorized"}},
		{name: "chart signed by a key not trusted", spec: "  chartRef: {kind: OCIRepository, name: web}\n", files: verified("1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "OCIRepository/{ns}/web spec.verify", reg.Host + "/charts/web@" + pushed.Manifest,
				"is not signed by the keys Secret/{ns}/cosign-keys key cosign.pub"}},
		{name: "unsigned chart", spec: "  chartRef: {kind: OCIRepository, name: web}\n", files: verified("1.1.0"),
			want: []string{"HelmRelease/{ns}/web", "OCIRepository/{ns}/web spec.verify", "has no cosign signature"}},
		{name: "corrupt chart archive", spec: fromRepo("broken", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart broken", "corrupt chart archive"}},
		{name: "oversized chart archive", spec: fromRepo("huge", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart huge", "too large"}},
		{name: "template error: required value", spec: fromRepo("required", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart required", "templates/deployment.yaml:6", "replicaCount is required"}},
		{name: "template error: unknown function", spec: fromRepo("nofunc", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart nofunc", "templates/deployment.yaml:13", "nosuchfunction"}},
		{name: "template error quoting a value from a Secret", spec: fromRepo("failing", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart failing", "templates/config.yaml:1", `greeting "***" is not allowed`}},
		{name: "missing valuesFrom ConfigMap",
			spec: fromRepo("web", "1.0.0") + "    - kind: ConfigMap\n      name: web-settings\n",
			want: []string{"HelmRelease/{ns}/web", "chart web 1.0.0", "spec.valuesFrom[1]: ConfigMap/{ns}/web-settings not found"}},
		{name: "digest mismatch", spec: fromRepo("mismatch", "1.0.0"),
			want: []string{"HelmRelease/{ns}/web", "chart mismatch", "digest mismatch"}},
		{name: "GitRepository chart path escaping the repository",
			spec: `  chart:
    spec:
      chart: ../../outside
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`,
			want: []string{"HelmRelease/{ns}/web", "../../outside", "escapes the repository"}},
	}

	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns, invNS := cp.Namespace(t), cp.Namespace(t)
			r := newScenario(t)
			files := map[string]string{
				"source.yaml": helmRepository(ns, charts.URL),
				"web.yaml":    badRelease(ns, c.spec),
				"plain.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: " + ns + "\ndata: {k: v}\n",
			}
			for k, v := range c.files {
				files[k] = strings.ReplaceAll(v, "{ns}", ns)
			}
			testtree.Write(t, r.dir, helmtest.FluxFleet("prod", "apps", files))
			r.encrypt("apps/web-values.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: web-values
  namespace: `+ns+`
stringData:
  values.yaml: "greeting: `+helmCanary+`\n"
`, "^(data|stringData)$")
			vars := r.vars()
			vars["TEST_KUBECONFIG"] = string(cp.Kubeconfig())
			vars["RUNNER_TOOL_CACHE"] = t.TempDir() // the chart cache, never the user's

			runs := map[string]result{
				"render": ferry(t, vars, "render", "--repo", r.dir, "apps"),
				"apply":  ferry(t, vars, "apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS),
			}
			for cmd, res := range runs {
				if res.code != exitError {
					t.Errorf("%s: exit %d, want 2\nstdout: %s\nstderr: %s", cmd, res.code, res.stdout, res.stderr)
				}
				for _, w := range c.want {
					if w = strings.ReplaceAll(w, "{ns}", ns); !strings.Contains(res.stderr, w) {
						t.Errorf("%s: error lacks %q:\n%s", cmd, w, res.stderr)
					}
				}
				if strings.Contains(res.stdout+res.stderr, helmCanary) {
					t.Errorf("%s printed the value of Secret web-values:\n%s\n%s", cmd, res.stdout, res.stderr)
				}
			}
			if !strings.Contains(runs["apply"].stderr, "nothing was applied") {
				t.Errorf("apply does not say nothing was applied:\n%s", runs["apply"].stderr)
			}

			ctx := context.Background()
			for what, get := range map[string]func() error{
				"ConfigMap plain": func() error { _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "plain", metav1.GetOptions{}); return err },
				"Secret web-values": func() error {
					_, err := cs.CoreV1().Secrets(ns).Get(ctx, "web-values", metav1.GetOptions{})
					return err
				},
				"Deployment web": func() error { _, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); return err },
			} {
				if err := get(); !apierrors.IsNotFound(err) {
					t.Errorf("%s: %v, want not found: apply sent the target's objects", what, err)
				}
			}
			parents, err := cs.CoreV1().Secrets(invNS).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelApplySetID})
			if err != nil || len(parents.Items) != 0 {
				t.Errorf("inventories %v (%v), want none written", parents, err)
			}
		})
	}
}
