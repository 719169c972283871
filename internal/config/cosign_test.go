package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/ocisig"
	"github.com/ferry-ci/ferry/internal/ocisig/cosigntest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// keysSecret is a Secret shop/cosign-keys holding pub as cosign.pub.
func keysSecret(pub []byte) string {
	return `apiVersion: v1
kind: Secret
metadata:
  name: cosign-keys
  namespace: shop
stringData:
  cosign.pub: |
` + indent(string(pub), "    ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

// TestChartSignatures pushes a chart to a real registry, signs it with
// the real cosign, and renders an OCIRepository with spec.verify: the
// signed chart renders; re-pushed unsigned, or signed by another key, it
// is refused with the OCIRepository named. Keys come from the Secret in
// the render or from FERRY_SECRET_<NAME>_COSIGN_PUB; keyless signatures
// from a trusted root the run names.
func TestChartSignatures(t *testing.T) {
	reg := registrytest.Start(t)
	auth := cosigntest.Auth(reg.Username, reg.Password)
	c := cosigntest.New(t, reg.Host, reg.Username, reg.Password)
	trustedKey, trustedPub := c.KeyPair("trusted")
	otherKey, _ := c.KeyPair("other")
	hostVar, _ := images.RegistryEnv(reg.Host)
	env := map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": reg.Password}

	// Each tag is its own chart version, signed (or not) its own way.
	push := func(version string) name.Digest {
		archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), version)
		p := helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
		d, err := name.NewDigest(reg.Host + "/charts/web@" + p.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	c.Sign(push("1.0.0").String(), trustedKey, false)
	c.Sign(push("1.1.0").String(), trustedKey, true)
	push("1.2.0")
	c.Sign(push("1.3.0").String(), otherKey, false)
	ss := cosigntest.NewSigstore(t)
	const issuer, subject = "https://token.actions.githubusercontent.com", "https://github.com/acme/charts/.github/workflows/release.yaml@refs/heads/main"
	ss.SignBundle(push("1.4.0"), subject, issuer, auth)
	// 1.5.0 is signed, then pushed again unsigned: the tag now names an
	// artifact no one signed.
	c.Sign(push("1.5.0").String(), trustedKey, false)
	push("1.5.0")

	byKey := "  verify:\n    provider: cosign\n    secretRef: {name: cosign-keys}\n"
	keyless := "  verify:\n    provider: cosign\n    matchOIDCIdentity:\n    - {issuer: '^https://token\\.actions\\.githubusercontent\\.com$', subject: '^https://github\\.com/acme/.*$'}\n"
	root := string(ss.TrustedRoot)
	for _, tc := range []struct {
		name, tag, verify string
		secret            bool
		env               map[string]string
		root              string
		wantErr           []string
	}{
		{name: "bundle", tag: "1.0.0", verify: byKey, secret: true},
		{name: "simple signing", tag: "1.1.0", verify: byKey, secret: true},
		{name: "key from the variable", tag: "1.0.0", verify: byKey, env: map[string]string{"FERRY_SECRET_COSIGN__KEYS_COSIGN_PUB": string(trustedPub)}},
		{name: "unsigned", tag: "1.2.0", verify: byKey, secret: true,
			wantErr: []string{"HelmRelease/shop/web", "OCIRepository/shop/web spec.verify", "has no cosign signature", "Secret/shop/cosign-keys key cosign.pub"}},
		{name: "another key", tag: "1.3.0", verify: byKey, secret: true,
			wantErr: []string{"OCIRepository/shop/web spec.verify", "is not signed by the keys Secret/shop/cosign-keys key cosign.pub"}},
		{name: "re-pushed unsigned", tag: "1.5.0", verify: byKey, secret: true,
			wantErr: []string{"OCIRepository/shop/web spec.verify", "has no cosign signature"}},
		{name: "no verify, no check", tag: "1.2.0"},
		{name: "keys found nowhere", tag: "1.0.0", verify: byKey,
			wantErr: []string{"OCIRepository/shop/web spec.verify", "Secret/shop/cosign-keys is not in the renders", "FERRY_SECRET_COSIGN__KEYS_COSIGN_PUB is not set"}},
		{name: "keyless", tag: "1.4.0", verify: keyless, root: root},
		{name: "keyless, key-signed", tag: "1.0.0", verify: keyless, root: root,
			wantErr: []string{"OCIRepository/shop/web spec.verify", "is not signed by keyless signers"}},
		{name: "keyless without a trusted root", tag: "1.4.0", verify: keyless,
			wantErr: []string{"OCIRepository/shop/web spec.verify", "FERRY_SIGSTORE_TRUSTED_ROOT"}},
		{name: "notation", tag: "1.0.0", verify: "  verify: {provider: notation, secretRef: {name: cosign-keys}}\n", secret: true,
			wantErr: []string{"OCIRepository/shop/web spec.verify", "notation"}},
		{name: "nothing to verify with", tag: "1.0.0", verify: "  verify: {provider: cosign}\n",
			wantErr: []string{"OCIRepository/shop/web spec.verify", "no key (secretRef) and no matchOIDCIdentity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := ociFleet(reg.Host, "  insecure: true\n"+tc.verify)
			files["apps/source.yaml"] = strings.Replace(files["apps/source.yaml"], `ref: {tag: "1.0.0"}`, `ref: {tag: "`+tc.tag+`"}`, 1)
			if tc.secret {
				files["apps/keys.yaml"] = keysSecret(trustedPub)
			}
			vars := map[string]string{}
			for k, v := range env {
				vars[k] = v
			}
			for k, v := range tc.env {
				vars[k] = v
			}
			opts := render.Options{ChartCredentials: images.NewEnvCredentials(func(k string) string { return vars[k] })}
			if tc.root != "" {
				r, err := ocisig.LoadRoot(tc.root, nil)
				if err != nil {
					t.Fatal(err)
				}
				opts.SigstoreRoot = r
			}
			repo, err := config.Load(t.Context(), testtree.New(t, files), opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := repo.Render(t.Context(), mustTarget(t, repo, "apps"))
			if tc.wantErr != nil {
				wantError(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Set.Get(manifest.ID{Kind: "ConfigMap", Namespace: "shop", Name: "web-config"}) == nil {
				t.Errorf("the chart's ConfigMap is not rendered: %v", res.Set.IDs())
			}
		})
	}
}

// A pull request cannot drop the spec.verify its base has: the head's
// OCIRepository without it, on an unsigned chart, is still refused.
func TestChartSignaturesKeptFromTheBase(t *testing.T) {
	reg := registrytest.Start(t)
	c := cosigntest.New(t, reg.Host, reg.Username, reg.Password)
	_, pub := c.KeyPair("trusted")
	archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), "1.0.0")
	helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
	hostVar, _ := images.RegistryEnv(reg.Host)
	env := map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": reg.Password}
	opts := render.Options{ChartCredentials: images.NewEnvCredentials(func(k string) string { return env[k] })}

	base := ociFleet(reg.Host, "  insecure: true\n  verify:\n    provider: cosign\n    secretRef: {name: cosign-keys}\n")
	base["apps/keys.yaml"] = keysSecret(pub)
	head := ociFleet(reg.Host, "  insecure: true\n")
	head["apps/keys.yaml"] = keysSecret(pub)
	_, proposed, baseErr, headErr := config.LoadRevisions(t.Context(), testtree.New(t, base), testtree.New(t, head), opts)
	if baseErr != nil || headErr != nil {
		t.Fatal(baseErr, headErr)
	}
	_, err := proposed.Render(t.Context(), mustTarget(t, proposed, "apps"))
	wantError(t, err, "OCIRepository/shop/web spec.verify", "has no cosign signature")

	// Alone, the head renders the unsigned chart: the check above came
	// from the base.
	repo, err := config.Load(t.Context(), testtree.New(t, head), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Render(t.Context(), mustTarget(t, repo, "apps")); err != nil {
		t.Fatal(err)
	}
}

// spec.verify of a HelmRelease's chart template and of a HelmChart, for
// charts of an OCI HelmRepository, is checked as an OCIRepository's is.
func TestChartSignaturesOfHelmRepositoryCharts(t *testing.T) {
	reg := registrytest.Start(t)
	c := cosigntest.New(t, reg.Host, reg.Username, reg.Password)
	key, pub := c.KeyPair("trusted")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		archive, _ := helmtest.Package(t, testtree.New(t, helmtest.WebChart("")), v)
		p := helmtest.Push(t, reg.Host, "charts", archive, reg.Username, reg.Password)
		if v == "1.0.0" {
			c.Sign(reg.Host+"/charts/web@"+p.Manifest, key, false)
		}
	}
	hostVar, _ := images.RegistryEnv(reg.Host)
	env := map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": reg.Password}
	opts := render.Options{ChartCredentials: images.NewEnvCredentials(func(k string) string { return env[k] })}
	source := `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: oci
  namespace: shop
spec:
  type: oci
  insecure: true
  interval: 1h
  url: oci://` + reg.Host + `/charts
`
	verify := "      verify: {provider: cosign, secretRef: {name: cosign-keys}}\n"
	template := func(version string) string {
		return "  chart:\n    spec:\n      chart: web\n      version: \"" + version + "\"\n      sourceRef: {kind: HelmRepository, name: oci}\n" + verify
	}
	helmChart := func(version string) string {
		return `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: web
  namespace: shop
spec:
  interval: 1h
  chart: web
  version: "` + version + `"
  sourceRef: {kind: HelmRepository, name: oci}
  verify: {provider: cosign, secretRef: {name: cosign-keys}}
`
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		wantErr []string
	}{
		{"chart template, signed", map[string]string{"web.yaml": helmRelease("web", template("1.0.0"))}, nil},
		{"chart template, unsigned", map[string]string{"web.yaml": helmRelease("web", template("1.1.0"))},
			[]string{"HelmRelease/shop/web spec.chart.spec.verify", "has no cosign signature"}},
		{"HelmChart, signed", map[string]string{"web.yaml": helmRelease("web", "  chartRef: {kind: HelmChart, name: web}\n"), "chart.yaml": helmChart("1.0.0")}, nil},
		{"HelmChart, unsigned", map[string]string{"web.yaml": helmRelease("web", "  chartRef: {kind: HelmChart, name: web}\n"), "chart.yaml": helmChart("1.1.0")},
			[]string{"HelmChart/shop/web spec.verify", "has no cosign signature"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files["source.yaml"] = source
			tc.files["keys.yaml"] = keysSecret(pub)
			repo, err := config.Load(t.Context(), testtree.New(t, helmFleet("http://127.0.0.1:1", tc.files)), opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = repo.Render(t.Context(), mustTarget(t, repo, "apps"))
			if tc.wantErr != nil {
				wantError(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
