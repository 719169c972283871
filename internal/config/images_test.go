package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// A fleet repository's image automation objects: one ImageRepository
// feeding two policies (api-* and sherpa-* tags of one image), one with a
// secretRef, v1beta2 and v1 side by side, and the same policy in two
// clusters.
var fleetImages = map[string]string{
	"clusters/staging/images.yaml": `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageRepository
metadata:
  name: mono
  namespace: flux-system
spec:
  image: ghcr.io/org/mono
  interval: 5m
  secretRef:
    name: ghcr-cred
  exclusionList: ["^.*\\.sig$", "^debug-"]
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata:
  name: api
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: mono
  filterTags:
    pattern: '^api-(?P<version>.*)$'
    extract: '$version'
  policy:
    semver:
      range: '>=0.20.0'
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: sherpa
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: mono
  filterTags:
    pattern: '^sherpa-(?P<version>.*)$'
    extract: '$version'
  policy:
    semver:
      range: '>=0.20.0-0'
  digestReflectionPolicy: Always
`,
	"clusters/production/images.yaml": `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: build
  namespace: apps
spec:
  image: registry.example.com:5000/team/build
  insecure: true
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: build
  namespace: apps
spec:
  imageRepositoryRef:
    name: build
  policy:
    numerical:
      order: asc
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: release
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: build
    namespace: apps
  policy:
    alphabetical: {}
`,
	// The same policy again, as a second cluster declares it.
	"clusters/production/api.yaml": `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata:
  name: api
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: mono
  filterTags:
    pattern: '^api-(?P<version>.*)$'
    extract: '$version'
  policy:
    semver:
      range: '>=0.20.0'
`,
	"apps/app/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n",
}

func TestImagePoliciesFromFluxObjects(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, fleetImages)
	got, err := config.ImagePolicies(dir)
	if err != nil {
		t.Fatal(err)
	}
	mono := func(p images.Policy) *images.Policy {
		p.Repository, p.Image, p.SecretRef = "mono", "ghcr.io/org/mono", "ghcr-cred"
		p.ExclusionList = []string{`^.*\.sig$`, "^debug-"}
		p.Namespace = "flux-system"
		return &p
	}
	want := []*images.Policy{
		{Name: "build", Namespace: "apps", Repository: "build", Origin: "clusters/production/images.yaml:10",
			Image: "registry.example.com:5000/team/build", Insecure: true, Numerical: &images.OrderPolicy{Order: "asc"}},
		mono(images.Policy{Name: "api", Origin: "clusters/production/api.yaml:1",
			FilterTags: &images.TagFilter{Pattern: "^api-(?P<version>.*)$", Extract: "$version"},
			SemVer:     &images.SemVerPolicy{Range: ">=0.20.0"}}),
		{Name: "release", Namespace: "flux-system", Repository: "build", Origin: "clusters/production/images.yaml:22",
			Image: "registry.example.com:5000/team/build", Insecure: true, Alphabetical: &images.OrderPolicy{}},
		mono(images.Policy{Name: "sherpa", Origin: "clusters/staging/images.yaml:28",
			FilterTags:             &images.TagFilter{Pattern: "^sherpa-(?P<version>.*)$", Extract: "$version"},
			SemVer:                 &images.SemVerPolicy{Range: ">=0.20.0-0"},
			DigestReflectionPolicy: "Always"}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ImagePolicies (-want +got):\n%s", diff)
	}
}

