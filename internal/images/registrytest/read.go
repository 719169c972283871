package registrytest

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Image is what tests check of an image read back from a registry.
type Image struct {
	// Size is the compressed size of the config and the layers, as
	// registries count an image.
	Size int64
	// Layers is how many layers the image has.
	Layers int
	// User, Entrypoint, OS and Architecture are the image's configuration.
	User             string
	Entrypoint       []string
	OS, Architecture string
	// Files are the entries of the image's file system, its layers
	// flattened, by path relative to the root ("etc/passwd"); the paths of
	// folders end in a slash ("etc/").
	Files map[string]File
}

// File is an entry of an image's file system.
type File struct {
	Size int64
	Mode fs.FileMode
}

// Read pulls the image ref (any registry's, with this registry's
// credentials) and returns what tests check of it.
func (r *Registry) Read(t testing.TB, ref string) Image {
	t.Helper()
	img, err := r.read(ref)
	if err != nil {
		t.Fatalf("registrytest: reading %s: %v", ref, err)
	}
	return img
}

func (r *Registry) read(ref string) (Image, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return Image{}, err
	}
	img, err := remote.Image(parsed, remote.WithAuth(r.Auth()))
	if err != nil {
		return Image{}, err
	}
	manifest, err := img.Manifest()
	if err != nil {
		return Image{}, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Image{}, err
	}
	out := Image{
		Size:         manifest.Config.Size,
		Layers:       len(manifest.Layers),
		User:         cfg.Config.User,
		Entrypoint:   cfg.Config.Entrypoint,
		OS:           cfg.OS,
		Architecture: cfg.Architecture,
		Files:        map[string]File{},
	}
	for _, l := range manifest.Layers {
		out.Size += l.Size
	}
	fsys := mutate.Extract(img)
	defer fsys.Close()
	tr := tar.NewReader(fsys)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return Image{}, fmt.Errorf("reading its file system: %w", err)
		}
		p := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if h.Typeflag == tar.TypeDir {
			p += "/"
		}
		out.Files[p] = File{Size: h.Size, Mode: h.FileInfo().Mode()}
	}
}
