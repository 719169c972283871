// Package testbin finds the tools `make test` builds for the tests (the
// control plane, Gitea, flux, kustomize): in $FERRY_TESTBIN, else in
// .cache/testbin of the module holding the working directory.
package testbin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env names the folder holding the tools, when set.
const Env = "FERRY_TESTBIN"

// Dir is $FERRY_TESTBIN, else .cache/testbin in the closest folder above
// the working directory that holds a go.mod.
func Dir() (string, error) {
	if d := os.Getenv(Env); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".cache", "testbin"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s to find .cache/testbin; set %s", wd, Env)
		}
	}
}

// Tool is the path of the named tool. A missing tool fails the test in CI
// (CI set) and skips it elsewhere, saying what builds it (make target).
func Tool(tb testing.TB, name, make string) string {
	tb.Helper()
	dir, err := Dir()
	bin := filepath.Join(dir, name)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("%s missing (%v): make %s builds it", name, err, make)
		}
		tb.Skipf("%s missing (%v): run make %s", name, err, make)
	}
	return bin
}
