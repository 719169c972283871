package resourceset_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// parseObjects reads the objects of a YAML stream as ferry's loaders do:
// numbers as int64 or float64, empty documents and comments skipped.
func parseObjects(tb testing.TB, data []byte) []*unstructured.Unstructured {
	tb.Helper()
	var out []*unstructured.Unstructured
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			tb.Fatalf("%v in:\n%s", err, doc)
		}
		if t := bytes.TrimSpace(j); bytes.Equal(t, []byte("null")) {
			continue
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(j, &obj); err != nil {
			tb.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// readObjects parses a file of testdata, nil when it does not exist.
func readObjects(tb testing.TB, path string) []*unstructured.Unstructured {
	tb.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	return parseObjects(tb, data)
}

// fixture is one folder of testdata: rset.yaml holds the ResourceSet,
// providers.yaml (optional) the providers it may read.
type fixture struct {
	dir       string
	rset      *unstructured.Unstructured
	providers []*unstructured.Unstructured
}

func loadFixture(tb testing.TB, dir string) fixture {
	tb.Helper()
	objs := readObjects(tb, filepath.Join(dir, "rset.yaml"))
	if len(objs) != 1 {
		tb.Fatalf("%s/rset.yaml: %d objects, want 1", dir, len(objs))
	}
	return fixture{dir: dir, rset: objs[0], providers: readObjects(tb, filepath.Join(dir, "providers.yaml"))}
}

func (f fixture) expand(tb testing.TB) *resourceset.Result {
	tb.Helper()
	res, err := resourceset.Expand(context.Background(), f.rset, resourceset.Options{Providers: f.providers})
	if err != nil {
		tb.Fatalf("Expand: %v", err)
	}
	return res
}

// fixtures lists the folders of testdata that hold a ResourceSet.
func fixtures(tb testing.TB) []string {
	tb.Helper()
	dirs, err := filepath.Glob("testdata/*/rset.yaml")
	if err != nil || len(dirs) == 0 {
		tb.Fatalf("no fixtures under testdata: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// goldenYAML renders a result as a YAML stream: each generated object
// after a comment saying where it comes from, then the excluded objects
// and what the cluster would fill in, as comments.
func goldenYAML(tb testing.TB, res *resourceset.Result) []byte {
	tb.Helper()
	var b bytes.Buffer
	for _, o := range res.Objects {
		y, err := manifest.YAML(o.Object)
		if err != nil {
			tb.Fatal(err)
		}
		step := ""
		if o.Step != "" {
			step = fmt.Sprintf(" (step %s)", o.Step)
		}
		fmt.Fprintf(&b, "# %s, %s%s\n---\n%s", o.Template, inputSet(o.Input), step, y)
	}
	for _, o := range res.Excluded {
		fmt.Fprintf(&b, "# excluded: %s/%s/%s from %s, %s\n", o.Object.GetKind(), o.Object.GetNamespace(), o.Object.GetName(), o.Template, inputSet(o.Input))
	}
	for _, c := range res.FromCluster {
		fmt.Fprintf(&b, "# from the cluster: %s %s=%s\n", c.Object, c.Annotation, c.Value)
	}
	return b.Bytes()
}

func inputSet(i int) string {
	if i < 0 {
		return "without inputs"
	}
	return fmt.Sprintf("input set %d", i)
}
