package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
)

// maxImageBytes is the image size budget, compressed, as registries count.
const maxImageBytes = 40_000_000

// TestImage builds the container image from the Dockerfile without a Docker
// daemon (hack/image.sh: buildah), pushes it to a real registry, pulls it
// back, runs `ferry version` and `ferry render` of an example from inside
// the image's filesystem as 65532:65532, and checks what the image holds.
// Outside CI it is skipped when the tools are missing; in CI (CI=true) the
// script installs them, and a missing tool fails the test.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the image build takes a minute")
	}
	if os.Getenv("CI") != "true" {
		var missing []string
		for _, tool := range []string{"buildah", "debootstrap", "python3", "curl"} {
			if _, err := exec.LookPath(tool); err != nil {
				missing = append(missing, tool)
			}
		}
		if len(missing) > 0 {
			t.Skipf("image test skipped: %s missing (sudo apt-get install -y --no-install-recommends %s, or run hack/image.sh as root, which installs them)", strings.Join(missing, ", "), strings.Join(missing, " "))
		}
	}
	if _, err := os.Stat(registrytest.Binary); err != nil && os.Getenv("CI") == "true" {
		// CI starts bare: hack/registry.sh installs Debian's registry.
		install := exec.Command("bash", filepath.Join(repoRoot, "hack", "registry.sh"))
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("hack/registry.sh: %v\n%s", err, out)
		}
	}
	reg := registrytest.Start(t)
	renderOut := filepath.Join(t.TempDir(), "render.yaml")
	const version = "v0.0.0-imagetest"
	cmd := exec.Command("bash", filepath.Join(repoRoot, "hack", "image.sh"))
	cmd.Env = append(os.Environ(),
		"REGISTRY="+reg.Host, "REGISTRY_USER="+reg.Username, "REGISTRY_PASSWORD="+reg.Password,
		"VERSION="+version, "RENDER_OUT="+renderOut)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/image.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("hack/image.sh:\n%s%s", stderr.String(), stdout.String())
	out := stdout.String()

	m := regexp.MustCompile(`(?m)^image (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no image line in:\n%s", out)
	}
	ref := m[1]
	img := reg.Read(t, ref)
	t.Logf("image %s: %d layer(s), %.1f MB compressed", ref, img.Layers, float64(img.Size)/1e6)
	if img.Size > maxImageBytes {
		t.Errorf("the image is %d bytes compressed, more than %d", img.Size, maxImageBytes)
	}
	if img.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root)", img.User)
	}
	if d := cmp.Diff([]string{"/ferry"}, img.Entrypoint); d != "" {
		t.Errorf("entrypoint (-want +got):\n%s", d)
	}
	if img.OS != "linux" || img.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", img.OS, img.Architecture)
	}

	// Nothing but the binary, the CA certificates, passwd, group and /tmp.
	if f, ok := img.Files["ferry"]; ok && f.Mode&0o111 == 0 {
		t.Error("/ferry is not executable")
	}
	var names []string
	for p := range img.Files {
		names = append(names, p)
	}
	sort.Strings(names)
	want := []string{"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "ferry", "tmp/"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("image files (-want +got):\n%s", d)
	}
	if n := img.Files["etc/ssl/certs/ca-certificates.crt"].Size; n < 10_000 {
		t.Errorf("ca-certificates.crt is %d bytes", n)
	}

	// What the image printed, run as a runner would.
	if !regexp.MustCompile(`(?m)^version ferry ` + regexp.QuoteMeta(version) + ` linux/` + runtime.GOARCH + ` go1\.`).MatchString(out) {
		t.Errorf("ferry version inside the image printed:\n%s", out)
	}
	if !strings.Contains(out, "user 65532:65532") {
		t.Errorf("the script did not run the image as its user:\n%s", out)
	}
	got, err := os.ReadFile(renderOut)
	if err != nil {
		t.Fatal(err)
	}
	wantRender := ferry(t, exampleKey(t), "render", "--repo", filepath.Join(examplesDir, "gpu-cluster"))
	if wantRender.code != 0 {
		t.Fatalf("render in-process: %s", wantRender.stderr)
	}
	if string(got) != wantRender.stdout {
		t.Errorf("render inside the image differs from render here:\n%s", goldenfile.LineDiff(wantRender.stdout, string(got)))
	}
}
