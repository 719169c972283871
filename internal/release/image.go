package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Variant is one of the two images of a release. They hold the same
// layers and differ in their user.
type Variant struct {
	// Name is "image" or "action".
	Name string
	// TagSuffix follows the version in the image's tag.
	TagSuffix string
	// User is the image's user.
	User string
}

// Variants: the image ferry is published as runs as the non-root user
// 65532; the action's runs as root, because runners mount the workspace
// and the $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY files owned by their own
// user and a container action must run as the default user (root) to
// write them (docs/security.md).
var Variants = []Variant{
	{Name: "image", User: "65532:65532"},
	{Name: "action", TagSuffix: "-action", User: "0:0"},
}

// Labels are the OCI annotations of a release's images, indexes and
// image configurations.
func Labels(src Source, sourceURL string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "ferry",
		"org.opencontainers.image.description": "Push-model GitOps from CI: render, diff, apply and audit a Git repository of Kubernetes manifests",
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.url":         sourceURL,
		"org.opencontainers.image.revision":    src.Commit,
		"org.opencontainers.image.version":     src.Version,
		"org.opencontainers.image.created":     src.Time.Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// CABundle is the PEM bundle of the Mozilla NSS roots that
// golang.org/x/crypto/x509roots/fallback carries (pinned by go.sum, so
// every build of a commit holds the same roots, whatever the building
// machine trusts). Roots NSS constrains (distrust after a date) are left
// out: a PEM file cannot say so.
func CABundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// tarEntry is a file or folder of a layer.
type tarEntry struct {
	name string
	mode int64
	dir  bool
	data []byte
	path string // read from here when data is nil and not dir
}

// layerOf is a gzip layer of the entries, every one owned by root with
// the commit's time. gzip's default level, not go-containerregistry's
// fastest: the binary's layer is 30.6 MB instead of 34.6 MB, which every
// cold pull of a job saves.
func layerOf(entries []tarEntry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Format: tar.FormatPAX}
		var body io.Reader
		switch {
		case e.dir:
			hdr.Typeflag = tar.TypeDir
		case e.data != nil:
			hdr.Typeflag, hdr.Size, body = tar.TypeReg, int64(len(e.data)), bytes.NewReader(e.data)
		default:
			b, err := os.ReadFile(e.path)
			if err != nil {
				return nil, err
			}
			hdr.Typeflag, hdr.Size, body = tar.TypeReg, int64(len(b)), bytes.NewReader(b)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression))
}

// baseLayer holds what the Dockerfile's scratch image holds besides the
// binary: the CA certificates, a passwd and group file naming root and
// nonroot (65532), and a world-writable /tmp (HOME).
func baseLayer(mtime time.Time) (v1.Layer, error) {
	return layerOf([]tarEntry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: CABundle()},
		{name: "tmp/", mode: 0o1777, dir: true},
	}, mtime)
}

// Images builds one variant's index: an image for each Linux binary,
// from scratch (base layer, then /ferry), labelled with Labels.
func Images(src Source, bins []Binary, v Variant, labels map[string]string) (v1.ImageIndex, error) {
	base, err := baseLayer(src.Time)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range bins {
		if b.Platform.OS != "linux" {
			continue
		}
		bin, err := layerOf([]tarEntry{{name: "ferry", mode: 0o755, path: b.Path}}, src.Time)
		if err != nil {
			return nil, fmt.Errorf("the layer of %s: %w", b.Path, err)
		}
		img, err := image(src, b.Platform, v, labels, base, bin)
		if err != nil {
			return nil, fmt.Errorf("the %s image for %s: %w", v.Name, b.Platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				Platform:    &v1.Platform{OS: b.Platform.OS, Architecture: b.Platform.Arch},
				Annotations: labels,
			},
		})
	}
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

func image(src Source, p Platform, v Variant, labels map[string]string, layers ...v1.Layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{Created: v1.Time{Time: src.Time}, CreatedBy: "ferry-release"}})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = v1.Time{Time: src.Time}
	cf.Config = v1.Config{
		Entrypoint: []string{"/ferry"},
		Env:        []string{"HOME=/tmp", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		User:       v.User,
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}
