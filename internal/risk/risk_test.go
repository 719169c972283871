package risk_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/risk"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// ids are the risks' IDs with their levels.
func ids(rs []risk.Risk) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Level)+" "+r.ID)
	}
	return out
}

func TestPrunes(t *testing.T) {
	pvc := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: db}\nspec: {accessModes: [ReadWriteOnce]}\n")
	ns := obj(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: db}\n")
	crd := obj(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced}\n")
	kept := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, namespace: db, annotations: {helm.sh/resource-policy: keep}}\n")
	optedOut := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: safe, namespace: db, annotations: {ferry.dev/prune: disabled}}\n")
	plain := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: db}\n")
	var changes []risk.Change
	for _, o := range []*unstructured.Unstructured{pvc, ns, crd, kept, optedOut, plain} {
		changes = append(changes, risk.Change{Base: o, Pruned: true})
	}
	got := ids(risk.Find(risk.Target{Name: "db", Changes: changes}))
	want := []string{
		"destructive prune-kept:ConfigMap/db/keep:prune",
		"destructive prune-crd:CustomResourceDefinition/widgets.example.com:prune",
		"destructive prune-namespace:Namespace/db:prune",
		"destructive prune-data:PersistentVolumeClaim/db/data:prune",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Not pruned (the target does not prune): no risk.
	for i := range changes {
		changes[i].Pruned = false
	}
	if got := risk.Find(risk.Target{Name: "db", Changes: changes}); len(got) != 0 {
		t.Errorf("a target that does not prune: %q", ids(got))
	}
	// The opt-out going away.
	head := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: safe, namespace: db}\n")
	got = ids(risk.Find(risk.Target{Name: "db", Changes: []risk.Change{{Base: optedOut, Head: head}}}))
	if !slices.Equal(got, []string{"warning protection-removed:PersistentVolumeClaim/db/safe:metadata.annotations.ferry.dev/prune"}) {
		t.Errorf("protection removed: %q", got)
	}
}

func TestServedAPIs(t *testing.T) {
	fs := obj(t, "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: ci}\n")
	psp := obj(t, "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata: {name: old}\n")
	current := obj(t, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: ci}\n")
	changes := []risk.Change{{Head: fs}, {Head: psp}, {Head: current}}
	got := risk.Find(risk.Target{Name: "platform", Changes: changes, KubeVersion: "v1.33.2"})
	if want := []string{"refused api-removed:FlowSchema/ci:apiVersion", "refused api-removed:PodSecurityPolicy/old:apiVersion"}; !slices.Equal(ids(got), want) {
		t.Fatalf("1.33: got %q, want %q", ids(got), want)
	}
	if !strings.Contains(got[0].Why, "not served since Kubernetes 1.32") || got[0].Fix != "use flowcontrol.apiserver.k8s.io/v1" {
		t.Errorf("risk %+v", got[0])
	}
	// An older cluster still serves v1beta3, not PodSecurityPolicy.
	got = risk.Find(risk.Target{Name: "platform", Changes: changes, KubeVersion: "1.31"})
	if want := []string{"refused api-removed:PodSecurityPolicy/old:apiVersion"}; !slices.Equal(ids(got), want) {
		t.Errorf("1.31: got %q, want %q", ids(got), want)
	}
	if got := risk.Find(risk.Target{Name: "platform", Changes: changes, KubeVersion: "1.24"}); len(got) != 0 {
		t.Errorf("1.24: got %q", ids(got))
	}
}

