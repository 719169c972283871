package main

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/goldenfile"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// result is what one ferry invocation printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// ferry runs the command in-process with the given environment variables
// (and nothing else from the test process's environment).
func ferry(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }, environ: func() []string { return environOf(vars) }}
	code := run(context.Background(), args, e)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// environOf lists vars as KEY=value, as os.Environ does.
func environOf(vars map[string]string) []string {
	var out []string
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// golden compares got with testdata/<name>, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update)
}

func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}
