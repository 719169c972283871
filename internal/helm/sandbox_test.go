package helm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// TestMain serves as a Sandbox's child when started as one: the tests'
// Sandboxes run this test binary with helm.SandboxArg, as ferry runs
// itself.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == helm.SandboxArg {
		os.Exit(helm.ServeSandbox(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// newSandbox is a Sandbox of this test binary, closed when t ends.
func newSandbox(t *testing.T) *helm.Sandbox {
	t.Helper()
	s := helm.NewSandbox(os.Args[0], helm.SandboxArg)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// objectJSON is each object as JSON, for comparing renders.
func objectJSON(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestSandboxRendersAsInProcess: a render in the sandbox is the render
// in this process, object for object, with values of every type a
// HelmRelease's spec gives (an int64 prints as %d there, a float64 not),
// twice through one child (the second time without the archive).
func TestSandboxRendersAsInProcess(t *testing.T) {
	t.Parallel()
	archive, _ := helmtest.Package(t, chartDir(t, "umbrella"), "1.2.0")
	f := &helm.Fetched{Name: "umbrella", Version: "1.2.0", Digest: helmtest.Digest(archive), Archive: archive}
	r := parseRelease(t, "web", "apps", `
chart: {spec: {chart: umbrella, sourceRef: {kind: HelmRepository, name: charts}}}
targetNamespace: prod
values: {replicaCount: 3, ratio: 0.5, enabled: true, nothing: null, list: [a, 1, {b: c}]}
postRenderers:
  - kustomize:
      patches:
        - target: {kind: Deployment}
          patch: |
            - op: add
              path: /metadata/labels/patched
              value: "yes"`)
	values, err := helm.ComposeValues(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	here, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t)
	for round := range 2 {
		there, err := helm.Render(t.Context(), r, f, values, helm.RenderOptions{Sandbox: s})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if diff := cmp.Diff(objectJSON(t, here.Objects), objectJSON(t, there.Objects)); diff != "" {
			t.Errorf("round %d: objects (-in process +sandbox):\n%s", round, diff)
		}
		if diff := cmp.Diff(here.Sources, there.Sources); diff != "" {
			t.Errorf("round %d: sources (-in process +sandbox):\n%s", round, diff)
		}
		if len(here.Hooks) != len(there.Hooks) {
			t.Fatalf("round %d: %d hooks in process, %d from the sandbox", round, len(here.Hooks), len(there.Hooks))
		}
		for i, h := range here.Hooks {
			th := there.Hooks[i]
			if h.Pre != th.Pre || h.Post != th.Post || h.Source != th.Source {
				t.Errorf("round %d: hook %d is %+v in process, %+v from the sandbox", round, i, h, th)
			}
			if diff := cmp.Diff(objectJSON(t, []*unstructured.Unstructured{h.Object}), objectJSON(t, []*unstructured.Unstructured{th.Object})); diff != "" {
				t.Errorf("round %d: hook %d (-in process +sandbox):\n%s", round, i, diff)
			}
		}
		if there.Chart != here.Chart || there.Version != here.Version || there.Name != here.Name || there.Namespace != here.Namespace {
			t.Errorf("round %d: sandbox says %s %s %s/%s, in process %s %s %s/%s", round,
				there.Chart, there.Version, there.Namespace, there.Name, here.Chart, here.Version, here.Namespace, here.Name)
		}
	}
}

// folderChart writes files as a chart folder and returns it as fetched.
func folderChart(t *testing.T, name string, files map[string]string) *helm.Fetched {
	t.Helper()
	return &helm.Fetched{Name: name, Version: "0.1.0", Dir: testtree.New(t, files)}
}

// TestSandboxBudgets: each runaway chart ends with the budget that
// stopped it, naming the HelmRelease, the chart and the template (or
// post-renderer), well within its time budget's reach, and the sandbox
// renders the next release as usual afterwards.
func TestSandboxBudgets(t *testing.T) {
	t.Parallel()
	small := budget.Limits{RenderTime: 2 * time.Second, RenderMemory: 256 << 20, TemplateStack: 16 << 20, RenderedBytes: 1 << 20, PatchCopySize: 64 << 10}
	doubling := "postRenderers:\n  - kustomize:\n      patches:\n        - target: {kind: ConfigMap}\n          patch: |\n            - {op: add, path: /data/d, value: {x: " + strings.Repeat("y", 64) + "}}\n"
	for i := range 30 {
		doubling += fmt.Sprintf("            - {op: copy, from: /data/d, path: /data/d/c%d}\n", i)
	}
	for _, tc := range []struct {
		name, chart string
		files       map[string]string
		spec        string
		limit, what string
		// slow: the budget expected is not the time's, which is a
		// minute then.
		slow bool
	}{
		{name: "loop", chart: "loop", files: helmtest.LoopChart(), limit: "renderTime", what: "loop/templates/loop.yaml"},
		{name: "fork", chart: "fork", files: helmtest.ForkChart(), limit: "renderTime", what: "fork/templates/fork.yaml"},
		{name: "tpl recursion", chart: "recurse", files: helmtest.TplChart(), limit: "templateStack", what: "recurse/templates/recurse.yaml", slow: true},
		// Writing 320 MB takes seconds on a busy machine: whichever
		// budget comes first stops it.
		{name: "amplify", chart: "amplify", files: helmtest.AmplifyChart(), limit: "renderMemory|renderedBytes|renderTime", what: "amplify/templates/amplify.yaml"},
		{name: "doubling", chart: "double", files: helmtest.DoublingChart(), limit: "renderMemory", what: "double/templates/double.yaml", slow: true},
		{name: "many bytes", chart: "wide", files: map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: wide\nversion: 0.1.0\n",
			"templates/wide.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wide}\ndata:\n{{- range 40000 }}\n  k{{ . }}: \"" + strings.Repeat("v", 40) + "\"\n{{- end }}\n",
		}, limit: "renderedBytes", what: "wide/templates/wide.yaml", slow: true},
		{name: "post-renderer copies", chart: "umbrella", spec: doubling, limit: "patchCopySize", what: "spec.postRenderers[0].kustomize", slow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &helm.Fetched{Name: "umbrella", Version: "1.2.0", Dir: chartDir(t, "umbrella")}
			if tc.files != nil {
				f = folderChart(t, tc.chart, tc.files)
			}
			r := parseRelease(t, "hostile", "apps", "chart: {spec: {chart: "+tc.chart+", sourceRef: {kind: GitRepository, name: fleet}}}\n"+tc.spec)
			s := newSandbox(t)
			limits := small
			if tc.slow {
				limits.RenderTime = time.Minute
			}
			start := time.Now()
			_, err := helm.Render(t.Context(), r, f, nil, helm.RenderOptions{Sandbox: s, Limits: limits})
			t.Logf("stopped after %v: %v", time.Since(start).Round(time.Millisecond), err)
			var over *budget.Exceeded
			if !errors.As(err, &over) {
				t.Fatalf("err %v, want a budget's", err)
			}
			if !strings.Contains("|"+tc.limit+"|", "|"+over.Limit+"|") {
				t.Errorf("stopped by limits.%s, want %s", over.Limit, tc.limit)
			}
			for _, w := range []string{"HelmRelease/apps/hostile", "chart " + tc.chart, tc.what + ": "} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			plain := parseRelease(t, "plain", "apps", "chart: {spec: {chart: umbrella, sourceRef: {kind: GitRepository, name: fleet}}}")
			if _, err := helm.Render(t.Context(), plain, &helm.Fetched{Name: "umbrella", Version: "1.2.0", Dir: chartDir(t, "umbrella")}, nil,
				helm.RenderOptions{Sandbox: s, Limits: small}); err != nil {
				t.Errorf("the sandbox's next render: %v", err)
			}
		})
	}
}

// TestSandboxStopsWithContext: a render in the sandbox returns soon
// after its context ends, its child killed; the time is measured and
// printed, the bound is a hang guard.
func TestSandboxStopsWithContext(t *testing.T) {
	t.Parallel()
	r := parseRelease(t, "loop", "apps", "chart: {spec: {chart: loop, sourceRef: {kind: GitRepository, name: fleet}}}")
	f := folderChart(t, "loop", helmtest.LoopChart())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := helm.Render(ctx, r, f, nil, helm.RenderOptions{Sandbox: newSandbox(t)})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		t.Logf("returned %v after the cancel", time.Since(stopped).Round(time.Millisecond))
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "HelmRelease/apps/loop") {
			t.Errorf("err %v, want context.Canceled naming the HelmRelease", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the render did not return after its context ended")
	}
}

// TestRenderInProcessAbandons: without a sandbox, a render that loops
// is abandoned at its time budget, naming the stage it was at.
func TestRenderInProcessAbandons(t *testing.T) {
	t.Parallel()
	r := parseRelease(t, "loop", "apps", "chart: {spec: {chart: loop, sourceRef: {kind: GitRepository, name: fleet}}}")
	_, err := helm.Render(t.Context(), r, folderChart(t, "loop", helmtest.LoopChart()), nil, helm.RenderOptions{Limits: budget.Limits{RenderTime: 300 * time.Millisecond}})
	var over *budget.Exceeded
	if !errors.As(err, &over) || over.Limit != "renderTime" || over.What != "templates" {
		t.Fatalf("err %v, want limits.renderTime at the templates", err)
	}
}
