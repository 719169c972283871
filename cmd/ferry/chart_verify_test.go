package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/ocisig/cosigntest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// TestKeylessChartSignatures: an OCIRepository whose spec.verify asks
// for a keyless signature by a CI identity renders and applies when the
// step names a trusted root (FERRY_SIGSTORE_TRUSTED_ROOT) that vouches
// for the signature; without one, or with one that is not a trusted
// root, ferry exits 2 naming the variable, and nothing is applied.
func TestKeylessChartSignatures(t *testing.T) {
	reg := registrytest.Start(t)
	archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	pushed := helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
	ss := cosigntest.NewSigstore(t)
	ref, err := name.NewDigest(reg.Host + "/charts/web@" + pushed.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	ss.SignBundle(ref, "https://github.com/acme/charts/.github/workflows/release.yaml@refs/tags/v1.0.0", "https://token.actions.githubusercontent.com",
		cosigntest.Auth(reg.Username, reg.Password))
	rootFile := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(rootFile, ss.TrustedRoot, 0o600); err != nil {
		t.Fatal(err)
	}
	notRoot := filepath.Join(t.TempDir(), "not-a-root.json")
	if err := os.WriteFile(notRoot, []byte(`{"mediaType": "something else"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	r := newScenario(t)
	testtree.Write(t, r.dir, helmtest.FluxFleet("prod", "apps", map[string]string{
		"web.yaml": badRelease(ns, "  chartRef: {kind: OCIRepository, name: web}\n"),
		"oci.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: ` + ns + `
spec:
  interval: 1h
  insecure: true
  url: oci://` + reg.Host + `/charts/web
  ref: {tag: 1.0.0}
  verify:
    provider: cosign
    matchOIDCIdentity:
      - issuer: ^https://token\.actions\.githubusercontent\.com$
        subject: ^https://github\.com/acme/charts/\.github/workflows/release\.yaml@refs/tags/v.*$
`,
	}))
	hostVar, _ := images.RegistryEnv(reg.Host)
	base := r.vars()
	base["TEST_KUBECONFIG"] = string(cp.Kubeconfig())
	base["RUNNER_TOOL_CACHE"] = t.TempDir()
	base[hostVar+"_USERNAME"], base[hostVar+"_PASSWORD"] = reg.Username, reg.Password
	with := func(root string) map[string]string {
		v := map[string]string{}
		for k, val := range base {
			v[k] = val
		}
		if root != "" {
			v["FERRY_SIGSTORE_TRUSTED_ROOT"] = root
		}
		return v
	}
	apply := []string{"apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS}

	for _, tc := range []struct {
		name, root string
		want       []string
	}{
		{"no trusted root", "", []string{"OCIRepository/" + ns + "/web spec.verify", "FERRY_SIGSTORE_TRUSTED_ROOT"}},
		{"not a trusted root", notRoot, []string{notRoot + " ($FERRY_SIGSTORE_TRUSTED_ROOT) is not a Sigstore trusted root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{{"render", "--repo", r.dir, "apps"}, apply} {
				res := ferry(t, with(tc.root), args...)
				if res.code != exitError {
					t.Fatalf("%s: exit %d, want 2:\n%s", args[0], res.code, res.stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(res.stderr, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", args[0], w, res.stderr)
					}
				}
			}
			if _, err := kubernetes.NewForConfigOrDie(cp.RESTConfig()).CoreV1().ConfigMaps(ns).Get(context.Background(), "web-config", metav1.GetOptions{}); err == nil {
				t.Error("the chart's ConfigMap was applied")
			}
		})
	}
	// The root as a file, then as JSON in the variable.
	res := ferry(t, with(rootFile), "render", "--repo", r.dir, "apps")
	if res.code != 0 || !strings.Contains(res.stdout, "name: web-config") {
		t.Fatalf("render: exit %d:\n%s", res.code, res.stderr)
	}
	if res := ferry(t, with(string(ss.TrustedRoot)), apply...); res.code != 0 {
		t.Fatalf("apply: exit %d:\n%s", res.code, res.stderr)
	}
	if _, err := kubernetes.NewForConfigOrDie(cp.RESTConfig()).CoreV1().ConfigMaps(ns).Get(context.Background(), "web-config", metav1.GetOptions{}); err != nil {
		t.Errorf("the chart's ConfigMap was not applied: %v", err)
	}
}
