package render_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// TestConcurrentBuilds runs builds at once that share kustomize's schema
// (strategic merge patches of built-in kinds, JSON patches under the copy
// bound) with builds that set their own schema, at the top and in a
// nested kustomization, and builds under another copy bound: each gives
// what it gives alone. Run with -race, it also shows the builds read
// kustomize's global state without a race.
func TestConcurrentBuilds(t *testing.T) {
	schema, cr, crPatch := customSchema, customCR, customPatch
	smp := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:2\n"
	root := testtree.New(t, map[string]string{
		"with/kustomization.yaml":    "resources: [cr.yaml]\nopenapi:\n  path: schema.json\npatches:\n  - path: patch.yaml\n",
		"with/schema.json":           schema,
		"with/cr.yaml":               cr,
		"with/patch.yaml":            crPatch,
		"nested/kustomization.yaml":  "resources: [../with]\n",
		"without/kustomization.yaml": "resources: [cr.yaml]\npatches:\n  - path: patch.yaml\n",
		"without/cr.yaml":            cr,
		"without/patch.yaml":         crPatch,
		"web/kustomization.yaml": "resources: [deployment.yaml]\npatches:\n  - path: patch.yaml\n" +
			"  - target: {kind: Deployment}\n    patch: |\n      - {op: copy, from: /spec/template, path: /metadata/annotations/copied}\n",
		"web/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations: {}\nspec:\n" +
			"  template:\n    spec:\n      containers:\n        - name: web\n          image: web:1\n        - name: side\n          image: side:1\n",
		"web/patch.yaml": smp,
	})
	type job struct {
		path  string
		limit int64
	}
	// Under a bound of 16 bytes, web's copy operation fails.
	jobs := []job{{"with", 0}, {"nested", 0}, {"without", 0}, {"web", 0}, {"web", 16}, {"without", 16}}
	do := func(j job) (string, error) {
		opts := render.Options{}
		if j.limit != 0 {
			l := budget.Defaults()
			l.PatchCopySize = j.limit
			opts.Limits = &l
		}
		res, err := render.Build(context.Background(), render.Spec{Name: j.path, Root: root, Kustomization: kustomization(t, "path: ./"+j.path)}, opts)
		if err != nil {
			return "error: " + err.Error(), nil
		}
		b, err := json.Marshal(struct {
			Objects any
			Files   []string
		}{res.Set.Objects, res.Files})
		return string(b), err
	}
	want := map[job]string{}
	for _, j := range jobs {
		out, err := do(j)
		if err != nil {
			t.Fatalf("%s alone: %v", j.path, err)
		}
		want[j] = out
	}
	// What alone gives is right: merged by the schema where one is set
	// (two items), replaced where none is (one), the Deployment patched.
	for path, items := range map[string]string{"with": `"v":2},{"name":"a"`, "nested": `"v":2},{"name":"a"`, "without": `"items":[{"name":"b","v":2}]`, "web": `"image":"web:2"`} {
		if s := want[job{path, 0}]; !contains(s, items) {
			t.Errorf("%s alone: %s, want it to hold %s", path, s, items)
		}
	}
	if s := want[job{"web", 16}]; !contains(s, "error: ") || !contains(s, "patchCopySize") {
		t.Errorf("web under a 16-byte copy bound alone: %s, want the bound's error", s)
	}
	if !contains(want[job{"nested", 0}], "with/schema.json") {
		t.Errorf("nested: the files read leave out with/schema.json: %s", want[job{"nested", 0}])
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8*len(jobs))
	for range 8 {
		for _, j := range jobs {
			wg.Go(func() {
				out, err := do(j)
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: %v", j.path, err)
				case out != want[j]:
					errs <- fmt.Errorf("%s (copy bound %d) at once with others differs from alone:\n%s", j.path, j.limit, cmp.Diff(want[j], out))
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestBuildsClaim: Await waits for a claimed key until it is put, returns
// nothing when the claim is released without a result, and stops with
// its context.
func TestBuildsClaim(t *testing.T) {
	b := render.NewBuilds()
	if _, ok := b.Await(t.Context(), "none"); ok {
		t.Fatal("Await of a key never claimed nor kept: found")
	}
	if !b.Claim("k") || b.Claim("k") {
		t.Fatal("Claim: want the first to claim and the second not")
	}
	got := make(chan *render.Result)
	go func() {
		res, _ := b.Await(context.Background(), "k")
		got <- res
	}()
	want := &render.Result{Name: "built"}
	b.Put("k", want)
	if res := <-got; res != want {
		t.Errorf("Await = %v, want the result put", res)
	}
	if b.Claim("k") {
		t.Error("Claim of a kept key succeeded")
	}

	b.Claim("fails")
	go b.Release("fails")
	if _, ok := b.Await(t.Context(), "fails"); ok {
		t.Error("Await of a released claim: found")
	}
	b.Release("fails") // a claim already ended: nothing

	b.Claim("slow")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, ok := b.Await(ctx, "slow"); ok {
		t.Error("Await with its context ended: found")
	}
}

// TestAhead: builds started ahead give what builds on their own give,
// with the files they read, a failing one its error; a spec built twice
// after one Start builds the second time itself.
func TestAhead(t *testing.T) {
	root := testtree.New(t, map[string]string{
		"a/kustomization.yaml":   "resources: [cm.yaml]\n",
		"a/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
		"b/kustomization.yaml":   "resources: [cm.yaml]\nnamePrefix: b-\n",
		"b/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"bad/kustomization.yaml": "resources: [missing.yaml]\n",
	})
	specs := []render.Spec{}
	for _, p := range []string{"a", "b", "bad"} {
		specs = append(specs, render.Spec{Name: p, Root: root, Kustomization: kustomization(t, "path: ./"+p+"\nnamespace: n-"+p)})
	}
	alone := func(opts render.Options, s render.Spec) string {
		res, err := render.Build(context.Background(), s, opts)
		if err != nil {
			return "error: " + err.Error()
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := map[string]string{}
	for _, s := range specs {
		want[s.Name] = alone(render.Options{}, s)
	}
	if !contains(want["bad"], "missing.yaml") || !contains(want["b"], `"b-x"`) || !contains(want["a"], "a/cm.yaml") {
		t.Fatalf("builds alone: %v", want)
	}
	ahead := render.NewAhead(2)
	opts := render.Options{Ahead: ahead}
	for _, s := range specs {
		ahead.Start(s, opts)
		ahead.Start(s, opts) // started once
	}
	var wg sync.WaitGroup
	got := make([]string, len(specs))
	for i, s := range specs {
		wg.Go(func() { got[i] = alone(opts, s) })
	}
	wg.Wait()
	for i, s := range specs {
		if got[i] != want[s.Name] {
			t.Errorf("%s built ahead:\n%s", s.Name, cmp.Diff(want[s.Name], got[i]))
		}
		if again := alone(opts, s); again != want[s.Name] {
			t.Errorf("%s built again after its build ahead was taken:\n%s", s.Name, cmp.Diff(want[s.Name], again))
		}
	}
}
