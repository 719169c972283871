package diff

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/risk"
	"github.com/ferry-ci/ferry/internal/secrets/masktest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// chartObjects is what chart web renders at version (its image tag from
// tag, the checksum of its config from sum): a ConfigMap, a Service and two
// Deployments, every one labelled with the chart and app version as Helm
// charts do, the Deployments' pod templates too, with the checksum of the
// config on them.
func chartObjects(t *testing.T, version, tag, sum string) []*unstructured.Unstructured {
	t.Helper()
	labels := "{helm.sh/chart: web-" + version + ", app.kubernetes.io/version: \"" + version + "\", app.kubernetes.io/name: web}"
	deployment := func(name, image string) *unstructured.Unstructured {
		return obj(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: `+name+`, namespace: shop, labels: `+labels+`}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: `+name+`}}
  template:
    metadata:
      labels: `+labels+`
      annotations: {checksum/config: `+sum+`}
    spec:
      containers: [{name: app, image: "`+image+`"}]
`)
	}
	return []*unstructured.Unstructured{
		obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: shop, labels: "+labels+"}\ndata: {greeting: hello}\n"),
		obj(t, "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop, labels: "+labels+"}\nspec: {ports: [{port: 80}]}\n"),
		deployment("web", "nginx:"+tag),
		deployment("worker", "busybox:1.36"),
	}
}

// chartBump is the report of a chart bump from 1.0.0 to 1.1.0 where only
// the web Deployment's image changes: the other three objects change only
// in their chart labels and the checksum annotation.
func chartBump(t *testing.T, opts SetsOptions) *Report {
	t.Helper()
	objs := Sets(chartObjects(t, "1.0.0", "1.27", "aaa111"), chartObjects(t, "1.1.0", "1.28", "bbb222"), opts)
	return &Report{Base: "b", Head: "h", Targets: []Target{{
		Name: "apps", Why: "changed: apps/web.yaml", Objects: objs, Counts: count(objs), Folded: FoldedOf(objs),
		Releases: []ReleaseChange{{ID: "HelmRelease/shop/web", Action: Changed,
			Base: &render.Release{ID: "HelmRelease/shop/web", Name: "web", Namespace: "shop", Chart: "web", Version: "1.0.0"},
			Head: &render.Release{ID: "HelmRelease/shop/web", Name: "web", Namespace: "shop", Chart: "web", Version: "1.1.0"}}},
	}}}
}

// TestChartBumpIsFolded: a chart bump's objects whose only changes are the
// chart's labels and checksum annotations are one line of the report,
// naming how many and the keys; the object that also changes its image is
// shown in full, its label lines included. They all count as changed.
// With ShowAllMetadata every object is shown. Reviewed golden files hold
// the three formats of both.
func TestChartBumpIsFolded(t *testing.T) {
	r := chartBump(t, SetsOptions{})
	tg := r.Targets[0]

	wantFolded := &Folded{Objects: 3, Keys: []string{"app.kubernetes.io/version", "checksum/config", "helm.sh/chart"}}
	if d := cmp.Diff(wantFolded, tg.Folded); d != "" {
		t.Errorf("Folded (-want +got)\n%s", d)
	}
	if d := cmp.Diff(Counts{Changed: 4}, tg.Counts); d != "" {
		t.Errorf("folded objects still count as changed (-want +got)\n%s", d)
	}
	if !r.Changed() {
		t.Error("a report with folded changes only must still be changed")
	}
	byName := map[string]Object{}
	for _, o := range tg.Objects {
		byName[o.ID.Kind+"/"+o.ID.Name] = o
	}
	for _, name := range []string{"ConfigMap/web-config", "Service/web", "Deployment/worker"} {
		o := byName[name]
		if o.Action != Changed || len(o.MetadataOnly) == 0 || o.Diff != "" {
			t.Errorf("%s: not folded: %+v", name, o)
		}
	}
	if d := cmp.Diff([]string{"app.kubernetes.io/version", "checksum/config", "helm.sh/chart"}, byName["Deployment/worker"].MetadataOnly); d != "" {
		t.Errorf("worker's keys (-want +got)\n%s", d)
	}
	web := byName["Deployment/web"]
	if web.MetadataOnly != nil {
		t.Errorf("web changes its image too, yet is folded: %v", web.MetadataOnly)
	}
	for _, want := range []string{
		"-      - image: nginx:1.27\n+      - image: nginx:1.28\n",
		"-    app.kubernetes.io/version: 1.0.0\n-    helm.sh/chart: web-1.0.0\n+    app.kubernetes.io/version: 1.1.0\n+    helm.sh/chart: web-1.1.0\n",
		"-        checksum/config: aaa111\n+        checksum/config: bbb222\n",
	} {
		if !strings.Contains(web.Diff, want) {
			t.Errorf("web's diff lacks %q:\n%s", want, web.Diff)
		}
	}

	const line = "3 objects: only chart labels and annotations changed (app.kubernetes.io/version, checksum/config, helm.sh/chart); --show-all-metadata shows them"
	out := renders(t, r)
	if !strings.Contains(out["text"], "target apps (changed: apps/web.yaml): 0 added, 4 changed, 0 removed, 0 unchanged\n  HelmRelease/shop/web: web 1.0.0 -> 1.1.0\n  "+line+"\n--- Deployment.apps/shop/web (changed)\n") {
		t.Errorf("text report lacks the folded line before the one object shown:\n%s", out["text"])
	}
	if !strings.Contains(out["markdown"], "\n- 3 objects: only chart labels and annotations changed (`app.kubernetes.io/version`, `checksum/config`, `helm.sh/chart`); `--show-all-metadata` shows them\n") {
		t.Errorf("markdown lacks the folded line:\n%s", out["markdown"])
	}
	for _, format := range []string{"text", "markdown"} {
		for _, name := range []string{"web-config", "Service/shop/web", "worker"} {
			if strings.Contains(out[format], name) {
				t.Errorf("%s report shows the folded %s:\n%s", format, name, out[format])
			}
		}
		if n := strings.Count(out[format], "Deployment.apps/shop/web"); n != 1 {
			t.Errorf("%s report shows web %d times, want once:\n%s", format, n, out[format])
		}
	}
	// JSON says it and still lists every object by ID, the folded ones
	// with their keys and no diff.
	var js struct {
		Targets []struct {
			Counts  Counts `json:"counts"`
			Folded  *Folded
			Objects []struct {
				ID           manifest.ID `json:"id"`
				Action       string      `json:"action"`
				Diff         string      `json:"diff"`
				MetadataOnly []string    `json:"metadataOnly"`
			} `json:"objects"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(out["json"]), &js); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantFolded, js.Targets[0].Folded); d != "" {
		t.Errorf("JSON folded (-want +got)\n%s", d)
	}
	var ids []string
	for _, o := range js.Targets[0].Objects {
		ids = append(ids, o.ID.String()+" "+o.Action+" "+strings.Join(o.MetadataOnly, ","))
	}
	wantIDs := []string{
		"ConfigMap/shop/web-config changed app.kubernetes.io/version,helm.sh/chart",
		"Service/shop/web changed app.kubernetes.io/version,helm.sh/chart",
		"Deployment.apps/shop/web changed ",
		"Deployment.apps/shop/worker changed app.kubernetes.io/version,checksum/config,helm.sh/chart",
	}
	if d := cmp.Diff(wantIDs, ids); d != "" {
		t.Errorf("JSON objects (-want +got)\n%s", d)
	}
	for format, got := range out {
		if format != "color" {
			goldenfile.Check(t, filepath.Join("testdata", "chart-bump."+format+".golden"), []byte(got), *update)
		}
	}

	// Asked for, every object is shown in full, and nothing is folded.
	all := chartBump(t, SetsOptions{ShowAllMetadata: true})
	if all.Targets[0].Folded != nil {
		t.Errorf("ShowAllMetadata folds: %+v", all.Targets[0].Folded)
	}
	out = renders(t, all)
	for _, o := range all.Targets[0].Objects {
		if o.MetadataOnly != nil || o.Diff == "" {
			t.Errorf("ShowAllMetadata: %s folded or without its diff: %+v", o.ID, o)
		}
		for _, format := range []string{"text", "markdown"} {
			if !strings.Contains(out[format], o.ID.String()) {
				t.Errorf("ShowAllMetadata: %s report lacks %s:\n%s", format, o.ID, out[format])
			}
		}
	}
	for format, got := range out {
		if strings.Contains(got, "folded") || strings.Contains(got, "show-all-metadata") {
			t.Errorf("ShowAllMetadata: %s report speaks of folding:\n%s", format, got)
		}
		if format != "color" {
			goldenfile.Check(t, filepath.Join("testdata", "chart-bump-all."+format+".golden"), []byte(got), *update)
		}
	}
}

