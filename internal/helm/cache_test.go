package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
)

// Concurrent calls for a key share one computation; a failure is not
// kept, so the next call computes again; a value fresh says is stale is
// computed again.
func TestGroup(t *testing.T) {
	var g group[int]
	var runs atomic.Int64
	release := make(chan struct{})
	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([]int, 10)
	for i := range got {
		wg.Go(func() {
			got[i], _ = g.do(ctx, "k", nil, func() (int, error) {
				runs.Add(1)
				<-release
				return 7, nil
			})
		})
	}
	close(release)
	wg.Wait()
	// Every goroutine has returned: the later ones took the kept value.
	for i, v := range got {
		if v != 7 {
			t.Errorf("call %d got %d", i, v)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("computed %d times, want 1", n)
	}

	fail := errors.New("boom")
	if _, err := g.do(ctx, "bad", nil, func() (int, error) { return 0, fail }); !errors.Is(err, fail) {
		t.Fatalf("err %v", err)
	}
	v, err := g.do(ctx, "bad", nil, func() (int, error) { return 3, nil })
	if err != nil || v != 3 {
		t.Errorf("after a failure: %d, %v; want 3", v, err)
	}

	v, _ = g.do(ctx, "k", func(int) bool { return false }, func() (int, error) { return 8, nil })
	if v != 8 {
		t.Errorf("stale value kept: %d", v)
	}
}

// A cached archive that no longer matches its name is not used.
func TestStoreRefusesTamperedArchive(t *testing.T) {
	s := newStore(t.TempDir())
	b := []byte("archive bytes")
	if err := s.putArchive(b); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.archive(digestOf(b)); !ok || !bytes.Equal(got, b) {
		t.Fatalf("archive not kept: %q %v", got, ok)
	}
	p, _ := s.archivePath(digestOf(b))
	if err := writeFile(p, []byte("tampered")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.archive(digestOf(b)); ok {
		t.Error("tampered archive used")
	}
	if _, ok := s.archivePath("sha256:../../etc/passwd"); ok {
		t.Error("a digest that is no hex names a path")
	}
}

// chartMetadata reads archives from any server: it must return an error,
// never panic or hang, whatever the bytes.
func FuzzChartMetadata(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Add([]byte("not an archive"))
	archive, _ := helmtest.Package(f, filepath.Join("testdata", "sources", "demo"), "1.0.0")
	f.Add(archive)
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := chartMetadata(b, budget.Limits{})
		if err == nil && (md.Name == "" || md.Version == "") {
			t.Errorf("metadata without name or version accepted: %+v", md)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Errorf("error %v is neither ErrCorrupt nor ErrTooLarge", err)
		}
	})
}

// A small archive that unpacks into more than Helm allows is refused
// before it is unpacked.
func TestChartMetadataRefusesBombs(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	write := func(name string, body []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	write("bomb/Chart.yaml", []byte("apiVersion: v2\nname: bomb\nversion: 1.0.0\n"))
	write("bomb/files/zeros", make([]byte, maxUnpackedFile+1))
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 64<<10 {
		t.Fatalf("the archive is %d bytes; the test wants a small one", buf.Len())
	}
	if _, err := chartMetadata(buf.Bytes(), budget.Limits{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err %v, want ErrTooLarge", err)
	}
}
