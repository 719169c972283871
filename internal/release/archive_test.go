package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeBuild writes a project root (LICENSE, README.md) and a "binary"
// for the platform.
func fakeBuild(t *testing.T, p Platform) (root string, b Binary) {
	t.Helper()
	root = t.TempDir()
	os.WriteFile(filepath.Join(root, "LICENSE"), []byte("license\n"), 0o644)
	os.WriteFile(filepath.Join(root, "README.md"), []byte("readme\n"), 0o644)
	b = Binary{Platform: p}
	b.Path = filepath.Join(root, "bin", b.Name())
	os.MkdirAll(filepath.Dir(b.Path), 0o755)
	os.WriteFile(b.Path, []byte("binary for "+p.String()), 0o700)
	return root, b
}

var testSource = Source{Commit: strings.Repeat("ab", 20), Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Version: "v1.2.3", Tagged: true}

func TestArchive(t *testing.T) {
	for _, p := range []Platform{{"linux", "arm64"}, {"windows", "amd64"}} {
		t.Run(p.String(), func(t *testing.T) {
			root, b := fakeBuild(t, p)
			dist1, dist2 := t.TempDir(), t.TempDir()
			f1, err := Archive(dist1, root, testSource, b)
			if err != nil {
				t.Fatal(err)
			}
			// The same commit gives the same bytes, whatever the files' times.
			later := time.Now().Add(time.Hour)
			os.Chtimes(b.Path, later, later)
			f2, err := Archive(dist2, root, testSource, b)
			if err != nil {
				t.Fatal(err)
			}
			if f1 != f2 {
				t.Errorf("two archives of one commit differ: %v, %v", f1, f2)
			}
			want := "ferry_v1.2.3_" + p.OS + "_" + p.Arch + map[bool]string{true: ".zip", false: ".tar.gz"}[p.OS == "windows"]
			if f1.Name != want || f1.Platform != p.String() || len(f1.SHA256) != 64 {
				t.Errorf("file %+v, want name %s", f1, want)
			}
			got := readArchive(t, filepath.Join(dist1, f1.Name))
			wantFiles := map[string]string{b.Name(): "binary for " + p.String() + " 755 2026-12-01T10:00:00Z", "LICENSE": "license\n 644 2026-12-01T10:00:00Z", "README.md": "readme\n 644 2026-12-01T10:00:00Z"}
			if d := cmp.Diff(wantFiles, got); d != "" {
				t.Errorf("archive (-want +got):\n%s", d)
			}
		})
	}
}

// readArchive returns each member's content, mode and time.
func readArchive(t *testing.T, path string) map[string]string {
	t.Helper()
	got := map[string]string{}
	add := func(name string, r io.Reader, mode os.FileMode, mtime time.Time) {
		b, _ := io.ReadAll(r)
		got[name] = string(b) + " " + strings.TrimPrefix(mode.Perm().String(), "-") + " " + mtime.UTC().Format(time.RFC3339)
	}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			r, _ := f.Open()
			add(f.Name, r, f.Mode(), f.Modified)
			r.Close()
		}
	} else {
		raw, _ := os.ReadFile(path)
		gz, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			add(h.Name, tr, os.FileMode(h.Mode), h.ModTime)
		}
	}
	for k, v := range got {
		// rwxr-xr-x -> 755
		fields := strings.Fields(v)
		perm := fields[len(fields)-2]
		got[k] = strings.Replace(v, " "+perm+" ", " "+octal(perm)+" ", 1)
	}
	return got
}

func octal(perm string) string {
	var out []byte
	for i := 0; i < 9; i += 3 {
		n := 0
		for j, c := range perm[i : i+3] {
			if c != '-' {
				n |= 4 >> j
			}
		}
		out = append(out, byte('0'+n))
	}
	return string(out)
}

func TestWriteChecksums(t *testing.T) {
	dist := t.TempDir()
	files := []File{{Name: "b.tar.gz", SHA256: strings.Repeat("1", 64)}, {Name: "a.zip", SHA256: strings.Repeat("2", 64)}}
	f, err := WriteChecksums(dist, "v1.2.3", files)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dist, "ferry_v1.2.3_checksums.txt"))
	want := strings.Repeat("2", 64) + "  a.zip\n" + strings.Repeat("1", 64) + "  b.tar.gz\n"
	if d := cmp.Diff(want, string(got)); d != "" || f.Name != "ferry_v1.2.3_checksums.txt" {
		t.Errorf("checksums %s (-want +got):\n%s", f.Name, d)
	}
}
