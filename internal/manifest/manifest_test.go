package manifest_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestIDAndFileName(t *testing.T) {
	tests := []struct {
		obj      *unstructured.Unstructured
		id, file string
	}{
		{obj("v1", "Namespace", "", "shop"), "Namespace/shop", "namespace_shop.yaml"},
		{obj("apps/v1", "Deployment", "shop", "web"), "Deployment.apps/shop/web", "deployment.apps_shop_web.yaml"},
		{obj("v1", "Secret", "shop", "db"), "Secret/shop/db", "secret_shop_db.yaml"},
		{obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:view"), "ClusterRole.rbac.authorization.k8s.io/system:view", "clusterrole.rbac.authorization.k8s.io_system:view.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			if got := manifest.IDOf(tc.obj).String(); got != tc.id {
				t.Errorf("ID = %q, want %q", got, tc.id)
			}
			if got := manifest.FileName(tc.obj); got != tc.file {
				t.Errorf("FileName = %q, want %q", got, tc.file)
			}
		})
	}
}

// hookObj is obj marked as a Helm hook of phase.
func hookObj(phase, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := obj(apiVersion, kind, ns, name)
	u.SetAnnotations(map[string]string{manifest.HelmHookAnnotation: phase})
	return u
}

func TestSortByWave(t *testing.T) {
	objs := []*unstructured.Unstructured{
		hookObj(manifest.HookPost, "v1", "ConfigMap", "a", "done"),
		obj("apps/v1", "Deployment", "b", "web"),
		hookObj(manifest.HookPre, "batch/v1", "Job", "b", "migrate"),
		hookObj(manifest.HookPrePost, "batch/v1", "Job", "b", "check"),
		hookObj(manifest.HookPre, "rbac.authorization.k8s.io/v1", "ClusterRole", "", "migrator"),
		obj("v1", "ConfigMap", "a", "cfg"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
		obj("v1", "Namespace", "", "b"),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com"),
		obj("v1", "Namespace", "", "a"),
	}
	manifest.Sort(objs)
	var got []string
	for _, o := range objs {
		got = append(got, manifest.IDOf(o).String())
	}
	want := []string{
		"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com",
		"Namespace/a", "Namespace/b",
		"ClusterRole.rbac.authorization.k8s.io/migrator", "Job.batch/b/check", "Job.batch/b/migrate",
		"ClusterRole.rbac.authorization.k8s.io/reader",
		"ConfigMap/a/cfg", "Deployment.apps/b/web",
		"ConfigMap/a/done",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestSetYAML(t *testing.T) {
	s := manifest.Set{Objects: []*unstructured.Unstructured{obj("v1", "Namespace", "", "a"), obj("v1", "ConfigMap", "a", "c")}}
	got, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("YAML (-want +got):\n%s", diff)
	}
}

func TestHookPhases(t *testing.T) {
	for _, tc := range []struct {
		value     string
		pre, post bool
	}{
		{manifest.HookPre, true, false},
		{manifest.HookPost, false, true},
		{manifest.HookPrePost, true, true},
		{"", false, false},
		{"post,pre", false, false},
	} {
		u := hookObj(tc.value, "batch/v1", "Job", "b", "check")
		if pre, post := manifest.HookPhases(u); pre != tc.pre || post != tc.post {
			t.Errorf("%q: pre %v post %v, want %v %v", tc.value, pre, post, tc.pre, tc.post)
		}
	}
}

// TestUnique: identities repeat only as the API server would see them
// repeat: the namespace of a cluster-scoped object does not count, the
// version never does; each repetition is reported with both origins.
func TestUnique(t *testing.T) {
	clusterScoped := map[string]bool{"ClusterRole": true, "Namespace": true}
	namespaced := func(u *unstructured.Unstructured) bool { return !clusterScoped[u.GetKind()] }
	origin := func(u *unstructured.Unstructured) string { return u.GetAnnotations()["origin"] }
	from := func(u *unstructured.Unstructured, where string) *unstructured.Unstructured {
		u.SetAnnotations(map[string]string{"origin": where})
		return u
	}
	tests := []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{
		{"distinct", []*unstructured.Unstructured{
			obj("v1", "ConfigMap", "a", "x"), obj("v1", "ConfigMap", "b", "x"), obj("v1", "Secret", "a", "x"),
			obj("example.com/v1", "ConfigMap", "a", "x"), obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "x"),
		}, nil},
		{"same identity", []*unstructured.Unstructured{
			from(obj("v1", "ConfigMap", "a", "x"), "one.yaml"), from(obj("v1", "ConfigMap", "a", "x"), "two.yaml"),
		}, []string{"ConfigMap/a/x is defined twice: by one.yaml and by two.yaml"}},
		{"another version", []*unstructured.Unstructured{
			from(obj("autoscaling/v1", "HorizontalPodAutoscaler", "a", "x"), "v1.yaml"), from(obj("autoscaling/v2", "HorizontalPodAutoscaler", "a", "x"), "v2.yaml"),
		}, []string{"HorizontalPodAutoscaler.autoscaling/a/x is defined twice: by v1.yaml and by v2.yaml"}},
		{"cluster-scoped, one with a namespace", []*unstructured.Unstructured{
			from(obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "x"), "plain.yaml"), from(obj("rbac.authorization.k8s.io/v1", "ClusterRole", "shop", "x"), "chart"),
		}, []string{"ClusterRole.rbac.authorization.k8s.io/x is defined twice: by plain.yaml and by chart"}},
		{"three times", []*unstructured.Unstructured{
			from(obj("v1", "ConfigMap", "a", "x"), "1"), from(obj("v1", "ConfigMap", "a", "x"), "2"), from(obj("v1", "ConfigMap", "a", "x"), "3"),
		}, []string{"ConfigMap/a/x is defined twice: by 1 and by 2", "ConfigMap/a/x is defined twice: by 1 and by 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := manifest.Unique(tc.objs, namespaced, origin)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
