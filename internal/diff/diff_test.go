package diff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/markdown"
	"github.com/ferry-ci/ferry/internal/render"
)

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUnified(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	want := "@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n"
	if d := cmp.Diff(want, Unified(a, b)); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if got := Unified(a, a); got != "" {
		t.Errorf("equal texts give %q", got)
	}
	if got := Unified("", "x\n"); got != "@@ -0,0 +1 @@\n+x\n" {
		t.Errorf("added text: %q", got)
	}
}

func TestSetsSecretsByKeyOnly(t *testing.T) {
	base := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {a: b2xkLXZhbHVl, gone: eA==}\nstringData: {same: keep}\n")
	head := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\nstringData: {a: new-value, same: keep, fresh: hunter2}\n")
	objs := Sets(nil, nil, SetsOptions{})
	if len(objs) != 0 {
		t.Fatal("empty sets differ")
	}
	objs = Sets([]*unstructured.Unstructured{base}, []*unstructured.Unstructured{head}, SetsOptions{})
	if len(objs) != 1 || objs[0].Action != Changed {
		t.Fatalf("got %+v", objs)
	}
	want := &SecretChange{Added: []string{"fresh"}, Removed: []string{"gone"}, Changed: []string{"a"}}
	if d := cmp.Diff(want, objs[0].Secret); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "t", Objects: objs, Counts: count(objs)}}}
	var text strings.Builder
	if err := Text(&text, r, false); err != nil {
		t.Fatal(err)
	}
	var js strings.Builder
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), js.String(), strings.Join(Markdown(r), "\n")} {
		for _, v := range []string{"old-value", "b2xkLXZhbHVl", "new-value", "hunter2", "keep", "eA=="} {
			if strings.Contains(out, v) {
				t.Errorf("value %q in output:\n%s", v, out)
			}
		}
		if !strings.Contains(out, "fresh") {
			t.Errorf("key name missing from output:\n%s", out)
		}
	}
	// Only a value changed: still changed, with no YAML hunk to show.
	head2 := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {a: b3RoZXI=, gone: eA==}\nstringData: {same: keep}\n")
	objs = Sets([]*unstructured.Unstructured{base}, []*unstructured.Unstructured{head2}, SetsOptions{})
	if objs[0].Action != Changed || objs[0].Diff != "" || strings.Join(objs[0].Secret.Changed, ",") != "a" {
		t.Errorf("value-only change: %+v %+v", objs[0], objs[0].Secret)
	}
}

func TestRenamedGeneratedSecretIsPaired(t *testing.T) {
	base := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: app-secrets-5h2g8kd9f4, namespace: n}\ndata: {PASSWORD: b2xk}\n")
	head := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: app-secrets-t7m9c2b6hh, namespace: n}\ndata: {PASSWORD: bmV3}\n")
	objs := Sets([]*unstructured.Unstructured{base}, []*unstructured.Unstructured{head}, SetsOptions{Prune: true})
	if len(objs) != 2 {
		t.Fatalf("want remove + add, got %+v", objs)
	}
	var added Object
	for _, o := range objs {
		if o.Action == Added {
			added = o
		}
	}
	if added.Secret == nil || added.Secret.Of != "app-secrets-5h2g8kd9f4" || strings.Join(added.Secret.Changed, ",") != "PASSWORD" {
		t.Errorf("added secret not compared with the one it replaces: %+v", added.Secret)
	}
}

// TestRemovalWarnings: a removed object says whether the merge deletes
// it; what the change risks is the risks section's (TestRiskReport).
func TestRemovalWarnings(t *testing.T) {
	cm := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone, namespace: n}\n")
	for _, prune := range []bool{true, false} {
		objs := Sets([]*unstructured.Unstructured{cm}, nil, SetsOptions{Prune: prune})
		want := "will be pruned"
		if !prune {
			want = "stays in the cluster"
		}
		if len(objs[0].Warnings) != 1 || !strings.Contains(objs[0].Warnings[0], want) {
			t.Errorf("prune %v: %v", prune, objs[0].Warnings)
		}
	}
}

// TestMarkdownEscapes: nothing in a manifest can close the code block,
// the details element, or inject HTML.
func TestMarkdownEscapes(t *testing.T) {
	evil := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: n}\ndata: {a: \"```\\n</details><script>alert(1)</script>\"}\n")
	plain := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: n}\n")
	objs := Sets([]*unstructured.Unstructured{plain}, []*unstructured.Unstructured{evil}, SetsOptions{})
	r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "t|<b>", Why: "changed: <img src=x>", Objects: objs, Counts: count(objs)}}, Warnings: []string{"t: <script>x</script>"}}
	md := strings.Join(Markdown(r), "\n")
	if strings.Contains(md, "<script>") && !insideFence(md, "<script>") {
		t.Errorf("unescaped HTML outside a code block:\n%s", md)
	}
	if strings.Contains(md, "<img") {
		t.Errorf("HTML in the table:\n%s", md)
	}
	if !strings.Contains(md, "````diff") {
		t.Errorf("the fence is not longer than the backticks inside:\n%s", md)
	}
	if strings.Contains(md, "`t|<b>`") {
		t.Errorf("a pipe in a target name breaks the table:\n%s", md)
	}
}

// insideFence reports whether every occurrence of s is inside a fenced
// code block.
func insideFence(md, s string) bool {
	in := ""
	for _, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(l, "`")
		ticks := len(l) - len(trimmed)
		switch {
		case in == "" && ticks >= 3:
			in = l[:ticks]
		case in != "" && ticks >= len(in) && strings.TrimSpace(trimmed) == "":
			in = ""
		case in == "" && strings.Contains(l, s):
			return false
		}
	}
	return true
}

