package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// What a revision asks to verify: ferry.yaml's verify block and the
// spec.verify of the GitRepository its clusters sync this repository
// from (not of other GitRepositories), each named.
func TestVerification(t *testing.T) {
	t.Parallel()
	files := fleet()
	files["clusters/production/flux-system/gotk-sync.yaml"] = strings.Replace(gotkSync("clusters/production"),
		"    branch: main\n", "    branch: main\n  verify:\n    mode: HEAD\n    secretRef: {name: git-keys}\n", 1)
	files["clusters/staging/other.yaml"] = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: other, namespace: flux-system}\n" +
		"spec: {interval: 1m, url: https://example.com/other, ref: {branch: main}, verify: {mode: Tag}}\n"
	repo := load(t, testtree.New(t, files))
	want := config.Verification{
		Modes:      []string{"HEAD"},
		Sources:    []string{"GitRepository/flux-system/flux-system spec.verify"},
		SecretRefs: []config.SecretRef{{Name: "git-keys", Namespace: "flux-system"}},
	}
	if diff := cmp.Diff(want, repo.Verification()); diff != "" {
		t.Errorf("Verification (-want +got):\n%s", diff)
	}

	files["ferry.yaml"] = "verify: {mode: TagAndHEAD, keys: [.keys], range: true}\n"
	repo = load(t, testtree.New(t, files))
	want.Modes, want.Sources = []string{"TagAndHEAD", "HEAD"}, []string{"ferry.yaml verify", "GitRepository/flux-system/flux-system spec.verify"}
	want.KeyFiles, want.Range = []string{".keys"}, true
	if diff := cmp.Diff(want, repo.Verification()); diff != "" {
		t.Errorf("with ferry.yaml (-want +got):\n%s", diff)
	}
}

func TestVerifyIsChecked(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"verify: {mode: head}\n":                         `verify.mode "head": want HEAD, Tag, TagAndHEAD`,
		"verify: {mode: HEAD, keys: [../keys]}\n":        `verify.keys[0] "../keys": a path inside the repository`,
		"verify: {mode: HEAD, secretRef: {name: a/b}}\n": `verify.secretRef.name "a/b"`,
		"verify: {mode: HEAD, range: yes}\n":             `range`,
		"verify: {mode: HEAD, keyring: x}\n":             `unknown field "keyring"`,
	} {
		_, err := config.ParseFile([]byte(in))
		wantError(t, err, want)
	}
}
