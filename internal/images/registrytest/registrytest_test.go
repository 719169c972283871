package registrytest

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestRunOnTakenPort starts a registry on the port another registry
// holds, as when another test binary takes the free port first: the other
// registry answers /v2/ there, and run must not take it for its own but
// fail, so that RunWith tries another port.
func TestRunOnTakenPort(t *testing.T) {
	first := Start(t)
	realm := "ferry-registrytest-second"
	auth := "  htpasswd:\n    realm: " + realm + "\n    path: " + t.TempDir() + "/htpasswd\n"
	r, err := run(t.TempDir(), first.Host, auth, realm)
	if err == nil {
		_ = r.Stop()
		t.Fatalf("a second registry on %s, where the first answers, started", first.Host)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second registry on %s: %v; want an address-in-use failure", first.Host, err)
	}
}

// TestRead pushes an image of known files and reads it back.
func TestRead(t *testing.T) {
	reg := Start(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5},
		{Name: "./app", Typeflag: tar.TypeReg, Mode: 0o755, Size: 3},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{User: "65532:65532", Entrypoint: []string{"/app"}})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture = "linux", "arm64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := reg.Image("team/read") + ":1"
	if _, err := reg.write(context.Background(), "team/read", "1", img); err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}

	want := Image{
		Size:         m.Config.Size + m.Layers[0].Size,
		Layers:       1,
		User:         "65532:65532",
		Entrypoint:   []string{"/app"},
		OS:           "linux",
		Architecture: "arm64",
		Files: map[string]File{
			"etc/":       {Mode: fs.ModeDir | 0o755},
			"etc/passwd": {Size: 5, Mode: 0o644},
			"app":        {Size: 3, Mode: 0o755},
		},
	}
	if diff := cmp.Diff(want, reg.Read(t, ref)); diff != "" {
		t.Errorf("image read back (-want +got):\n%s", diff)
	}
}
