package acttest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerfileImage is the runs.image line of ferry's action.yml files: the
// runner builds the Dockerfile.
var dockerfileImage = regexp.MustCompile(`(?m)^(\s*image:\s*)"?(\.\./\.\./)?Dockerfile"?\s*$`)

// StageFerry copies ferry's action.yml and steps/ from this checkout into
// a folder for --local-repository ferry-ci/ferry@v1, as a user's
// `uses: ferry-ci/ferry/steps/diff@v1` would fetch them. The one change:
// runs.image names the image already in the runner's store instead of the
// Dockerfile, which a runner here cannot build (its build stage fetches
// modules). edit, if not nil, may change the copy before it is used.
func (r *Runner) StageFerry(t testing.TB, edit func(dir string)) string {
	t.Helper()
	root := RepoRoot()
	dst := filepath.Join(t.TempDir(), "ferry")
	copyFile := func(rel string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(rel) == "action.yml" {
			if !dockerfileImage.Match(b) {
				t.Fatalf("acttest: %s: no runs.image naming the Dockerfile", rel)
			}
			b = dockerfileImage.ReplaceAll(b, []byte("${1}docker://"+r.FerryImage))
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("action.yml")
	err := filepath.WalkDir(filepath.Join(root, "steps"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		copyFile(rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(dst)
	}
	return dst
}

// Actions returns the folders serving the GitHub actions ferry's workflows
// use besides ferry's own (checkout and upload-artifact, written for these
// tests), keyed for Job.Actions, plus ferry's staged copy.
func Actions(ferry string) map[string]string {
	dir := filepath.Join(RepoRoot(), "internal", "actions", "acttest", "actions")
	m := map[string]string{"ferry-ci/ferry@v1": ferry}
	for _, ref := range []string{"actions/checkout@v4", "actions/upload-artifact@v4", "actions/upload-artifact@v3"} {
		name := strings.TrimPrefix(ref[:strings.IndexByte(ref, '@')], "actions/")
		m[ref] = filepath.Join(dir, name)
	}
	return m
}
