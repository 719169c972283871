package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// tgz is a gzipped tar of files (name, content), in order.
func tgz(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// emptyFiles are n empty files under dir.
func emptyFiles(dir string, n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{fmt.Sprintf("%s/f%06d", dir, i), ""}
	}
	return out
}

// TestChartMetadataBudgets: a chart archive counts its files and their
// size, its subcharts' archives (charts/*.tgz) unpacked and counted too,
// against limits.chartFiles and limits.chartSize, naming the entry it
// stopped at.
func TestChartMetadataBudgets(t *testing.T) {
	t.Parallel()
	chartYAML := [2]string{"c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"}
	limits := budget.Limits{ChartFiles: 100, ChartSize: 1 << 20}
	sub := tgz(t, append([][2]string{{"sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 1.0.0\n"}}, emptyFiles("sub/files", 150)...)...)
	for _, tc := range []struct {
		name    string
		archive []byte
		limit   string // "" when the archive is within its budgets
		what    string
	}{
		{name: "within budgets", archive: tgz(t, append([][2]string{chartYAML}, emptyFiles("c/files", 98)...)...)},
		{name: "too many files", archive: tgz(t, append([][2]string{chartYAML}, emptyFiles("c/files", 100)...)...), limit: "chartFiles", what: "c/files/f000099"},
		{name: "a subchart archive of too many files", archive: tgz(t, chartYAML, [2]string{"c/charts/sub.tgz", string(sub)}), limit: "chartFiles", what: "c/charts/sub.tgz: sub/files/f000097"},
		{name: "too large unpacked", archive: tgz(t, chartYAML, [2]string{"c/files/a", strings.Repeat("a", 600<<10)}, [2]string{"c/files/b", strings.Repeat("b", 600<<10)}), limit: "chartSize", what: "c/files/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			md, err := chartMetadata(tc.archive, limits)
			if tc.limit == "" {
				if err != nil || md.Name != "c" {
					t.Fatalf("metadata %+v, err %v; want chart c", md, err)
				}
				return
			}
			var over *budget.Exceeded
			if !errors.Is(err, ErrTooLarge) || !errors.As(err, &over) || over.Limit != tc.limit || over.What != tc.what {
				t.Fatalf("err %v, want ErrTooLarge and limits.%s at %s", err, tc.limit, tc.what)
			}
		})
	}
}

// TestFetchFolderBudgets: a chart folder is counted before it is
// loaded: its files against limits.chartFiles, each against the 32 MiB
// ferry reads of any file, an archive in its charts/ folder unpacked.
func TestFetchFolderBudgets(t *testing.T) {
	t.Parallel()
	chart := map[string]string{"Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n", "templates/a.yaml": "a: b\n"}
	sub := tgz(t, append([][2]string{{"sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 1.0.0\n"}}, emptyFiles("sub/files", 20)...)...)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{name: "within budgets", setup: func(*testing.T, string) {}},
		{name: "a file over 32 MiB", setup: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "charts", "c", "files", "big.bin")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, manifest.MaxFileSize+1); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"charts/c/files/big.bin", "more than the 33554432 ferry reads"}},
		{name: "too many files", setup: func(t *testing.T, dir string) {
			for i := range 10 {
				testtree.Write(t, dir, map[string]string{fmt.Sprintf("charts/c/files/%d", i): ""})
			}
		}, want: []string{"charts/c/files/", "limits.chartFiles"}},
		{name: "a subchart archive of too many files", setup: func(t *testing.T, dir string) {
			testtree.Write(t, dir, map[string]string{"charts/c/charts/sub.tgz": string(sub)})
		}, want: []string{"charts/c/charts/sub.tgz: sub/files/", "limits.chartFiles"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for k, v := range chart {
				testtree.Write(t, root, map[string]string{"charts/c/" + k: v})
			}
			tc.setup(t, root)
			s := NewSources(SourcesOptions{})
			f, err := s.Fetch(t.Context(), ChartSource{Kind: Folder, Root: root, Path: "charts/c", Chart: "charts/c", Limits: budget.Limits{ChartFiles: 10}})
			if tc.want == nil {
				if err != nil || f.Name != "c" {
					t.Fatalf("fetched %+v, err %v; want chart c", f, err)
				}
				return
			}
			if err == nil {
				t.Fatal("fetched the chart, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestWireValues: values cross to the sandbox with their Go types: an
// int64 stays an int64, a nil stays nil, common.Values stays itself.
func TestWireValues(t *testing.T) {
	t.Parallel()
	values := map[string]any{
		"int64": int64(3), "int": 4, "int32": int32(5), "uint64": uint64(6), "float64": 0.5, "float32": float32(1.5),
		"bool": true, "nil": nil, "string": "s", "list": []any{"a", int64(1), nil, map[string]any{"b": "c"}},
		"values": common.Values{"d": []any{}}, "empty": map[string]any{},
	}
	w, err := encodeValue(values)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(values), decodeValue(w)); diff != "" {
		t.Errorf("values after the wire (-want +got):\n%s", diff)
	}
	if _, err := encodeValue(map[string]any{"c": make(chan int)}); err == nil {
		t.Error("a channel crossed the wire")
	}
}

// TestCrashBudget words the crashes of a child past its caps, as the
// runtime prints them, as the budgets they ran past; any other crash is
// no budget's.
func TestCrashBudget(t *testing.T) {
	limits := budget.Limits{}.Fill()
	for _, tc := range []struct{ stderr, limit string }{
		{"runtime: out of memory: cannot allocate 268435456-byte block (8388608 in use)\nfatal error: out of memory\n", "renderMemory"},
		{"fatal error: runtime: cannot allocate memory\n", "renderMemory"},
		// cgo: a new thread's stack mapped past RLIMIT_DATA.
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\nPC=0x7f39fba60eec m=3 sigcode=18446744073709551610\n", "renderMemory"},
		{"runtime: failed to create new OS thread (have 7 already; errno=12)\nruntime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc\n", "renderMemory"},
		{"runtime: goroutine stack exceeds 1000000-byte limit\nfatal error: stack overflow\n", "templateStack"},
		{"runtime: failed to create new OS thread (have 7 already; errno=11)\nfatal error: newosproc\n", ""},
		{"panic: assignment to entry in nil map\n", ""},
		{"", ""},
	} {
		over := crashBudget("templates", limits, tc.stderr)
		got := ""
		if over != nil {
			got = over.Limit
		}
		if got != tc.limit {
			t.Errorf("crashBudget(%q) = %q, want %q", tc.stderr, got, tc.limit)
		}
	}
	for stderr, want := range map[string]string{
		"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n": "runtime/cgo: pthread_create failed: Resource temporarily unavailable",
		"goroutine 1 [running]:\npanic: boom\n":                                                  "panic: boom",
		"SIGSEGV\n":                                                                              "no message",
	} {
		if got := firstFatal(stderr); got != want {
			t.Errorf("firstFatal(%q) = %q, want %q", stderr, got, want)
		}
	}
}
