package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// Budgets (issue 26, item 6): a pull request's chart is code that
// ferry runs, and its patches and archives are work ferry does; each
// case below would run for minutes or take gigabytes without a budget.
// Each must fail with exit 2 naming the HelmRelease, the chart and the
// file, within the harness's peak RSS bound.

// releaseFiles is the corpus app rendering, beside its own objects, a
// HelmRelease apps/name of the chart folder charts/<name> of this
// repository (GitRepository flux-system), with spec lines (indented two
// spaces) added; limits is ferry.yaml's limits: block (indented two
// spaces), "" for none.
func releaseFiles(name string, chart map[string]string, spec, limits string) map[string]string {
	files := map[string]string{
		"app/kustomization.yaml": "resources: [deployment.yaml, secret.yaml, release.yaml]\n",
		"app/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ` + name + `
  namespace: apps
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/` + name + `
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
` + spec,
	}
	if limits != "" {
		files["ferry.yaml"] = "targets:\n  - name: app\n    path: app\nlimits:\n" + limits
	}
	for k, v := range chart {
		files["charts/"+name+"/"+k] = v
	}
	return files
}

// plainChart is a chart named name with one ConfigMap.
func plainChart(name string) map[string]string {
	return map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {a: b}\n",
	}
}

// copyPatch is a JSON patch that adds a field to /data and copies it
// into itself n times: each copy doubles it.
func copyPatch(indent string, n int) string {
	var b strings.Builder
	b.WriteString(indent + "- {op: add, path: /data/d, value: {x: " + strings.Repeat("y", 64) + "}}\n")
	for i := range n {
		fmt.Fprintf(&b, "%s- {op: copy, from: /data/d, path: /data/d/c%d}\n", indent, i)
	}
	return b.String()
}

// manyEntries writes a chart archive of n empty files (gzipped, a few
// bytes each) at rel.
func manyEntries(rel string, n int) func(t *testing.T, c *hostileRun) {
	return func(t *testing.T, c *hostileRun) {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err != nil {
			t.Fatal(err)
		}
		tw := tar.NewWriter(zw)
		write := func(name string, body string) {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		write("bomb/Chart.yaml", "apiVersion: v2\nname: bomb\nversion: 0.1.0\n")
		for i := range n {
			write(fmt.Sprintf("bomb/files/%07d", i), "")
		}
		if err := errors.Join(tw.Close(), zw.Close()); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(c.repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func hostileBudgetCases() []hostileCase {
	release := func(name string) []string {
		return []string{`target "app"`, "HelmRelease/apps/" + name, "chart " + name + " 0.1.0"}
	}
	want := func(name string, more ...string) []string { return append(release(name), more...) }
	return []hostileCase{
		{name: "template loop", class: "budget", files: releaseFiles("loop", helmtest.LoopChart(), "", "  renderTime: 2s\n"),
			want: want("loop", "loop/templates/loop.yaml", "longer than 2s", "limits.renderTime")},
		{name: "include fork", class: "budget", files: releaseFiles("fork", helmtest.ForkChart(), "", "  renderTime: 2s\n"),
			want: want("fork", "fork/templates/fork.yaml", "longer than 2s", "limits.renderTime")},
		{name: "tpl recursion", class: "budget", files: releaseFiles("recurse", helmtest.TplChart(), "", "  templateStack: 4Mi\n"),
			want: want("recurse", "recurse/templates/recurse.yaml", "limits.templateStack")},
		// 400 bytes of template rendering 320 MB, under the default
		// budgets but the time (whichever budget comes first stops it).
		{name: "template amplifies", class: "budget", files: releaseFiles("amplify", helmtest.AmplifyChart(), "", "  renderTime: 10s\n"),
			want: want("amplify", "amplify/templates/amplify.yaml", "(limits.")},
		{name: "template doubles a string", class: "budget", files: releaseFiles("double", helmtest.DoublingChart(), "", ""),
			want: want("double", "double/templates/double.yaml", "more memory than 512 MiB", "limits.renderMemory")},
		{name: "rendered bytes", class: "budget", files: releaseFiles("wide", map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: wide\nversion: 0.1.0\n",
			"templates/wide.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wide}\ndata:\n{{- range 40000 }}\n  k{{ . }}: \"" + strings.Repeat("v", 40) + "\"\n{{- end }}\n",
		}, "", "  renderedBytes: 1Mi\n"),
			want: want("wide", "wide/templates/wide.yaml", "more than 1 MiB", "limits.renderedBytes")},
		{name: "post-renderer copies double", class: "budget", files: releaseFiles("post", plainChart("post"),
			"  postRenderers:\n    - kustomize:\n        patches:\n          - target: {kind: ConfigMap}\n            patch: |\n"+copyPatch("              ", 40), ""),
			want: want("post", "spec.postRenderers[0].kustomize", "limits.patchCopySize")},
		{name: "kustomization patch copies double", class: "budget",
			files: kust("  - cm.yaml\npatches:\n  - target: {kind: ConfigMap}\n    path: grow.yaml\n"),
			setup: func(t *testing.T, c *hostileRun) {
				c.write(t, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: grow}\ndata: {a: b}\n")
				c.write(t, "app/grow.yaml", copyPatch("", 40))
			},
			want: []string{`target "app"`, "app/grow.yaml", "limits.patchCopySize"}},
		{name: "chart archive of a million entries", class: "budget", files: releaseFiles("many", plainChart("many"), "", ""),
			setup: manyEntries("charts/many/charts/bomb.tgz", 1_000_000),
			want:  []string{`target "app"`, "HelmRelease/apps/many", "chart charts/many", "charts/many/charts/bomb.tgz", "limits.chartFiles"}},
		{name: "90 MB file in a chart folder", class: "budget", files: releaseFiles("big", plainChart("big"), "", ""),
			setup: sparse("charts/big/files/big.bin", 90<<20, "x"),
			want:  []string{`target "app"`, "HelmRelease/apps/big", "chart charts/big", "charts/big/files/big.bin", "more than"}},
	}
}

// signalRun starts ferry with args in c, sends sig once ready says
// ferry is busy, and returns its exit status, its stderr and how long it
// took to exit after the signal. The bound is a hang guard; the time is
// measured, not asserted.
func signalRun(t *testing.T, c *hostileRun, sig os.Signal, ready func() bool, args ...string) (int, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(builtFerry(t), args...)
	cmd.Env = []string{"PATH=" + c.bin, "HOME=" + c.home, "TMPDIR=" + c.tmp, "SOPS_AGE_KEY=" + c.key.Identity}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		select {
		case err := <-exited:
			t.Fatalf("ferry finished before the signal (%v): %s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("ferry never got busy")
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	var err error
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("ferry did not stop after the signal")
	}
	took := time.Since(signalled)
	if stdout.Len() > 0 {
		t.Errorf("a stopped run printed %d bytes on stdout", stdout.Len())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String(), took
}

// renderChild is the pid of ferry's chart render process (a child of
// parent started with the sandbox argument), 0 while there is none.
func renderChild(parent int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || !isRenderProcess(pid) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == fmt.Sprint(parent) {
			return pid
		}
	}
	return 0
}

// isRenderProcess reports whether pid is a chart render process of
// ferry's, alive.
func isRenderProcess(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(cmdline, []byte("__ferry-helm-sandbox"))
}

// TestSignalDuringHelm: SIGTERM or SIGINT while a chart's template
// loops, or while a chart repository stalls in the middle of an archive,
// stops ferry with exit 2 saying so, leaves no temp file, no chart
// render process and nothing in the chart cache.
func TestSignalDuringHelm(t *testing.T) {
	stall := make(chan struct{})
	archive, _ := helmtest.Package(t, testtree.New(t, plainChart("slow")), "0.1.0")
	var requested atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  slow:\n    - name: slow\n      version: 0.1.0\n      urls: [slow-0.1.0.tgz]\n      digest: %s\n", strings.TrimPrefix(helmtest.Digest(archive), "sha256:"))
		case "/slow-0.1.0.tgz":
			w.Header().Set("Content-Length", fmt.Sprint(len(archive)))
			_, _ = w.Write(archive[:len(archive)/2])
			w.(http.Flusher).Flush()
			requested.Store(true)
			select { // the rest never comes
			case <-stall:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stall) }) // runs first: the handler returns

	for _, tc := range []struct {
		name  string
		sig   os.Signal
		files map[string]string
		fetch bool
	}{
		{name: "SIGTERM in a template loop", sig: syscall.SIGTERM, files: releaseFiles("loop", helmtest.LoopChart(), "", "")},
		{name: "SIGINT in a template loop", sig: os.Interrupt, files: releaseFiles("loop", helmtest.LoopChart(), "", "")},
		{name: "SIGTERM in a stalled chart download", sig: syscall.SIGTERM, fetch: true, files: map[string]string{
			"app/kustomization.yaml": "resources: [deployment.yaml, secret.yaml, release.yaml]\n",
			"app/release.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {url: "` + srv.URL + `"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: slow, namespace: apps}
spec:
  chart:
    spec: {chart: slow, version: 0.1.0, sourceRef: {kind: HelmRepository, name: charts}}
`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newHostileRun(t)
			for rel, content := range tc.files {
				c.write(t, rel, content)
			}
			cache := filepath.Join(c.dir, "out", "cache")
			child := 0
			code, stderr, took := signalRun(t, c, tc.sig, func() bool {
				if tc.fetch {
					return requested.Load()
				}
				if child == 0 {
					if ferry := findFerry(c); ferry != 0 {
						child = renderChild(ferry)
					}
				}
				return child != 0
			}, "render", "--repo", c.repo, "--cache-dir", cache)
			t.Logf("exited %v after the signal", took.Round(time.Millisecond))
			if code != exitError || !strings.Contains(stderr, "stopped before finishing") {
				t.Errorf("exit %d, want %d saying it stopped:\n%s", code, exitError, stderr)
			}
			if entries, _ := os.ReadDir(c.tmp); len(entries) > 0 {
				t.Errorf("left %d entries in TMPDIR", len(entries))
			}
			if child != 0 && isRenderProcess(child) {
				t.Errorf("the chart render process %d outlived ferry", child)
			}
			// The index is whole (fetched before the stall); no archive,
			// whole or partial, and no temporary file may be left.
			_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
				rel, _ := filepath.Rel(cache, p)
				if err == nil && !d.IsDir() && (strings.HasPrefix(rel, "charts") || strings.Contains(rel, ".tmp-")) {
					t.Errorf("the chart cache holds %s after the run was stopped", rel)
				}
				return nil
			})
		})
	}
}

