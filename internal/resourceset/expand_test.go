package resourceset_test

import (
	"context"
	"errors"
	"fmt"
	"hash/adler32"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

// TestExpandGolden renders every fixture under testdata and compares the
// objects, with where each comes from, with the reviewed golden.yaml beside
// it (go test -update rewrites them; TestExpandMatchesOracle checks the
// objects against flux-operator).
func TestExpandGolden(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			res := loadFixture(t, dir).expand(t)
			goldenfile.Check(t, filepath.Join(dir, "golden.yaml"), goldenYAML(t, res), *update)
		})
	}
}

// rset builds a ResourceSet in namespace "apps" from the YAML of its spec.
func rset(t *testing.T, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	objs := parseObjects(t, []byte("apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: "+name+"\n  namespace: apps\nspec:\n"+indent(specYAML)))
	return objs[0]
}

// provider builds a ResourceSetInputProvider in namespace "apps".
func provider(t *testing.T, name, typ string, labels map[string]string, defaults map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fluxcd.controlplane.io/v1",
		"kind":       "ResourceSetInputProvider",
		"metadata":   map[string]any{"name": name, "namespace": "apps"},
		"spec":       map[string]any{"type": typ},
	}}
	if labels != nil {
		u.SetLabels(labels)
	}
	if defaults != nil {
		u.Object["spec"].(map[string]any)["defaultValues"] = defaults
	}
	return u
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func names(res *resourceset.Result) []string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Object.GetName())
	}
	return out
}

const configMapPerInput = `resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cm-<< inputs.id >>
      namespace: apps
`

