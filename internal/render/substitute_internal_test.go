package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
)

// TestSubstituteWithoutDollar: an object substitution cannot change is
// left as it is, and comes out of the render exactly as Flux's
// substitution (its YAML and JSON round trip) would give it back, whatever
// YAML it holds (long integers included); one that mentions a variable is
// substituted.
func TestSubstituteWithoutDollar(t *testing.T) {
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": "flux-system"},
		"spec":     map[string]any{"postBuild": map[string]any{"substitute": map[string]any{"DOMAIN": "example.com"}}},
	}}
	factory := provider.NewDefaultDepProvider().GetResourceFactory()
	docs := map[string]string{
		"scalars": `apiVersion: v1
kind: ConfigMap
metadata: {name: scalars, namespace: apps, annotations: {a: "yes", b: "on", c: "0x1F"}}
data:
  date: 2024-01-01
  when: 2001-12-14t21:59:43.10-05:00
  float: "1.0"
  octal: "0o17"
  empty: ""
  tilde: "~"
  block: |
    line one
      line two
  folded: >
    folded
    text
`,
		"numbers and nulls": `apiVersion: apps/v1
kind: Deployment
metadata: {name: numbers, namespace: apps, labels: {app: numbers}}
spec:
  replicas: 3
  progressDeadlineSeconds: 1.0e3
  revisionHistoryLimit: 0o17
  minReadySeconds: 0x10
  paused: false
  selector: {matchLabels: {app: numbers}}
  template:
    metadata: {labels: {app: numbers}, annotations: {n: null}}
    spec:
      containers:
        - name: app
          image: app:1.0
          args: [--big=12345678901234567890, 1e+06, 18446744073709551615, -9223372036854775808]
          env: []
          resources: {}
`,
		"infinity": `apiVersion: v1
kind: ConfigMap
metadata: {name: inf, namespace: apps}
data: {a: .inf}
`,
		"merge keys": `apiVersion: v1
kind: ConfigMap
metadata: {name: merge, namespace: apps}
data:
  base: &base {x: "1"}
  more:
    <<: *base
    y: "2"
`,
		"dollar": `apiVersion: v1
kind: ConfigMap
metadata: {name: dollar, namespace: apps}
data: {host: "app.${DOMAIN}", price: "$$5", plain: "a"}
`,
	}
	// Which objects are left as they are.
	// (kustomize resolves anchors and merge keys as it reads a file.)
	left := map[string]bool{"scalars": true, "infinity": true, "merge keys": true}
	for name, doc := range docs {
		rs, err := factory.SliceFromBytes([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := !mayChange(rs[0].YNode()); got != left[name] {
			t.Errorf("%s: left as it is %v, want %v", name, got, left[name])
		}
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			out := map[bool]string{}
			for _, fast := range []bool{true, false} {
				s, err := substitution(t.Context(), Spec{Kustomization: ks})
				if err != nil {
					t.Fatal(err)
				}
				if !s.namesValid {
					t.Fatal("DOMAIN taken as an invalid name")
				}
				s.namesValid = fast // false: every object through Flux's substitution
				rs, err := factory.SliceFromBytes([]byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) != 1 {
					t.Fatalf("%d objects", len(rs))
				}
				var r *resource.Resource = rs[0]
				sub, err := s.apply(t.Context(), r)
				if sub != nil {
					r = sub
				}
				var b []byte
				if err == nil {
					b, err = objectJSON(&r.RNode)
				}
				if err != nil { // either way, the object fails the render
					b = []byte("fails")
				}
				out[fast] = string(b)
			}
			if (name == "infinity") != (out[true] == "fails") {
				t.Errorf("left as it is: %s", out[true])
			}
			if out[true] != out[false] {
				t.Errorf("left as it is:\n%s\nthrough Flux's substitution:\n%s", out[true], out[false])
			}
			t.Log(out[true])
		})
	}
}
