// Package benchkit holds what the Go benchmarks (bench/apply, bench/drift,
// bench/fleet) share: finding the module, reading the API server's request
// counters, and the medians and lists they print.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

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

// Median of xs (0 for none).
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
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
