package helm_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
)

// objects is a render's ConfigMaps and Secrets for ComposeValues.
type objects []*unstructured.Unstructured

func (o objects) lookup(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	for _, u := range o {
		if u.GetKind() == kind && u.GetNamespace() == namespace && u.GetName() == name {
			return u, true
		}
	}
	return nil, false
}

func configMap(namespace, name string, data map[string]string) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace}, "data": d}}
}

// secret holds data base64-encoded and stringData as given, as a
// decrypted Secret of a render does.
func secret(namespace, name string, data, stringData map[string]string) *unstructured.Unstructured {
	d, s := map[string]any{}, map[string]any{}
	for k, v := range data {
		d[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	for k, v := range stringData {
		s[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": namespace}, "data": d, "stringData": s}}
}

func TestComposeValues(t *testing.T) {
	t.Parallel()
	render := objects{
		configMap("apps", "defaults", map[string]string{
			"values.yaml": "replicas: 1\nimage: {repository: web, tag: \"1.0\"}\ningress: {enabled: false, hosts: [a.example.com]}\n",
			"prod.yaml":   "replicas: 3\ningress: {enabled: true}\n",
			"host":        "b.example.com",
		}),
		secret("apps", "credentials", map[string]string{
			"values.yaml": "image: {tag: \"1.1\"}\ndatabase: {password: from-data}\n",
			"token":       "s3cr3t",
		}, map[string]string{"override.yaml": "database: {password: from-stringData}\n"}),
		configMap("other", "defaults", map[string]string{"values.yaml": "replicas: 99\n"}),
	}
	for name, tc := range map[string]struct {
		spec string
		want map[string]any
	}{
		// ConfigMap, then Secret over it, then inline values over both.
		"order": {`
valuesFrom:
  - {kind: ConfigMap, name: defaults}
  - {kind: Secret, name: credentials}
values:
  replicas: 2`, map[string]any{
			"replicas": float64(2),
			"image":    map[string]any{"repository": "web", "tag": "1.1"},
			"ingress":  map[string]any{"enabled": false, "hosts": []any{"a.example.com"}},
			"database": map[string]any{"password": "from-data"},
		}},
		"reverse order": {`
valuesFrom:
  - {kind: Secret, name: credentials}
  - {kind: ConfigMap, name: defaults}`, map[string]any{
			"replicas": float64(1),
			"image":    map[string]any{"repository": "web", "tag": "1.0"},
			"ingress":  map[string]any{"enabled": false, "hosts": []any{"a.example.com"}},
			"database": map[string]any{"password": "from-data"},
		}},
		"valuesKey": {`
valuesFrom:
  - {kind: ConfigMap, name: defaults}
  - {kind: ConfigMap, name: defaults, valuesKey: prod.yaml}
  - {kind: Secret, name: credentials, valuesKey: override.yaml}`, map[string]any{
			"replicas": float64(3),
			"image":    map[string]any{"repository": "web", "tag": "1.0"},
			"ingress":  map[string]any{"enabled": true, "hosts": []any{"a.example.com"}},
			"database": map[string]any{"password": "from-stringData"},
		}},
		"targetPath": {`
valuesFrom:
  - {kind: Secret, name: credentials, valuesKey: token, targetPath: auth.token}
  - {kind: ConfigMap, name: defaults, valuesKey: host, targetPath: "ingress.hosts[1]"}
values:
  auth: {user: admin}`, map[string]any{
			"auth":    map[string]any{"user": "admin", "token": "s3cr3t"},
			"ingress": map[string]any{"hosts": []any{nil, "b.example.com"}},
		}},
		// helm-controller sets a targetPath on the values composed so far,
		// inline values merged in: it wins over inline values it shares a
		// list or map with.
		"targetPath over inline values": {`
valuesFrom:
  - {kind: Secret, name: credentials, valuesKey: token, targetPath: "hosts[0]"}
  - {kind: ConfigMap, name: defaults}
values:
  hosts: [x.example.com, y.example.com]`, map[string]any{
			"replicas": float64(1),
			"image":    map[string]any{"repository": "web", "tag": "1.0"},
			"ingress":  map[string]any{"enabled": false, "hosts": []any{"a.example.com"}},
			"hosts":    []any{"s3cr3t", "y.example.com"},
		}},
		"optional missing": {`
valuesFrom:
  - {kind: ConfigMap, name: absent, optional: true}
  - {kind: Secret, name: credentials, valuesKey: absent.yaml, optional: true}
  - {kind: ConfigMap, name: defaults, valuesKey: prod.yaml}`, map[string]any{
			"replicas": float64(3),
			"ingress":  map[string]any{"enabled": true},
		}},
		"release namespace, not target": {`
targetNamespace: other
valuesFrom:
  - {kind: ConfigMap, name: defaults, valuesKey: prod.yaml}`, map[string]any{
			"replicas": float64(3),
			"ingress":  map[string]any{"enabled": true},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := parseRelease(t, "web", "apps", "chartRef: {kind: HelmChart, name: web}\n"+tc.spec)
			before := r.Values["hosts"]
			got, err := helm.ComposeValues(r, render.lookup)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, r.Values["hosts"]); diff != "" {
				t.Errorf("ComposeValues changed the release's values (-before +after):\n%s", diff)
			}
		})
	}
}

func TestComposeValuesErrors(t *testing.T) {
	t.Parallel()
	render := objects{
		configMap("apps", "defaults", map[string]string{"values.yaml": "a: 1\n"}),
		secret("apps", "broken", map[string]string{"values.yaml": "password: [unclosed hunter2\n"}, nil),
	}
	for name, tc := range map[string]struct{ spec, want string }{
		"missing ConfigMap": {`valuesFrom: [{kind: ConfigMap, name: absent}]`,
			"spec.valuesFrom[0]: ConfigMap/apps/absent not found"},
		"missing Secret": {`valuesFrom: [{kind: ConfigMap, name: defaults}, {kind: Secret, name: db}]`,
			"spec.valuesFrom[1]: Secret/apps/db not found"},
		"missing key": {`valuesFrom: [{kind: ConfigMap, name: defaults, valuesKey: prod.yaml}]`,
			`spec.valuesFrom[0]: ConfigMap/apps/defaults has no key "prod.yaml"`},
		"Secret not YAML": {`valuesFrom: [{kind: Secret, name: broken}]`,
			`spec.valuesFrom[0]: reading key "values.yaml" of Secret/apps/broken as YAML: the value does not parse`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := parseRelease(t, "web", "apps", "chartRef: {kind: HelmChart, name: web}\n"+tc.spec)
			_, err := helm.ComposeValues(r, render.lookup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error quotes the Secret: %v", err)
			}
		})
	}
}