func TestFlux(t *testing.T) {
	ks := func(suspend, prune string) *unstructured.Unstructured {
		return obj(t, "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {suspend: "+suspend+", prune: "+prune+"}\n")
	}
	got := ids(risk.Find(risk.Target{Name: "flux", Changes: []risk.Change{{Base: ks("false", "false"), Head: ks("true", "true")}}}))
	want := []string{"warning flux-prune-enabled:Kustomization/flux-system/apps:spec.prune", "warning flux-suspend:Kustomization/flux-system/apps:spec.suspend"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = ids(risk.Find(risk.Target{Name: "flux", Changes: []risk.Change{{Base: ks("true", "true"), Head: ks("false", "true")}}}))
	if !slices.Equal(got, []string{"warning flux-resume:Kustomization/flux-system/apps:spec.suspend"}) {
		t.Errorf("resume: %q", got)
	}
	releases := []risk.Release{
		{ID: "HelmRelease/shop/web", Chart: "web", BaseVersion: "1.4.0", HeadVersion: "1.3.9"},
		{ID: "HelmRelease/shop/api", Chart: "api", BaseVersion: "1.9.0", HeadVersion: "2.0.0"},
		{ID: "HelmRelease/shop/db", Chart: "db", BaseVersion: "1.0.0", HeadVersion: "1.1.0"},
	}
	got = ids(risk.Find(risk.Target{Name: "shop", Releases: releases}))
	if want := []string{"warning chart-major:HelmRelease/shop/api", "warning chart-downgrade:HelmRelease/shop/web"}; !slices.Equal(got, want) {
		t.Errorf("charts: %q, want %q", got, want)
	}
}

func TestDanglingReferences(t *testing.T) {
	deploy := func(extra string) *unstructured.Unstructured {
		return obj(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      serviceAccountName: web
      containers:
      - name: web
        envFrom: [{secretRef: {name: web-env}}, {configMapRef: {name: maybe, optional: true}}]
`+extra)
	}
	base := deploy("")
	head := deploy(`        env: [{name: DB, valueFrom: {secretKeyRef: {name: db-creds, key: url}}}]
      volumes:
      - {name: data, persistentVolumeClaim: {claimName: web-data}}
      - {name: tls, secret: {secretName: web-tls}}
      - {name: cfg, configMap: {name: web-config}}
`)
	cert := obj(t, "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web, namespace: shop}\nspec: {secretName: web-tls}\n")
	cfg := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: shop}\n")
	elsewhere := func(kind, ns, name string) bool { return kind == "PersistentVolumeClaim" && name == "web-data" }
	got := risk.Find(risk.Target{Name: "shop", Provides: elsewhere, Changes: []risk.Change{{Base: base, Head: head}, {Head: cert}, {Head: cfg}}})
	// Only what the change adds and nothing provides: the Secret of the
	// new env var. The ServiceAccount and web-env were there before;
	// web-tls comes from the Certificate, web-config is rendered,
	// web-data is another target's.
	if want := []string{"warning dangling-reference:Deployment/shop/web:Secret/db-creds"}; !slices.Equal(ids(got), want) {
		t.Fatalf("got %q, want %q", ids(got), want)
	}
	if got[0].Head != "Secret/shop/db-creds" {
		t.Errorf("names %q", got[0].Head)
	}
	// The change removes the ConfigMap an unchanged Deployment reads.
	got = risk.Find(risk.Target{Name: "shop", Changes: []risk.Change{{Base: head, Head: head}, {Base: cfg}, {Base: cert, Head: cert}}, Provides: elsewhere})
	if want := []string{"warning dangling-reference:Deployment/shop/web:ConfigMap/web-config"}; !slices.Equal(ids(got), want) || !strings.Contains(got[0].Why, "removes") {
		t.Errorf("a removed ConfigMap: %q %v", ids(got), got)
	}
}

func TestAccept(t *testing.T) {
	ns := obj(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: old}\n")
	pvc := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: old, annotations: {ferry.dev/accept-risk: prune-data}}\n")
	crd := obj(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, names: {kind: Widget, plural: widgets}}\n")
	rs := risk.Find(risk.Target{Name: "app", Changes: []risk.Change{{Base: ns, Pruned: true}, {Base: pvc, Pruned: true}, {Base: crd, Pruned: true}}})
	body := "Retire the old app.\n\n# ferry: accept-risk prune-namespace:Namespace/old:prune\n<!-- ferry: accept-risk nothing:else -->\n"
	accepted := risk.AcceptedIDs(body)
	if !slices.Equal(accepted, []string{"prune-namespace:Namespace/old:prune", "nothing:else"}) {
		t.Fatalf("ids %q", accepted)
	}
	risk.Accept(rs, accepted, map[string]string{"PersistentVolumeClaim/old/data": "prune-data"})
	failing := risk.Failing(rs, risk.Warning)
	if len(failing) != 1 || failing[0].Rule != "prune-crd" {
		t.Errorf("failing %q", ids(failing))
	}
	if len(risk.Failing(rs, risk.Refused)) != 0 {
		t.Error("no refused risk")
	}
	for _, r := range rs {
		if r.Rule == "prune-namespace" && r.Accepted != "pull request" || r.Rule == "prune-data" && !strings.HasPrefix(r.Accepted, "annotation") {
			t.Errorf("%s accepted %q", r.ID, r.Accepted)
		}
	}
	if _, err := risk.ParseLevel("fatal"); err == nil {
		t.Error("a level that does not exist")
	}
}
