package render_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// kustomization builds a Flux Kustomization object from its spec in YAML.
func kustomization(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": "test", "namespace": "flux-system"},
		"spec":       m,
	}}
}

func build(t *testing.T, root, spec string, opts render.Options, lookup render.Lookup) *render.Result {
	t.Helper()
	res, err := render.Build(context.Background(), render.Spec{Name: "test", Root: root, Kustomization: kustomization(t, spec), Lookup: lookup}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func ids(res *render.Result) []string {
	var out []string
	for _, id := range res.Set.IDs() {
		out = append(out, id.String())
	}
	return out
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: web
          image: registry.example.com/web:1.0.0
`

func TestPathWithoutKustomizationRendersEveryYAMLFile(t *testing.T) {
	root := testtree.New(t, map[string]string{
		"infra/ns.yaml":                   "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: infra\n",
		"infra/sub/cm.yml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: infra\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: infra\n",
		"infra/notes.txt":                 "not yaml",
		"infra/nested/kustomization.yaml": "resources: [svc.yaml]\nnamePrefix: nested-\n",
		"infra/nested/svc.yaml":           "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: infra\n",
		"infra/nested/ignored.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-listed\n",
	})
	res := build(t, root, "path: ./infra", render.Options{}, nil)
	want := []string{"Namespace/infra", "ConfigMap/infra/a", "ConfigMap/infra/b", "Service/infra/nested-s"}
	if diff := cmp.Diff(want, ids(res)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(root, "infra", "kustomization.yaml")); !os.IsNotExist(err) {
		t.Errorf("a kustomization.yaml was written into the checkout (stat: %v)", err)
	}
}

func TestFluxSpecFields(t *testing.T) {
	root := testtree.New(t, map[string]string{
		"app/kustomization.yaml": "resources: [deployment.yaml]\ncomponents: [../component]\n",
		"app/deployment.yaml":    deployment,
		"component/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources: [cm.yaml]
`,
		"component/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-component\n",
		"extra/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
labels:
  - pairs: {extra: "yes"}
`,
	})
	res := build(t, root, `
path: ./app
targetNamespace: shop
namePrefix: pre-
nameSuffix: -suf
components: [../extra]
images:
  - name: registry.example.com/web
    newTag: 2.0.0
patches:
  - target: {kind: Deployment}
    patch: |
      - op: replace
        path: /spec/replicas
        value: 3
commonMetadata:
  labels: {team: platform}
  annotations: {owner: ops}
`, render.Options{}, nil)
	want := []string{"ConfigMap/shop/pre-from-component-suf", "Deployment.apps/shop/pre-web-suf"}
	if diff := cmp.Diff(want, ids(res)); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	d := res.Set.Get(manifest.ID{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "pre-web-suf"})
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want 3 (patch)", r)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img := cs[0].(map[string]any)["image"]; img != "registry.example.com/web:2.0.0" {
		t.Errorf("image = %v, want the images: override", img)
	}
	for _, o := range res.Set.Objects {
		if o.GetLabels()["team"] != "platform" || o.GetAnnotations()["owner"] != "ops" {
			t.Errorf("%s: commonMetadata not applied: %v %v", manifest.IDOf(o), o.GetLabels(), o.GetAnnotations())
		}
		if o.GetLabels()["extra"] != "yes" {
			t.Errorf("%s: component from spec.components not applied", manifest.IDOf(o))
		}
	}
	wantFiles := []string{"app/deployment.yaml", "app/kustomization.yaml", "component/cm.yaml", "component/kustomization.yaml", "extra/kustomization.yaml"}
	if diff := cmp.Diff(wantFiles, res.Files); diff != "" {
		t.Errorf("files read (-want +got):\n%s", diff)
	}
}

func TestPostBuildSubstitution(t *testing.T) {
	root := testtree.New(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml, off.yaml]\n",
		"app/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  env: ${cluster_env}
  region: ${region}
  domain: ${domain:=default.example.com}
  token: ${token}
`,
		"app/off.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: raw
  annotations:
    kustomize.toolkit.fluxcd.io/substitute: disabled
data:
  keep: ${cluster_env}
`,
	})
	vars := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cluster-vars", "namespace": "flux-system"},
		"data":     map[string]any{"region": "eu-west-1", "cluster_env": "overridden-by-inline"},
	}}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "cluster-secrets", "namespace": "flux-system"},
		"stringData": map[string]any{"token": "s3cr3t-token"},
	}}
	var asked []string
	lookup := func(_ context.Context, kind, ns, name string) (*unstructured.Unstructured, error) {
		asked = append(asked, kind+"/"+ns+"/"+name)
		for _, o := range []*unstructured.Unstructured{vars, secret} {
			if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
				return o, nil
			}
		}
		return nil, nil
	}
	res := build(t, root, `
path: ./app
postBuild:
  substitute: {cluster_env: staging}
  substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: cluster-secrets}
    - {kind: ConfigMap, name: absent, optional: true}
`, render.Options{}, lookup)
	data, _, _ := unstructured.NestedStringMap(res.Set.Get(manifest.ID{Kind: "ConfigMap", Name: "settings"}).Object, "data")
	want := map[string]string{"env": "staging", "region": "eu-west-1", "domain": "default.example.com", "token": "s3cr3t-token"}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("substituted data (-want +got):\n%s", diff)
	}
	raw, _, _ := unstructured.NestedString(res.Set.Get(manifest.ID{Kind: "ConfigMap", Name: "raw"}).Object, "data", "keep")
	if raw != "${cluster_env}" {
		t.Errorf("substitution ran on an object that disables it: %q", raw)
	}
	if diff := cmp.Diff([]string{"ConfigMap/flux-system/cluster-vars", "Secret/flux-system/cluster-secrets", "ConfigMap/flux-system/absent"}, asked); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}

	_, err := render.Build(context.Background(), render.Spec{Name: "test", Root: root, Lookup: lookup,
		Kustomization: kustomization(t, "path: ./app\npostBuild:\n  substituteFrom:\n    - {kind: ConfigMap, name: absent}\n")}, render.Options{})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap/absent") || !strings.Contains(err.Error(), `target "test"`) {
		t.Errorf("missing substituteFrom ConfigMap: err = %v", err)
	}
}

func TestEncryptedFilesAndNoDecrypt(t *testing.T) {
	key := secretstest.NewKey(t)
	root := testtree.New(t, map[string]string{
		"app/kustomization.yaml": "resources: [deployment.yaml, secret.yaml]\n",
		"app/deployment.yaml":    deployment,
		"app/secret.yaml": string(secretstest.Encrypt(t, "secret.yaml",
			[]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2-but-longer\n"), "^(data|stringData)$", key.Recipient)),
	})
	ids2, err := secrets.ParseIdentities(key.Identity)
	if err != nil {
		t.Fatal(err)
	}
	res := build(t, root, "path: ./app", render.Options{Decryptor: secrets.NewDecryptor(ids2)}, nil)
	if diff := cmp.Diff([]string{"app/secret.yaml"}, res.Encrypted); diff != "" {
		t.Errorf("encrypted files (-want +got):\n%s", diff)
	}
	pw, _, _ := unstructured.NestedString(res.Set.Get(manifest.ID{Kind: "Secret", Name: "db"}).Object, "stringData", "password")
	if pw != "hunter2-but-longer" {
		t.Errorf("password = %q", pw)
	}

	res = build(t, root, "path: ./app", render.Options{NoDecrypt: true}, nil)
	if diff := cmp.Diff([]string{"Deployment.apps/web"}, ids(res)); diff != "" {
		t.Errorf("objects with NoDecrypt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]manifest.ID{{Kind: "Secret", Name: "db"}}, res.Omitted); diff != "" {
		t.Errorf("omitted (-want +got):\n%s", diff)
	}
}

// customSchema is an OpenAPI schema that merges the items of a custom
// resource's list by name; customPatch merges into customCR's items
// under it, and replaces them without it.
const (
	customSchema = `{"definitions": {"v1alpha1.MyKind": {"properties": {"spec": {"properties": {"items": {"type": "array", "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge", "items": {"type": "object"}}}}}, "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "MyKind", "version": "v1alpha1"}]}}}`
	customCR     = "apiVersion: example.com/v1alpha1\nkind: MyKind\nmetadata:\n  name: x\nspec:\n  items:\n    - {name: a, v: 1}\n    - {name: b, v: 1}\n"
	customPatch  = "apiVersion: example.com/v1alpha1\nkind: MyKind\nmetadata:\n  name: x\nspec:\n  items:\n    - {name: b, v: 2}\n"
)

// A kustomization that sets its own OpenAPI schema changes kustomize's
// global state; the next build must not see it.
func TestCustomSchemaDoesNotLeakIntoTheNextBuild(t *testing.T) {
	schema, cr, patch := customSchema, customCR, customPatch
	root := testtree.New(t, map[string]string{
		"with/kustomization.yaml":    "resources: [cr.yaml]\nopenapi:\n  path: schema.json\npatches:\n  - path: patch.yaml\n",
		"with/schema.json":           schema,
		"with/cr.yaml":               cr,
		"with/patch.yaml":            patch,
		"without/kustomization.yaml": "resources: [cr.yaml]\npatches:\n  - path: patch.yaml\n",
		"without/cr.yaml":            cr,
		"without/patch.yaml":         patch,
	})
	count := func(res *render.Result) int {
		items, _, _ := unstructured.NestedSlice(res.Set.Objects[0].Object, "spec", "items")
		return len(items)
	}
	if n := count(build(t, root, "path: ./with", render.Options{}, nil)); n != 2 {
		t.Fatalf("with the schema: %d items, want 2 (merged by name)", n)
	}
	if n := count(build(t, root, "path: ./without", render.Options{}, nil)); n != 1 {
		t.Errorf("without the schema: %d items, want 1 (list replaced): the previous build's schema leaked", n)
	}
}

func TestRemoteBasesAllowedOnlyWhenAsked(t *testing.T) {
	root := testtree.New(t, map[string]string{
		"app/kustomization.yaml": "resources:\n  - github.com/example/base?ref=v1\n",
	})
	_, err := render.Build(context.Background(), render.Spec{Name: "test", Root: root, Kustomization: kustomization(t, "path: ./app")}, render.Options{})
	var re *render.RemoteError
	if err == nil || !errorsAs(err, &re) || re.File != "app/kustomization.yaml" {
		t.Fatalf("err = %v, want a RemoteError about app/kustomization.yaml", err)
	}
}

// TestOrder: the kustomize CLI's order, the legacy one (Namespaces first)
// unless the kustomization sets sortOptions.
func TestOrder(t *testing.T) {
	files := func(sort string) map[string]string {
		return map[string]string{
			"app/kustomization.yaml": "resources:\n- all.yaml\n" + sort,
			"app/all.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: shop\n---\n" +
				"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n",
		}
	}
	for _, tc := range []struct {
		sort string
		want []string
	}{
		{"", []string{"Namespace/shop", "ConfigMap/shop/web", "Deployment.apps/shop/web"}},
		{"sortOptions:\n  order: fifo\n", []string{"Deployment.apps/shop/web", "ConfigMap/shop/web", "Namespace/shop"}},
		{"sortOptions:\n  order: legacy\n  legacySortOptions:\n    orderFirst: [Deployment]\n    orderLast: [Namespace]\n",
			[]string{"Deployment.apps/shop/web", "ConfigMap/shop/web", "Namespace/shop"}},
	} {
		res := build(t, testtree.New(t, files(tc.sort)), "path: ./app", render.Options{}, nil)
		if d := cmp.Diff(tc.want, ids(res)); d != "" {
			t.Errorf("%q: order (-want +got):\n%s", tc.sort, d)
		}
	}
}
