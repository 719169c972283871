package resourceset_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/resourceset"
)

// FuzzExpand feeds Expand arbitrary resourcesTemplate text and input
// values: it must not panic, and every failure must name the ResourceSet.
func FuzzExpand(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.v >>\n", "a")
	f.Add("<< range $i := until 3 >>\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x<< $i >>\n<< end >>", "b")
	f.Add("a: &a [1]\nb: *a\n", "c")
	f.Add("<< inputs.v | toYaml | nindent 2 >>", "- x")
	f.Add("<< fail inputs.v >>", "boom")
	f.Fuzz(func(t *testing.T, text, value string) {
		rs := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fluxcd.controlplane.io/v1",
			"kind":       "ResourceSet",
			"metadata":   map[string]any{"name": "fuzz", "namespace": "apps"},
			"spec": map[string]any{
				"inputs":            []any{map[string]any{"v": value}},
				"resourcesTemplate": text,
			},
		}}
		res, err := resourceset.Expand(context.Background(), rs, resourceset.Options{})
		if err != nil {
			var skip *resourceset.SkipError
			if !strings.HasPrefix(err.Error(), "ResourceSet/apps/fuzz: ") && !errors.As(err, &skip) {
				t.Fatalf("error without the ResourceSet: %v", err)
			}
			return
		}
		for _, o := range res.Objects {
			if o.Object.GetKind() == "" || o.Object.GetName() == "" {
				t.Fatalf("object without kind or name: %v", o.Object.Object)
			}
		}
	})
}
