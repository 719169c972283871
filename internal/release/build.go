package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Platform is a GOOS/GOARCH pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads "linux/amd64,darwin/arm64".
func ParsePlatforms(s string) ([]Platform, error) {
	var ps []Platform
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		goos, arch, ok := strings.Cut(f, "/")
		if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want OS/ARCH, as linux/amd64", f)
		}
		ps = append(ps, Platform{goos, arch})
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("no platforms in %q", s)
	}
	return ps, nil
}

// DefaultPlatforms are the binaries of a release.
var DefaultPlatforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// ImagePlatforms are the images of a release: runners run Linux
// containers on these two.
var ImagePlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

// Binary is ferry built for one platform.
type Binary struct {
	Platform Platform
	Path     string
}

// Name is ferry's file name on the platform.
func (b Binary) Name() string {
	if b.Platform.OS == "windows" {
		return "ferry.exe"
	}
	return "ferry"
}

// Build compiles ./cmd/ferry of root for each platform into dir, static
// (no cgo), without local paths (-trimpath), stamped with the version,
// commit and commit time that `ferry version` prints.
func Build(ctx context.Context, goCmd, root, dir string, src Source, platforms []Platform) ([]Binary, error) {
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s -X main.date=%s",
		src.Version, src.Commit, src.Time.Format(time.RFC3339))
	var bins []Binary
	for _, p := range platforms {
		b := Binary{Platform: p}
		b.Path = filepath.Join(dir, p.OS+"_"+p.Arch, b.Name())
		cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", b.Path, "./cmd/ferry")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building ferry for %s: %v\n%s", p, err, strings.TrimSpace(out.String()))
		}
		bins = append(bins, b)
	}
	return bins, nil
}
