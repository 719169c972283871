package resourceset_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/testbin"
)

// TestExpandMatchesOracle renders every fixture under testdata with
// `flux-operator build rset` (v0.59.0, built by hack/fluxoperator.sh) and
// with Expand, and wants the same objects in the same order: same
// content, the operator's ownership labels included. The fixtures keep to
// what both agree on; the package doc lists where ferry departs from the
// CLI, and TestDeparturesFromOracle shows each.
func TestExpandMatchesOracle(t *testing.T) {
	bin := testbin.Tool(t, "flux-operator", "tools")
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			f := loadFixture(t, dir)
			want := objectMaps(oracle(t, bin, dir))
			got := objectMaps(f.expand(t).Unstructured())
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("objects differ from flux-operator build rset (-oracle +ferry):\n%s", diff)
			}
		})
	}
}

// oracle runs flux-operator build rset on a fixture folder.
func oracle(t *testing.T, bin, dir string) []*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"build", "rset", "-f", filepath.Join(dir, "rset.yaml")}
	if len(readObjects(t, filepath.Join(dir, "providers.yaml"))) > 0 {
		args = append(args, "--inputs-from-provider", filepath.Join(dir, "providers.yaml"))
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flux-operator %v: %v\n%s", args, err, stderr.Bytes())
	}
	return parseObjects(t, stdout.Bytes())
}

func objectMaps(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}
