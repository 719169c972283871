package release

import (
	"archive/tar"
	"crypto/x509"
	"encoding/pem"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestImages(t *testing.T) {
	var bins []Binary
	for _, p := range []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}} {
		_, b := fakeBuild(t, p)
		bins = append(bins, b)
	}
	labels := Labels(testSource, "https://example.com/ferry")
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			idx, err := Images(testSource, bins, v, labels)
			if err != nil {
				t.Fatal(err)
			}
			m, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.MediaType != types.OCIImageIndex || m.Annotations["org.opencontainers.image.version"] != "v1.2.3" ||
				m.Annotations["org.opencontainers.image.revision"] != testSource.Commit || m.Annotations["org.opencontainers.image.licenses"] != "Apache-2.0" ||
				m.Annotations["org.opencontainers.image.source"] != "https://example.com/ferry" {
				t.Errorf("index %s, annotations %v", m.MediaType, m.Annotations)
			}
			var platforms []string
			for _, d := range m.Manifests {
				platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, img, v, d.Platform.Architecture)
			}
			if d := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); d != "" {
				t.Errorf("platforms (-want +got):\n%s", d)
			}
			// The same inputs give the same digest.
			again, _ := Images(testSource, bins, v, labels)
			d1, _ := idx.Digest()
			d2, _ := again.Digest()
			if d1 != d2 {
				t.Errorf("two builds of one commit: %s, %s", d1, d2)
			}
		})
	}
}

func checkImage(t *testing.T, img v1.Image, v Variant, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != arch || cf.OS != "linux" || cf.Config.User != v.User || !cmp.Equal(cf.Config.Entrypoint, []string{"/ferry"}) ||
		cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || !cf.Created.Time.Equal(testSource.Time) {
		t.Errorf("%s config: %+v", arch, cf)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			files[h.Name] = b
			if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testSource.Time) {
				t.Errorf("%s: owner %d:%d time %v", h.Name, h.Uid, h.Gid, h.ModTime)
			}
			if h.Name == "tmp/" && h.Mode != 0o1777 {
				t.Errorf("/tmp mode %o", h.Mode)
			}
		}
		rc.Close()
	}
	if string(files["ferry"]) != "binary for linux/"+arch {
		t.Errorf("/ferry is %q", files["ferry"])
	}
	if string(files["etc/passwd"]) != "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n" {
		t.Errorf("/etc/passwd %q", files["etc/passwd"])
	}
	pool, n := x509.NewCertPool(), 0
	for rest := files["etc/ssl/certs/ca-certificates.crt"]; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pool.AddCert(c)
		n++
	}
	if n < 100 {
		t.Errorf("%d CA certificates in the image, want the NSS roots", n)
	}
}
