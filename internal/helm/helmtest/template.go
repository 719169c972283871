package helmtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Template runs the helm binary bin (the oracle: Helm v4.3.2, built by
// make tools) with args, `template` among them, and returns the objects
// it prints, empty documents left out. A failed run or an output that is
// not objects fails the test.
func Template(t testing.TB, bin string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	rd := utilyaml.NewYAMLReader(bufio.NewReader(&stdout))
	for {
		doc, err := rd.Read()
		if err != nil {
			break
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("helm output: %v\n%s", err, doc)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("helm output: %v\n%s", err, doc)
		}
		objs = append(objs, u)
	}
	return objs
}
