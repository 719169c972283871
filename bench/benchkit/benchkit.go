// Package benchkit holds what the Go benchmarks (bench/apply, bench/drift,
// bench/fleet, bench/scan) share: finding the module and the binaries they
// run, a work folder, kubectl, the repository of one target, reading the
// API server's request counters, and the medians and lists they print.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// ModuleRoot is the closest folder above the working directory that holds
// a go.mod.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// Require fails, saying what builds them (hint), when a binary a
// benchmark runs is missing.
func Require(hint string, paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s missing: run %s", p, hint)
		}
	}
	return nil
}

// WorkDir makes a temporary folder for the benchmark name (as it prints
// itself, "bench/apply") and returns it with the function that removes
// it; with keep, that function leaves it and the folder is printed.
func WorkDir(name string, keep bool) (string, func(), error) {
	dir, err := os.MkdirTemp("", "ferry-"+strings.ReplaceAll(name, "/", "-")+"-")
	if err != nil {
		return "", nil, err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "%s: work directory %s (kept)\n", name, dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

var (
	requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)
	labelPair   = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// Requests reads the API server's apiserver_request_total, summed by verb
// ("patch", "patch(dry-run)", ...), for resource requests only.
func Requests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[p[1]] = p[2]
		}
		if labels["resource"] == "" {
			continue
		}
		verb := labels["verb"]
		if labels["dry_run"] != "" {
			verb += "(dry-run)"
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[verb] += v
	}
	return out, sc.Err()
}

// RequestsSince is what Requests counts now over before: the requests
// made since, by verb, leaving out verbs with none.
func RequestsSince(ctx context.Context, cs kubernetes.Interface, before map[string]float64) (map[string]float64, error) {
	after, err := Requests(ctx, cs)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out, nil
}

// ByVerb lists request counts by verb, in the verbs' order: "get 3,
// patch 10".
func ByVerb(requests map[string]float64) string {
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(requests)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", v, requests[v]))
	}
	return strings.Join(parts, ", ")
}

// Median of xs (0 for none): float64 seconds, or time.Duration.
func Median[T ~float64 | ~int64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianBy is the element of xs (not empty) at the middle of their order
// by key, the upper one of an even count: the round whose request counts
// a benchmark shows.
func MedianBy[T any](xs []T, key func(T) time.Duration) T {
	s := slices.Clone(xs)
	sort.Slice(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
	return s[len(s)/2]
}

// Floats lists xs with two decimals, space-separated.
func Floats(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(parts, " ")
}

// LastLines is the last n lines of s, saying how many came before.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