// TestNotFolded: only a changed object whose every other field is the
// same is folded; one object alone is "1 object".
func TestNotFolded(t *testing.T) {
	cm := func(labels, annotations, data string) *unstructured.Unstructured {
		return obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns, labels: {"+labels+"}, annotations: {"+annotations+"}}\ndata: {"+data+"}\n")
	}
	sts := func(version string) *unstructured.Unstructured {
		return obj(t, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: ns, labels: {helm.sh/chart: db-"+version+"}}\n"+
			"spec: {volumeClaimTemplates: [{metadata: {name: data, labels: {helm.sh/chart: db-"+version+"}}}]}\n")
	}
	type sides struct{ base, head []*unstructured.Unstructured }
	one := func(b, h *unstructured.Unstructured) sides {
		var s sides
		if b != nil {
			s.base = []*unstructured.Unstructured{b}
		}
		if h != nil {
			s.head = []*unstructured.Unstructured{h}
		}
		return s
	}
	for _, c := range []struct {
		name   string
		sides  sides
		folded []string // the keys, nil when not folded
	}{
		{"chart labels only", one(cm("helm.sh/chart: a-1, chart: a-1", "", "k: v"), cm("helm.sh/chart: a-2, chart: a-2", "", "k: v")), []string{"chart", "helm.sh/chart"}},
		{"chart label added", one(cm("", "", "k: v"), cm("app.kubernetes.io/version: '2'", "", "k: v")), []string{"app.kubernetes.io/version"}},
		{"checksum annotation", one(cm("", "checksum/secret: x", "k: v"), cm("", "checksum/secret: y", "k: v")), []string{"checksum/secret"}},
		{"added", one(nil, cm("helm.sh/chart: a-2", "", "k: v")), nil},
		{"removed", one(cm("helm.sh/chart: a-1", "", "k: v"), nil), nil},
		{"another label", one(cm("helm.sh/chart: a-1, team: red", "", "k: v"), cm("helm.sh/chart: a-2, team: blue", "", "k: v")), nil},
		{"another label only", one(cm("team: red", "", "k: v"), cm("team: blue", "", "k: v")), nil},
		{"chart as an annotation", one(cm("", "chart: a-1", "k: v"), cm("", "chart: a-2", "k: v")), nil},
		{"checksum as a label", one(cm("checksum/config: x", "", "k: v"), cm("checksum/config: y", "", "k: v")), nil},
		{"data too", one(cm("helm.sh/chart: a-1", "", "k: v"), cm("helm.sh/chart: a-2", "", "k: w")), nil},
		{"unchanged", one(cm("helm.sh/chart: a-1", "", "k: v"), cm("helm.sh/chart: a-1", "", "k: v")), nil},
		// A claim template cannot change in place: the warning must be seen.
		{"immutable field", one(sts("1"), sts("2")), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := Sets(c.sides.base, c.sides.head, SetsOptions{})
			if len(objs) != 1 {
				t.Fatalf("got %+v", objs)
			}
			o := objs[0]
			if d := cmp.Diff(c.folded, o.MetadataOnly); d != "" {
				t.Errorf("MetadataOnly (-want +got)\n%s", d)
			}
			if c.name == "immutable field" && !risk.Refuses(c.sides.base[0], c.sides.head[0]) {
				t.Error("the claim template's change is not a refusal")
			}
			if c.folded == nil {
				if f := FoldedOf(objs); f != nil {
					t.Errorf("FoldedOf: %+v", f)
				}
				if o.Action != Unchanged && o.Diff == "" {
					t.Errorf("%s object without its diff", o.Action)
				}
				return
			}
			if o.Action != Changed || o.Diff != "" {
				t.Errorf("folded: action %s, diff %q", o.Action, o.Diff)
			}
			r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "t", Objects: objs, Counts: count(objs)}}}
			var text strings.Builder
			if err := Text(&text, r, false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "  1 object: only chart labels and annotations changed ("+strings.Join(c.folded, ", ")+"); --show-all-metadata") {
				t.Errorf("a report made by hand lacks the folded line:\n%s", text.String())
			}
		})
	}
}