// TestPermuteDynamic permutes two providers of several input sets each,
// which only Options.Dynamic can give (the oracle resolves Static
// providers only): the first source varies slowest, and each id is the
// checksum of its "key=index" pairs.
func TestPermuteDynamic(t *testing.T) {
	rs := rset(t, "matrix", `inputStrategy:
  name: Permute
inputsFrom:
  - name: branches
  - name: tags
`+configMapPerInput)
	dyn := map[string][]map[string]any{
		"branches": {{"id": "b1", "branch": "main"}, {"id": "b2", "branch": "dev"}},
		"tags":     {{"id": "t1", "tag": "v1"}, {"id": "t2", "tag": "v2"}, {"id": "t3", "tag": "v3"}},
	}
	opts := resourceset.Options{
		Providers: []*unstructured.Unstructured{provider(t, "tags", "GitHubTag", nil, nil), provider(t, "branches", "GitHubBranch", nil, nil)},
		Dynamic: func(_ context.Context, p *unstructured.Unstructured) ([]map[string]any, error) {
			return dyn[p.GetName()], nil
		},
	}
	res, err := resourceset.Expand(context.Background(), rs, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, in := range res.Inputs {
		got = append(got, fmt.Sprintf("%s/%s %s", in["branches"].(map[string]any)["branch"], in["tags"].(map[string]any)["tag"], in["id"]))
	}
	for b, branch := range []string{"main", "dev"} {
		for tg, tag := range []string{"v1", "v2", "v3"} {
			id := adler32.Checksum([]byte(fmt.Sprintf("branches=%d/tags=%d", b, tg)))
			want = append(want, fmt.Sprintf("%s/%s %d", branch, tag, id))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("permutations (-want +got):\n%s", diff)
	}
	if len(res.Objects) != 6 {
		t.Errorf("%d objects, want 6: %v", len(res.Objects), names(res))
	}
	if p := res.Inputs[0]["tags"].(map[string]any)["provider"]; !cmp.Equal(p, map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSetInputProvider", "name": "tags", "namespace": "apps"}) {
		t.Errorf("inputs.tags.provider = %v", p)
	}
	if _, ok := dyn["tags"][0]["provider"]; ok {
		t.Error("Expand wrote the built-in fields into the maps Dynamic returned")
	}
}

// TestPermuteEmptyProvider: a provider without inputs is left out of the
// product, unless includeEmptyProviders, when nothing is generated.
func TestPermuteEmptyProvider(t *testing.T) {
	spec := func(include bool) string {
		return fmt.Sprintf(`inputStrategy:
  name: Permute
  includeEmptyProviders: %t
inputs:
  - env: dev
  - env: prod
inputsFrom:
  - name: prs
resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cm-<< inputs.matrix.env >>
      namespace: apps
`, include)
	}
	opts := resourceset.Options{
		Providers: []*unstructured.Unstructured{provider(t, "prs", "GitHubPullRequest", nil, nil)},
		Dynamic:   func(context.Context, *unstructured.Unstructured) ([]map[string]any, error) { return nil, nil },
	}
	res, err := resourceset.Expand(context.Background(), rset(t, "matrix", spec(false)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cm-dev", "cm-prod"}, names(res)); diff != "" {
		t.Errorf("without includeEmptyProviders (-want +got):\n%s", diff)
	}
	res, err = resourceset.Expand(context.Background(), rset(t, "matrix", spec(true)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Inputs) != 0 || len(res.Objects) != 0 {
		t.Errorf("with includeEmptyProviders: %d input sets and objects %v, want none", len(res.Inputs), names(res))
	}
}

// TestStaticID: the cluster's id of a Static provider is the checksum of
// its uid; a provider from a file has none, and its name stands in.
func TestStaticID(t *testing.T) {
	p := provider(t, "defaults", "Static", nil, map[string]any{"x": "y"})
	if got, want := resourceset.StaticID(p), fmt.Sprint(adler32.Checksum([]byte("defaults"))); got != want {
		t.Errorf("without uid: %s, want %s (checksum of the name)", got, want)
	}
	p.SetUID(types.UID("0b6c2a8e-8f4e-4c47-9a55-3c2f0e1d7a10"))
	if got, want := resourceset.StaticID(p), fmt.Sprint(adler32.Checksum([]byte("0b6c2a8e-8f4e-4c47-9a55-3c2f0e1d7a10"))); got != want {
		t.Errorf("with uid: %s, want %s (checksum of the uid)", got, want)
	}
	rs := rset(t, "one", "inputsFrom:\n  - name: defaults\n"+configMapPerInput)
	res, err := resourceset.Expand(context.Background(), rs, resourceset.Options{Providers: []*unstructured.Unstructured{p}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res), []string{"cm-" + resourceset.StaticID(p)}; !cmp.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"git-tag":          "git_tag",
		"my-Rset.v2":       "my_rset_v2",
		"Prov_B.x":         "prov_b_x",
		"--a  b__c--":      "a_b_c",
		"ünï-ok":           "n_ok",
		"image.tag":        "image_tag",
		"plain":            "plain",
		"a+b":              "ab",
		"UPPER case-Words": "upper_case_words",
	} {
		if got := resourceset.NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSlugify checks slugify against what flux-operator v0.59.0 renders
// for the same strings: transliterated, "&" and "@" spelt out, at most 63
// characters cut at a dash where one is close enough.
func TestSlugify(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Hello World", "hello-world"},
		{"feat/UI_Color.Scheme--v2", "feat-ui_color-scheme-v2"},
		{"  --Ünïcødé straße 日本--  ", "unicode-strasse-ri-ben"},
		{"a__b..c  d@@e", "a__b-c-datate"},
		{"a'b\"c&d", "abcandd"},
		{"_lead_and_trail_", "lead_and_trail"},
		{"---", ""},
		{strings.Repeat("a", 60) + "-" + strings.Repeat("b", 10), strings.Repeat("a", 60)},
		{strings.Repeat("a", 62) + "_b", strings.Repeat("a", 62) + "_"},
		{strings.Repeat("a", 63) + "-b", strings.Repeat("a", 63)},
		{strings.Repeat("-a", 40), strings.TrimSuffix(strings.Repeat("a-", 32), "-")},
	}
	var inputs, data strings.Builder
	inputs.WriteString("inputs:\n  - x: x\n")
	for i, c := range cases {
		fmt.Fprintf(&inputs, "    s%d: %q\n", i, c.in)
		fmt.Fprintf(&data, "      s%d: << inputs.s%d | slugify | quote >>\n", i, i)
	}
	rs := rset(t, "slugs", inputs.String()+"resources:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: slugs\n    data:\n"+data.String())
	res, err := resourceset.Expand(context.Background(), rs, resourceset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Objects[0].Object.Object["data"].(map[string]any)
	for i, c := range cases {
		if g := got[fmt.Sprintf("s%d", i)]; g != c.want {
			t.Errorf("slugify(%q) = %q, want %q", c.in, g, c.want)
		}
	}
}

// TestInputsOrderAndProvider: spec.inputs first, then the providers by
// name whatever the order of spec.inputsFrom, each once; providers of
// other namespaces and other kinds are not seen.
func TestInputsOrderAndProvider(t *testing.T) {
	rs := rset(t, "ordered", `inputs:
  - name: inline
inputsFrom:
  - name: zeta
  - selector:
      matchLabels:
        pick: "yes"
  - name: mid
resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.name >>
      namespace: apps
      annotations:
        from: << inputs.provider.kind >>/<< inputs.provider.namespace >>/<< inputs.provider.name >>
`)
	pick := map[string]string{"pick": "yes"}
	elsewhere := provider(t, "alpha", "Static", pick, map[string]any{"name": "elsewhere"})
	elsewhere.SetNamespace("other")
	notProvider := provider(t, "beta", "Static", pick, map[string]any{"name": "configmap"})
	notProvider.SetKind("ConfigMap")
	opts := resourceset.Options{Providers: []*unstructured.Unstructured{
		provider(t, "zeta", "Static", nil, map[string]any{"name": "zeta"}),
		provider(t, "mid", "Static", pick, map[string]any{"name": "mid"}),
		provider(t, "alpha", "Static", pick, map[string]any{"name": "alpha"}),
		elsewhere, notProvider,
	}}
	res, err := resourceset.Expand(context.Background(), rs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"inline", "alpha", "mid", "zeta"}, names(res)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	var from []string
	for _, o := range res.Objects {
		from = append(from, o.Object.GetAnnotations()["from"])
	}
	want := []string{"ResourceSet/apps/ordered", "ResourceSetInputProvider/apps/alpha", "ResourceSetInputProvider/apps/mid", "ResourceSetInputProvider/apps/zeta"}
	if diff := cmp.Diff(want, from); diff != "" {
		t.Errorf("inputs.provider (-want +got):\n%s", diff)
	}
}

// TestResultOrigins: each object says which input set and template made
// it; disabled objects and what the cluster fills in are listed apart.
func TestResultOrigins(t *testing.T) {
	res := loadFixture(t, "testdata/dedup").expand(t)
	type origin struct {
		Name, Template string
		Input          int
	}
	var got []origin
	for _, o := range res.Objects {
		got = append(got, origin{o.Object.GetName(), o.Template, o.Input})
	}
	want := []origin{
		{"settings", "spec.resources[0]", 1},
		{"registry-first", "spec.resources[1]", 0},
		{"registry-second", "spec.resources[1]", 1},
		{"registry-third", "spec.resources[1]", 2},
		{"worker", "spec.resources[2]", 0},
		{"template-first", "spec.resourcesTemplate", 0},
		{"template-second", "spec.resourcesTemplate", 1},
		{"template-third", "spec.resourcesTemplate", 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(res.Excluded) != 1 || res.Excluded[0].Input != 0 || res.Excluded[0].Object.GetName() != "settings" {
		t.Errorf("excluded = %+v, want settings of input set 0", res.Excluded)
	}
	if got := res.Objects[0].Object.Object["data"]; !cmp.Equal(got, map[string]any{"from": "resources-second"}) {
		t.Errorf("settings data = %v, want the first enabled one's, from spec.resources", got)
	}
	wantCluster := []resourceset.ClusterData{
		{Object: "Secret/ops/registry-first", Annotation: resourceset.CopyFromAnnotation, Value: "flux-system/registry-auth"},
		{Object: "Secret/ops/registry-second", Annotation: resourceset.CopyFromAnnotation, Value: "flux-system/registry-auth"},
		{Object: "Secret/ops/registry-third", Annotation: resourceset.CopyFromAnnotation, Value: "flux-system/registry-auth"},
		{Object: "Deployment/ops/worker", Annotation: resourceset.ChecksumFromAnnotation, Value: "ConfigMap/ops/settings"},
	}
	if diff := cmp.Diff(wantCluster, res.FromCluster); diff != "" {
		t.Errorf("FromCluster (-want +got):\n%s", diff)
	}
}

// TestExpandErrors: each way Expand fails, with the exact message a user
// reads.
func TestExpandErrors(t *testing.T) {
	static := []*unstructured.Unstructured{provider(t, "defaults", "Static", nil, map[string]any{"tenant": "x"})}
	many := make([]map[string]any, 101)
	for i := range many {
		many[i] = map[string]any{"id": fmt.Sprint(i)}
	}
	var inline strings.Builder
	inline.WriteString("inputs:\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&inline, "  - n: %d\n", i)
	}
	dynamic := func(context.Context, *unstructured.Unstructured) ([]map[string]any, error) { return many, nil }
	cases := []struct {
		name     string
		rset     *unstructured.Unstructured
		opts     resourceset.Options
		want     string
		wantSkip bool
	}{{
		name: "template that does not parse",
		rset: rset(t, "bad", "inputs:\n  - a: b\nresourcesTemplate: |\n  kind: << inputs.a | nope >>\n"),
		want: `ResourceSet/apps/bad: template: spec.resourcesTemplate:1: function "nope" not defined`,
	}, {
		name: "missing input key",
		rset: rset(t, "missing", "inputs:\n  - tenant: a\n  - other: b\n"+strings.ReplaceAll(configMapPerInput, "inputs.id", "inputs.tenant")),
		want: `ResourceSet/apps/missing: input set 1: template: spec.resources[0]:4:14: executing "spec.resources[0]" at <inputs>: map has no entry for key "tenant"`,
	}, {
		name: "inputs.id of an inline input",
		rset: rset(t, "noid", "inputs:\n  - tenant: a\n"+configMapPerInput),
		want: `ResourceSet/apps/noid: input set 0: template: spec.resources[0]:4:14: executing "spec.resources[0]" at <inputs>: map has no entry for key "id"`,
	}, {
		name: "permute over 10000",
		rset: rset(t, "huge", "inputStrategy:\n  name: Permute\n"+inline.String()+"inputsFrom:\n  - name: tags\n"+configMapPerInput),
		opts: resourceset.Options{Providers: []*unstructured.Unstructured{provider(t, "tags", "OCIArtifactTag", nil, nil)}, Dynamic: dynamic},
		want: "ResourceSet/apps/huge: spec.inputStrategy Permute: more than 10000 input sets (ResourceSetInputProvider/apps/tags makes them at least 10100)",
	}, {
		name: "permute over a lower cap",
		rset: rset(t, "capped", "inputStrategy:\n  name: Permute\n"+inline.String()+configMapPerInput),
		opts: resourceset.Options{MaxInputs: 99},
		want: "ResourceSet/apps/capped: spec.inputStrategy Permute: more than 99 input sets (ResourceSet/apps/capped makes them at least 100)",
	}, {
		name:     "dynamic provider without Dynamic",
		rset:     rset(t, "prs", "inputsFrom:\n  - name: pulls\n"+configMapPerInput),
		opts:     resourceset.Options{Providers: []*unstructured.Unstructured{provider(t, "pulls", "GitHubPullRequest", nil, nil)}},
		want:     "ResourceSet/apps/prs: its inputs come from ResourceSetInputProvider/apps/pulls of type GitHubPullRequest, which only the cluster can resolve; ferry.yaml would have to give that provider's inputs",
		wantSkip: true,
	}, {
		name: "dynamic provider failing",
		rset: rset(t, "prs", "inputsFrom:\n  - name: pulls\n"+configMapPerInput),
		opts: resourceset.Options{
			Providers: []*unstructured.Unstructured{provider(t, "pulls", "GitLabMergeRequest", nil, nil)},
			Dynamic: func(context.Context, *unstructured.Unstructured) ([]map[string]any, error) {
				return nil, errors.New("no inputs configured for it")
			},
		},
		want: "ResourceSet/apps/prs: ResourceSetInputProvider/apps/pulls: resolving inputs: no inputs configured for it",
	}, {
		name: "dynamic provider skipping",
		rset: rset(t, "prs", "inputsFrom:\n  - name: pulls\n"+configMapPerInput),
		opts: resourceset.Options{
			Providers: []*unstructured.Unstructured{provider(t, "pulls", "GiteaPullRequest", nil, nil)},
			Dynamic: func(context.Context, *unstructured.Unstructured) ([]map[string]any, error) {
				return nil, &resourceset.SkipError{ResourceSet: "ResourceSetInputProvider/apps/pulls", Reason: "ferry.yaml gives no inputs for it"}
			},
		},
		want:     "ResourceSet/apps/prs: ResourceSetInputProvider/apps/pulls: resolving inputs: ResourceSetInputProvider/apps/pulls: ferry.yaml gives no inputs for it",
		wantSkip: true,
	}, {
		name: "provider not given",
		rset: rset(t, "lost", "inputsFrom:\n  - name: defaults\n  - name: gone\n"+configMapPerInput),
		opts: resourceset.Options{Providers: static},
		want: "ResourceSet/apps/lost: spec.inputsFrom[1]: ResourceSetInputProvider/apps/gone not found among the providers given",
	}, {
		name: "unknown input strategy",
		rset: rset(t, "odd", "inputStrategy:\n  name: Shuffle\ninputs:\n  - a: b\n"+configMapPerInput),
		want: `ResourceSet/apps/odd: spec.inputStrategy.name "Shuffle" is not one of Flatten, Permute`,
	}, {
		name: "name and selector",
		rset: rset(t, "both", "inputsFrom:\n  - name: defaults\n    selector: {}\n"+configMapPerInput),
		opts: resourceset.Options{Providers: static},
		want: "ResourceSet/apps/both: spec.inputsFrom[0]: exactly one of name and selector must be set",
	}, {
		name:     "paused",
		rset:     withAnnotation(rset(t, "paused", "inputs:\n  - a: b\n"+configMapPerInput), "fluxcd.controlplane.io/reconcile", "disabled"),
		want:     "ResourceSet/apps/paused: reconciliation is disabled (fluxcd.controlplane.io/reconcile: disabled): the operator applies nothing for it and leaves what it applied before",
		wantSkip: true,
	}, {
		name: "label that is not a string",
		rset: rset(t, "labels", "inputs:\n  - flag: true\nresources:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: cm\n      namespace: apps\n      labels:\n        enabled: << inputs.flag >>\n"),
		want: `ResourceSet/apps/labels: input set 0: ConfigMap/apps/cm: metadata.labels["enabled"] is true, not a string (quote it in the template: the operator would drop all the object's labels)`,
	}, {
		name: "an object in two steps",
		rset: rset(t, "steps", "inputs:\n  - a: b\nsteps:\n  - name: one\n    resources:\n      - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: apps}}\n  - name: two\n    resources:\n      - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: apps}}\n"),
		want: `ResourceSet/apps/steps: input set 0: ConfigMap/apps/cm is generated by step "one" and by step "two": an object belongs to one step`,
	}, {
		name: "too many steps",
		rset: rset(t, "long", "steps:\n"+manySteps(21)),
		want: "ResourceSet/apps/long: spec.steps: 21 steps, more than the 20 allowed",
	}, {
		name: "steps with resources",
		rset: rset(t, "mixed", "steps:\n  - name: one\n    resourcesTemplate: x\n"+configMapPerInput),
		want: "ResourceSet/apps/mixed: spec.steps cannot be set with spec.resources or spec.resourcesTemplate",
	}, {
		name: "rendered document without kind",
		rset: rset(t, "kindless", "resourcesTemplate: |\n  apiVersion: v1\n  metadata:\n    name: x\n"),
		want: "ResourceSet/apps/kindless: without inputs: spec.resourcesTemplate generated an object without apiVersion, kind or metadata.name: /x",
	}, {
		name: "templates rendering too much",
		rset: rset(t, "big", "inputs:\n  - a: b\n  - a: c\nresourcesTemplate: |\n  # << repeat 20000000 \"x\" >>\n"),
		want: "ResourceSet/apps/big: input set 1: the templates render more than 32 MiB of YAML: refused",
	}, {
		name: "several templates failing",
		rset: rset(t, "two", "inputs:\n  - a: b\nresources:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: << inputs.x >>}}\nresourcesTemplate: |\n  << inputs.y >>\n"),
		want: "ResourceSet/apps/two: input set 0: template: spec.resources[0]:4:11: executing \"spec.resources[0]\" at <inputs>: map has no entry for key \"x\"\n" +
			"input set 0: template: spec.resourcesTemplate:1:3: executing \"spec.resourcesTemplate\" at <inputs>: map has no entry for key \"y\"",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := resourceset.Expand(context.Background(), c.rset, c.opts)
			if err == nil {
				t.Fatalf("no error; objects %v", names(res))
			}
			if err.Error() != c.want {
				t.Errorf("error:\n got %s\nwant %s", err, c.want)
			}
			var skip *resourceset.SkipError
			if errors.As(err, &skip) != c.wantSkip {
				t.Errorf("errors.As(*SkipError) = %t, want %t", !c.wantSkip, c.wantSkip)
			}
		})
	}
}

func withAnnotation(u *unstructured.Unstructured, k, v string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{k: v})
	return u
}

// TestNoInputSets: a ResourceSet without inputs executes its templates
// once with inputs empty; one whose providers export nothing generates
// nothing.
func TestNoInputSets(t *testing.T) {
	const tmpl = `resourcesTemplate: |
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
    namespace: apps
  data:
    inputs: << inputs | toJson | quote >>
`
	res, err := resourceset.Expand(context.Background(), rset(t, "static", "inputs: []\n"+tmpl), resourceset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 || res.Objects[0].Input != -1 || res.Objects[0].Object.Object["data"].(map[string]any)["inputs"] != "null" {
		t.Errorf("without inputs: %+v, want one object rendered with inputs null", res.Objects)
	}
	opts := resourceset.Options{
		Providers: []*unstructured.Unstructured{provider(t, "prs", "GitHubPullRequest", nil, nil)},
		Dynamic:   func(context.Context, *unstructured.Unstructured) ([]map[string]any, error) { return nil, nil },
	}
	res, err = resourceset.Expand(context.Background(), rset(t, "previews", "inputsFrom:\n  - name: prs\n"+tmpl), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 0 {
		t.Errorf("provider without inputs: objects %v, want none", names(res))
	}
}

// TestDynamicFlatten: a dynamic provider's input sets keep their own ids
// and get the provider's reference.
func TestDynamicFlatten(t *testing.T) {
	opts := resourceset.Options{
		Providers: []*unstructured.Unstructured{provider(t, "prs", "GitHubPullRequest", nil, nil)},
		Dynamic: func(_ context.Context, p *unstructured.Unstructured) ([]map[string]any, error) {
			return []map[string]any{{"id": "12", "sha": "abc"}, {"id": "7", "sha": "def", "provider": "overridden"}}, nil
		},
	}
	rs := rset(t, "previews", `inputsFrom:
  - name: prs
resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: preview-<< inputs.id >>
      namespace: apps
    data:
      sha: << inputs.sha >>
      from: << inputs.provider.name >>
`)
	res, err := resourceset.Expand(context.Background(), rs, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range res.Objects {
		d := o.Object.Object["data"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %s", o.Object.GetName(), d["sha"], d["from"]))
	}
	if diff := cmp.Diff([]string{"preview-12 abc prs", "preview-7 def prs"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestBoundedFunctions: the sprig functions a number sizes work as in
// sprig, and refuse sizes that would exhaust the runner.
func TestBoundedFunctions(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`until 3 | toJson`, `[0,1,2]`},
		{`until -2 | toJson`, `[0,-1]`},
		{`untilStep 2 10 3 | toJson`, `[2,5,8]`},
		{`seq 3`, `1 2 3`},
		{`seq 5 3`, `5 4 3`},
		{`seq 0 5 12`, `0 5 10`},
		{`repeat 3 "ab"`, `ababab`},
		{`"a\nb" | indent 2`, "  a\n  b"},
		{`"a" | nindent 1`, "\n a"},
		{`until 100001`, "error: until: a list of about 100002 numbers is more than the 100000 allowed"},
		{`untilStep 0 2000000000 2`, "error: untilStep: a list of about 1000000001 numbers is more than the 100000 allowed"},
		{`seq -99999999`, "error: seq: a list of about 100000001 numbers is more than the 100000 allowed"},
		{`repeat 40000000 "x"`, "error: repeat: a text of 40000000 bytes is more than the 33554432 allowed"},
		{`repeat -1 "x"`, "error: repeat: negative count -1"},
		{`"x" | indent 40000000`, "error: indent: a text of 40000001 bytes is more than the 33554432 allowed"},
		{`"x" | nindent -1`, "error: nindent: negative count -1"},
	} {
		t.Run(c.expr, func(t *testing.T) {
			rs := rset(t, "fn", "resourcesTemplate: |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm\n  data:\n    v: << "+c.expr+" | quote >>\n")
			res, err := resourceset.Expand(context.Background(), rs, resourceset.Options{})
			got := ""
			if err != nil {
				// Past text/template's own words, "error calling <func>: ".
				got = "error: " + err.Error()[strings.LastIndex(err.Error(), "error calling ")+len("error calling "):]
			} else {
				got = res.Objects[0].Object.Object["data"].(map[string]any)["v"].(string)
			}
			if got != c.want {
				t.Errorf("%s = %q, want %q", c.expr, got, c.want)
			}
		})
	}
}

func manySteps(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: s%d, resourcesTemplate: x}\n", i)
	}
	return b.String()
}

// TestExpandCanceled: a done context stops the executions.
func TestExpandCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := resourceset.Expand(ctx, rset(t, "late", "inputs:\n  - a: b\n"+configMapPerInput), resourceset.Options{})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "ResourceSet/apps/late: ") {
		t.Errorf("error = %v, want context.Canceled after the ResourceSet", err)
	}
}