// Releases names the HelmReleases whose chart changes, by ID, and the
// renderers put them in the target's section.
func TestReleases(t *testing.T) {
	rel := func(id, chart, version string) render.Release {
		return render.Release{ID: id, Name: "n", Namespace: "ns", Chart: chart, Version: version}
	}
	base := []render.Release{
		rel("HelmRelease/apps/podinfo", "podinfo", "6.5.0"),
		rel("HelmRelease/apps/same", "web", "1.0.0"),
		rel("HelmRelease/apps/gone", "web", "1.0.0"),
		rel("HelmRelease/apps/renamed", "old", "1.0.0"),
		rel("HelmRelease/apps/unmapped", "web", "1.0.0"),
		{ID: "HelmRelease/apps/still-skipped", Skipped: "chart ./web: source Bucket/flux-system/v is an artifact"},
	}
	head := []render.Release{
		{ID: "HelmRelease/apps/unmapped", Skipped: "chart ./web: source Bucket/flux-system/v is an artifact"},
		{ID: "HelmRelease/apps/still-skipped", Skipped: "chart ./web: source Bucket/flux-system/v is an artifact"},
		rel("HelmRelease/apps/same", "web", "1.0.0"),
		rel("HelmRelease/apps/renamed", "new", "2.0.0"),
		rel("HelmRelease/apps/podinfo", "podinfo", "6.6.0"),
		rel("HelmRelease/apps/fresh", "web", "1.1.0"),
	}
	got := Releases(base, head)
	want := []string{
		"HelmRelease/apps/fresh added: web 1.1.0",
		"HelmRelease/apps/gone removed: web 1.0.0",
		"HelmRelease/apps/podinfo: podinfo 6.5.0 -> 6.6.0",
		"HelmRelease/apps/renamed: old 1.0.0 -> new 2.0.0",
		"HelmRelease/apps/unmapped: web 1.0.0 -> (not rendered)",
	}
	var lines []string
	for _, c := range got {
		lines = append(lines, c.label()+": "+c.Charts())
	}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if len(Releases(base, base)) != 0 {
		t.Error("equal releases differ")
	}

	r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "apps", Releases: got, Counts: Counts{Changed: 1}}}}
	var text strings.Builder
	if err := Text(&text, r, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "target apps (): 0 added, 1 changed, 0 removed, 0 unchanged\n  HelmRelease/apps/fresh added: web 1.1.0\n") {
		t.Errorf("text report lacks the releases under its target:\n%s", text.String())
	}
	md := Markdown(r)
	if len(md) < 2 || !strings.Contains(md[1], "- `HelmRelease/apps/podinfo`: chart `podinfo 6.5.0 -> 6.6.0`") || !strings.Contains(md[1], "- `HelmRelease/apps/gone` removed: chart `web 1.0.0`") {
		t.Errorf("markdown target section lacks the releases:\n%s", strings.Join(md, "\n"))
	}

	// A release not rendered says why, in both renderers: the reason as
	// render gave it, once prefixed "not rendered".
	const why = "not rendered: chart ./web: source Bucket/flux-system/v is an artifact"
	if !strings.Contains(text.String(), "  HelmRelease/apps/unmapped: web 1.0.0 -> (not rendered)\n    "+why+"\n") {
		t.Errorf("text report lacks why the release is not rendered:\n%s", text.String())
	}
	if len(md) < 2 || !strings.Contains(md[1], "- `HelmRelease/apps/unmapped`: chart `web 1.0.0 -> (not rendered)`\n  - "+markdown.Text(why)) {
		t.Errorf("markdown lacks why the release is not rendered:\n%s", strings.Join(md, "\n"))
	}
	trusted := ReleaseChange{ID: "HelmRelease/apps/evil", Action: Added, Head: &render.Release{Skipped: "not rendered: new chart source http://h:1 (allow it)"}}
	if got, want := trusted.NotRendered(), "not rendered: new chart source http://h:1 (allow it)"; got != want {
		t.Errorf("NotRendered() = %q, want %q", got, want)
	}
	if got := Releases(base, head)[0].NotRendered(); got != "" {
		t.Errorf("a rendered release: NotRendered() = %q, want none", got)
	}
}

// A target rendered without a substituteFrom object only the cluster
// holds says so in every format, with the variables left as written.
func TestRenderedWithoutIsReported(t *testing.T) {
	cm := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: n}\ndata: {url: \"https://dash.${SECRET_DOMAIN}\"}\n")
	objs := Sets(nil, []*unstructured.Unstructured{cm}, SetsOptions{})
	r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "apps", Why: "changed", Objects: objs, Counts: count(objs), RenderedWithout: []string{"Secret/flux-system/cluster-secrets"}, Unresolved: []string{"SECRET_DOMAIN"}}}}
	want := "rendered without Secret/flux-system/cluster-secrets (not in Git: only the cluster holds it, and apply, drift and diff --live read it there); ${SECRET_DOMAIN} left as written"
	md := strings.Join(Markdown(r), "\n")
	if !strings.Contains(md, "rendered without Secret/flux-system/cluster-secrets") || !strings.Contains(md, "SECRET_DOMAIN") {
		t.Errorf("markdown lacks the note:\n%s", md)
	}
	var text, js strings.Builder
	if err := Text(&text, r, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"renderedWithout": [`) || !strings.Contains(js.String(), `"unresolved": [`) {
		t.Errorf("JSON lacks renderedWithout/unresolved:\n%s", js.String())
	}
}
