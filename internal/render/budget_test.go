package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// copyPatch adds a field and copies it into itself n times, doubling it
// each time.
func copyPatch(indent string, n int) string {
	var b strings.Builder
	b.WriteString(indent + "- {op: add, path: /data/d, value: {x: " + strings.Repeat("y", 64) + "}}\n")
	for i := range n {
		fmt.Fprintf(&b, "%s- {op: copy, from: /data/d, path: /data/d/c%d}\n", indent, i)
	}
	return b.String()
}

// TestBuildBoundsPatchCopies: a JSON patch whose copy operations double
// an object, in a patch file, inline in a kustomization, or in the Flux
// Kustomization's own patches, stops at limits.patchCopySize naming
// where the patch is; a patch that copies within the budget applies.
func TestBuildBoundsPatchCopies(t *testing.T) {
	t.Parallel()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: grow}\ndata: {a: b}\n"
	limits := &budget.Limits{PatchCopySize: 64 << 10}
	for _, tc := range []struct {
		name  string
		files map[string]string
		spec  string
		want  string // the file named; "" for a build that succeeds
	}{
		{name: "patch file", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap}\n    path: grow.yaml\n",
			"app/grow.yaml":          copyPatch("", 40),
		}, want: "app/grow.yaml"},
		{name: "inline patch", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap}\n    patch: |\n" + copyPatch("      ", 40),
		}, want: "app/kustomization.yaml"},
		{name: "Flux Kustomization patches", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\n",
		}, spec: "patches:\n  - target: {kind: ConfigMap}\n    patch: |\n" + copyPatch("      ", 40), want: "app/kustomization.yaml"},
		{name: "a few copies", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap}\n    path: grow.yaml\n",
			"app/grow.yaml":          copyPatch("", 5),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.files["app/cm.yaml"] = cm
			root := testtree.New(t, tc.files)
			_, err := render.Build(context.Background(), render.Spec{Name: "app", Root: root,
				Kustomization: kustomization(t, "path: app\n"+tc.spec)}, render.Options{Limits: limits})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var over *budget.Exceeded
			if !errors.As(err, &over) || over.Limit != "patchCopySize" {
				t.Fatalf("err %v, want limits.patchCopySize", err)
			}
			for _, w := range []string{`target "app"`, tc.want + ": ", "64 KiB"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
