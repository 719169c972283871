package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPinActions(t *testing.T) {
	const image = "reg.example:5000/ferry:v1.2.3-action@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"action.yml":              "name: ferry\nruns:\n  using: docker\n  image: Dockerfile\n  args: []\n",
		"steps/diff/action.yml":   "name: diff\nruns:\n  using: docker\n  image: \"../../Dockerfile\"\n",
		"steps/diff/README.md":    "image: Dockerfile is what main says\n",
		"setup/action.yml":        "name: setup\nruns:\n  using: composite\n  steps: []\n",
		"setup/install.sh":        "#!/bin/sh\n",
		"internal/other/file.txt": "not an action file\n",
	})
	os.Chmod(filepath.Join(root, "setup", "install.sh"), 0o755)
	out := t.TempDir()
	files, err := PinActions(root, out, image)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"action.yml", "steps/diff/README.md", "steps/diff/action.yml", "setup/action.yml", "setup/install.sh"}, files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("action.yml"); got != "name: ferry\nruns:\n  using: docker\n  image: docker://"+image+"\n  args: []\n" {
		t.Errorf("action.yml:\n%s", got)
	}
	if got := read("steps/diff/action.yml"); !strings.Contains(got, "  image: docker://"+image+"\n") {
		t.Errorf("steps/diff/action.yml:\n%s", got)
	}
	if got := read("steps/diff/README.md"); got != "image: Dockerfile is what main says\n" {
		t.Errorf("a README changed:\n%s", got)
	}
	if fi, err := os.Stat(filepath.Join(out, "setup", "install.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("setup/install.sh: %v, mode %v, want the source's 0755", err, fi.Mode())
	}
	if got := read("setup/action.yml"); got != "name: setup\nruns:\n  using: composite\n  steps: []\n" {
		t.Errorf("the composite action changed:\n%s", got)
	}

	// An action.yml whose image is something else would ship unpinned.
	writeFiles(t, root, map[string]string{"steps/apply/action.yml": "runs:\n  using: docker\n  image: docker://elsewhere/ferry:latest\n"})
	if _, err := PinActions(root, t.TempDir(), image); err == nil || !strings.Contains(err.Error(), "steps/apply/action.yml: its runs.image is neither the Dockerfile nor pinned") {
		t.Errorf("error %v", err)
	}
}

// TestPinActionsOfThisRepository pins ferry's own action files: every one
// of them must be pinnable, and none may still build after pinning.
func TestPinActionsOfThisRepository(t *testing.T) {
	root, _ := filepath.Abs("../..")
	out := t.TempDir()
	files, err := PinActions(root, out, "r/ferry:v1-action@sha256:00")
	if err != nil {
		t.Fatal(err)
	}
	pinned := 0
	for _, f := range files {
		if filepath.Base(f) != "action.yml" {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(out, f))
		if dockerfileImage.Match(b) {
			t.Errorf("%s still builds the Dockerfile", f)
		}
		if strings.Contains(string(b), "image: docker://r/ferry:v1-action@sha256:00\n") {
			pinned++
		}
	}
	if pinned < 7 { // action.yml and the six steps
		t.Errorf("%d action files pinned, want the root's and every step's", pinned)
	}
}