// TestFoldedSecret: a Secret whose only change is its chart label is
// folded and shows nothing of its values; one whose value changes too is
// shown by key, never by value.
func TestFoldedSecret(t *testing.T) {
	secret := func(version, value string) *unstructured.Unstructured {
		return obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns, labels: {helm.sh/chart: web-"+version+"}}\nstringData: {password: "+value+"}\n")
	}
	objs := Sets([]*unstructured.Unstructured{secret("1", "hunter2")}, []*unstructured.Unstructured{secret("2", "hunter2")}, SetsOptions{})
	if d := cmp.Diff([]string{"helm.sh/chart"}, objs[0].MetadataOnly); d != "" || objs[0].Secret != nil {
		t.Errorf("label-only Secret change: MetadataOnly (-want +got)\n%s; secret %+v", d, objs[0].Secret)
	}
	rotated := Sets([]*unstructured.Unstructured{secret("1", "hunter2")}, []*unstructured.Unstructured{secret("2", "correct-horse")}, SetsOptions{})
	if rotated[0].MetadataOnly != nil || rotated[0].Secret == nil || strings.Join(rotated[0].Secret.Changed, ",") != "password" {
		t.Errorf("a rotated Secret is folded or not compared by key: %+v", rotated[0])
	}
	objs = append(objs, rotated[0])
	objs[1].ID = manifest.ID{Kind: "Secret", Namespace: "ns", Name: "s2"}
	r := &Report{Base: "b", Head: "h", Targets: []Target{{Name: "t", Objects: objs, Counts: count(objs), Folded: FoldedOf(objs)}}}
	for format, out := range renders(t, r) {
		for _, v := range []string{"hunter2", "correct-horse", "aHVudGVyMg=="} {
			if strings.Contains(out, v) {
				t.Errorf("%s report holds a Secret value:\n%s", format, out)
			}
		}
	}
}

// TestFoldedMaskedChange: an object whose chart label changes along with
// a decrypted value (masked alike on both sides) is not folded: the
// comparison is made before masking, so a hidden change is never folded
// away.
func TestFoldedMaskedChange(t *testing.T) {
	m := masktest.Masker(t, "old-token-value", "new-token-value")
	cm := func(version, token string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop, labels: {helm.sh/chart: web-"+version+"}}\ndata: {token: "+token+"}\n")}
	}
	objs := Sets(cm("1", "old-token-value"), cm("2", "new-token-value"), SetsOptions{Mask: m})
	if objs[0].MetadataOnly != nil || !strings.Contains(objs[0].Diff, "+    helm.sh/chart: web-2\n") {
		t.Errorf("a masked change is folded: %+v", objs[0])
	}
	objs = Sets(cm("1", "new-token-value"), cm("2", "new-token-value"), SetsOptions{Mask: m})
	if d := cmp.Diff([]string{"helm.sh/chart"}, objs[0].MetadataOnly); d != "" {
		t.Errorf("the same masked value on both sides: MetadataOnly (-want +got)\n%s", d)
	}
}