func TestImagePoliciesFromFerryYAML(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"ferry.yaml": `targets:
  - name: stage
    path: apps/stage
imagePolicies:
  - name: app
    image: 127.0.0.1:5000/team/app
    secretRef: {name: regcred}
    policy:
      semver: {range: ">=1.0.0"}
  - name: build
    namespace: apps
    image: registry.example.com/team/build
    exclusionList: ["^latest$"]
    insecure: true
    filterTags:
      pattern: '^main-(?P<ts>\d+)$'
      extract: $ts
    policy:
      numerical: {order: desc}
    digestReflectionPolicy: IfNotPresent
`,
	}
	// Flux objects are not read when ferry.yaml declares policies.
	for k, v := range fleetImages {
		files[k] = v
	}
	got, err := config.ImagePolicies(testtree.New(t, files))
	if err != nil {
		t.Fatal(err)
	}
	want := []*images.Policy{
		{Name: "build", Namespace: "apps", Origin: "ferry.yaml:10", Image: "registry.example.com/team/build",
			ExclusionList: []string{"^latest$"}, Insecure: true,
			FilterTags: &images.TagFilter{Pattern: `^main-(?P<ts>\d+)$`, Extract: "$ts"},
			Numerical:  &images.OrderPolicy{Order: "desc"}, DigestReflectionPolicy: "IfNotPresent"},
		{Name: "app", Namespace: "flux-system", Origin: "ferry.yaml:5", Image: "127.0.0.1:5000/team/app",
			SecretRef: "regcred", SemVer: &images.SemVerPolicy{Range: ">=1.0.0"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ImagePolicies (-want +got):\n%s", diff)
	}
}

func TestImagePoliciesErrors(t *testing.T) {
	t.Parallel()
	policyDoc := func(name, repo, rng string) string {
		return "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: " + name + ", namespace: flux-system}\nspec:\n  imageRepositoryRef: {name: " + repo + "}\n  policy: {semver: {range: '" + rng + "'}}\n"
	}
	repoDoc := "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: app, namespace: flux-system}\nspec: {image: ghcr.io/org/app}\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"policy without its repository",
			map[string]string{"c/p.yaml": policyDoc("app", "missing", "*")},
			[]string{"ImagePolicy/flux-system/app (c/p.yaml:1)", "ImageRepository/flux-system/missing is not in the repository"}},
		{"the same policy twice, differently",
			map[string]string{"a/p.yaml": repoDoc + "---\n" + policyDoc("app", "app", ">=1.0.0"), "b/p.yaml": policyDoc("app", "app", ">=2.0.0")},
			[]string{"ImagePolicy/flux-system/app is declared twice, differently: a/p.yaml:6 and b/p.yaml:1"}},
		{"repository without an image",
			map[string]string{"r.yaml": "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: app}\nspec: {interval: 1m}\n"},
			[]string{"ImageRepository/flux-system/app (r.yaml:1)", "spec.image is required"}},
		{"a field of the wrong type",
			map[string]string{"r.yaml": repoDoc + "---\n" + "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: app}\nspec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: [1]}}\n"},
			[]string{"ImagePolicy/flux-system/app (r.yaml:6)", "range"}},
		{"ferry.yaml policy without an image",
			map[string]string{"ferry.yaml": "imagePolicies: [{name: app, policy: {semver: {range: '*'}}}]\n"},
			[]string{"ferry.yaml", `image policy "app": image is required`}},
		{"ferry.yaml policy declared twice",
			map[string]string{"ferry.yaml": "imagePolicies: [{name: app, image: a}, {name: app, namespace: flux-system, image: b}]\n"},
			[]string{"ferry.yaml", `image policy "flux-system/app" is declared twice`}},
		{"ferry.yaml unknown policy field",
			map[string]string{"ferry.yaml": "imagePolicies:\n  - name: app\n    image: a\n    policy: {semver: {rnage: '*'}}\n"},
			[]string{"ferry.yaml", "line 4", `unknown field "rnage"`}},
		{"ferry.yaml name with a colon",
			map[string]string{"ferry.yaml": "imagePolicies: [{name: 'a:b', image: a}]\n"},
			[]string{"ferry.yaml", "cannot contain ':'"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps, err := config.ImagePolicies(testtree.New(t, tc.files))
			if ps != nil {
				t.Errorf("ImagePolicies returned %d policies along with the error", len(ps))
			}
			wantError(t, err, tc.want...)
		})
	}
}
