package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// File is one file of a release, in the release folder.
type File struct {
	// Name is the file's name in the release folder (and the release's
	// attachments).
	Name string `json:"name"`
	// SHA256 is its hex digest.
	SHA256 string `json:"sha256"`
	// Platform is the binary's, for archives and SBOMs.
	Platform string `json:"platform,omitempty"`
}

// member is a file put into an archive: its name there, where it comes
// from and its mode.
type member struct {
	name, path string
	mode       int64
}

// ArchiveName is the archive of a platform's binary:
// ferry_<version>_<os>_<arch>.tar.gz, .zip on Windows.
func ArchiveName(version string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return "ferry_" + version + "_" + p.OS + "_" + p.Arch + ext
}

// Archive writes the binary with the project's LICENSE and README.md into
// dist as ArchiveName. Every entry has the commit's time and fixed
// owners, so the same commit gives the same bytes.
func Archive(dist, root string, src Source, b Binary) (File, error) {
	members := []member{
		{b.Name(), b.Path, 0o755},
		{"LICENSE", filepath.Join(root, "LICENSE"), 0o644},
		{"README.md", filepath.Join(root, "README.md"), 0o644},
	}
	name := ArchiveName(src.Version, b.Platform)
	path := filepath.Join(dist, name)
	f, err := os.Create(path)
	if err != nil {
		return File{}, err
	}
	if b.Platform.OS == "windows" {
		err = writeZip(f, members, src.Time)
	} else {
		err = writeTarGz(f, members, src.Time)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	return hashFile(dist, name, b.Platform.String())
}

func writeTarGz(w io.Writer, members []member, mtime time.Time) error {
	gz := gzip.NewWriter(w) // no name, no time in the gzip header
	tw := tar.NewWriter(gz)
	for _, m := range members {
		if err := addTar(tw, m, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func addTar(tw *tar.Writer, m member, mtime time.Time) error {
	f, err := os.Open(m.path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: m.name, Mode: m.mode, Size: fi.Size(), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func writeZip(w io.Writer, members []member, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, m := range members {
		hdr := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: mtime}
		hdr.SetMode(os.FileMode(m.mode))
		dst, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		f, err := os.Open(m.path)
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// hashFile is the File of dist/name with its SHA-256.
func hashFile(dist, name, platform string) (File, error) {
	f, err := os.Open(filepath.Join(dist, name))
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	return File{Name: name, SHA256: hex.EncodeToString(h.Sum(nil)), Platform: platform}, nil
}

// ChecksumsName is the release's checksums file.
func ChecksumsName(version string) string { return "ferry_" + version + "_checksums.txt" }

// WriteChecksums writes the checksums file of files in sha256sum's form
// ("<hex>  <name>", sorted by name), which `sha256sum -c` reads.
func WriteChecksums(dist, version string, files []File) (File, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	for _, f := range sorted {
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Name)
	}
	name := ChecksumsName(version)
	if err := os.WriteFile(filepath.Join(dist, name), []byte(b.String()), 0o644); err != nil {
		return File{}, err
	}
	return hashFile(dist, name, "")
}