// findFerry is the pid of the ferry process rendering c's repository, 0
// while there is none.
func findFerry(c *hostileRun) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(c.repo)) {
			var pid int
			if _, err := fmt.Sscan(e.Name(), &pid); err == nil {
				return pid
			}
		}
	}
	return 0
}

// TestDiffUsesBaseLimits: a pull request that raises its own budget in
// ferry.yaml is rendered under the base's: its chart that renders 2 MB
// fails the base's renderedBytes of 1 MiB, and the same change made on
// the base renders.
func TestDiffUsesBaseLimits(t *testing.T) {
	wide := map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: wide\nversion: 0.1.0\n",
		"templates/wide.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wide}\ndata:\n{{- range .Values.keys | int }}\n  k{{ . }}: \"" + strings.Repeat("v", 40) + "\"\n{{- end }}\n",
		"values.yaml":         "keys: 10\n",
	}
	files := releaseFiles("wide", wide, "", "  renderedBytes: 1Mi\n")
	files["app/kustomization.yaml"] = "resources: [release.yaml]\n"
	src := testtree.New(t, files)
	p, base := newPRRepoOf(t, src, nil)
	p.replace("charts/wide/values.yaml", "keys: 10", "keys: 40000")
	p.replace("ferry.yaml", "renderedBytes: 1Mi", "renderedBytes: 64Mi")
	head := p.commit("a chart of 2 MB, and the budget raised to let it through")
	res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", head)
	// The diff reports the target's failure and goes on; the run fails.
	if out := res.stdout + res.stderr; res.code != exitError || !strings.Contains(out, "wide/templates/wide.yaml") || !strings.Contains(out, "more than 1 MiB (limits.renderedBytes") {
		t.Errorf("diff: exit %d, want %d with the base's renderedBytes:\n%s\n%s", res.code, exitError, res.stdout, res.stderr)
	}
	// The same, merged: the revision applied is trusted with its own.
	if res := ferry(t, nil, "render", "--repo", p.dir); res.code != exitOK {
		t.Errorf("render of the head: exit %d: %s", res.code, res.stderr)
	}
}
