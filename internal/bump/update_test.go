package bump

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/images"
)

const releaseFile = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart:
    spec:
      chart: web
      version: 1.0.0 # pinned
  values:
    image: registry.test/web:1.0 # {"$imagepolicy": "apps:web"}
`

// TestNewUpdatesGrouped: grouped, an image marker and a chart version of
// the same file are one update, the file holding both changes; apart,
// each update changes its own line only.
func TestNewUpdatesGrouped(t *testing.T) {
	read := func(f string) ([]byte, error) {
		if f == "apps/web.yaml" {
			return []byte(releaseFile), nil
		}
		return nil, fs.ErrNotExist
	}
	pol := &images.Policy{Name: "web", Namespace: "apps", Image: "registry.test/web"}
	imageOnly := strings.Replace(releaseFile, "web:1.0 #", "web:1.1 #", 1)
	img := images.Update{Key: "apps:web", Results: []*images.PolicyResult{{Policy: pol, Tag: "1.1"}},
		Files: []images.FileChange{{Path: "apps/web.yaml", Old: []byte(releaseFile), New: []byte(imageOnly),
			Changes: []images.Change{{File: "apps/web.yaml", Line: 10, Policy: pol, Old: "registry.test/web:1.0", New: "registry.test/web:1.1"}}}}}
	moves := []ChartMove{
		{Chart: "web", Source: "oci://registry.test/charts", Objects: []string{"HelmRelease/apps/web"}, Kind: "HelmRelease",
			Field: config.FieldReleaseVersion, File: "apps/web.yaml", Line: 8, Old: "1.0.0", New: "1.1.0"},
		{Chart: "web", Source: "oci://registry.test/charts", Objects: []string{"HelmRelease/apps/gone"}, Kind: "HelmRelease",
			Field: config.FieldReleaseVersion, File: "apps/gone.yaml", Line: 8, Old: "1.0.0", New: "1.1.0"},
	}

	apart, err := NewUpdates([]images.Update{img}, moves, read, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(apart) != 2 || apart[0].Kind != "image" || apart[1].Kind != "chart" {
		t.Fatalf("apart: %+v", apart)
	}
	chartOnly := strings.Replace(releaseFile, "version: 1.0.0 #", "version: 1.1.0 #", 1)
	if got := string(apart[1].HeadFiles()["apps/web.yaml"]); got != chartOnly {
		t.Errorf("chart update's file:\n%s", got)
	}
	if f := apart[1].Fields; f.Namespace+"/"+f.Name != "chart/registry.test-charts/web" || f.Tag != "1.1.0" || f.Kind != "chart" || f.Image != "web chart from oci://registry.test/charts" {
		t.Errorf("chart fields %+v", f)
	}
	// The move of a file the base lacks is left out.
	if len(apart[1].Changes) != 1 {
		t.Errorf("chart changes %+v", apart[1].Changes)
	}

	grouped, err := NewUpdates([]images.Update{img}, moves, read, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(grouped) != 1 || grouped[0].Key != "all" || grouped[0].Fields.Count != 2 {
		t.Fatalf("grouped: %+v", grouped)
	}
	both := strings.Replace(chartOnly, "web:1.0 #", "web:1.1 #", 1)
	if diff := cmp.Diff(map[string][]byte{"apps/web.yaml": []byte(both)}, grouped[0].HeadFiles()); diff != "" {
		t.Errorf("grouped files (-want +got):\n%s", diff)
	}
	var objs []string
	for _, c := range grouped[0].Changes {
		objs = append(objs, c.Object)
	}
	if diff := cmp.Diff([]string{"ImagePolicy/apps/web", "HelmRelease/apps/web"}, objs); diff != "" {
		t.Errorf("grouped changes (-want +got):\n%s", diff)
	}
	summary := grouped[0].Summary()
	for _, want := range []string{"`registry.test/web` to `1.1`", "chart `web` to `1.1.0`", "| `apps/web.yaml:8` | HelmRelease/apps/web | `1.0.0` → `1.1.0` |"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// TestDescribe: the failure first and the label on when the change does
// not render; the rendered diff in the body while it fits, the rest as
// comments, everything masked.
func TestDescribe(t *testing.T) {
	u := &Update{Key: "chart x", Kind: "chart", charts: []ChartMove{{Chart: "web", Source: "oci://r.test/c", New: "1.1.0", Objects: []string{"HelmRelease/a/web"}}}}
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret", "***") }

	d := Describe(u, Rendered{Err: errors.New("chart web 1.1.0: template: s3cret failed")}, mask)
	if !strings.HasPrefix(d.Body, "> [!CAUTION]\n> **This change does not render**") || !d.Labels[RenderFailsLabel] || strings.Contains(d.Body, "s3cret") || len(d.Comments) != 0 {
		t.Errorf("failing: labels %v, comments %d, body:\n%s", d.Labels, len(d.Comments), d.Body)
	}

	// A report whose blocks overflow the body.
	r := &diff.Report{Base: "base", Head: "proposed"}
	for i := range 12 {
		r.Targets = append(r.Targets, diff.Target{Name: "t" + string(rune('a'+i)), Counts: diff.Counts{Changed: 1}, Objects: []diff.Object{{
			Action: diff.Changed, Diff: strings.Repeat("-a: s3cret\n+a: b\n", 400),
		}}})
	}
	d = Describe(u, Rendered{Report: r, Notes: []ChartNotes{{Chart: "web", Version: "1.1.0", Home: "javascript:alert(1)", Changes: []string{"fixed"}}}}, mask)
	if d.Labels[RenderFailsLabel] || len(d.Comments) == 0 || len([]rune(d.Body)) > BodyLimit {
		t.Fatalf("overflowing: labels %v, %d comments, body of %d", d.Labels, len(d.Comments), len([]rune(d.Body)))
	}
	all := d.Body + strings.Join(d.Comments, "")
	if strings.Contains(all, "s3cret") || !strings.Contains(d.Body, "goes on in the comments below") || !strings.Contains(all, "#### `tl`") {
		t.Errorf("overflowing: the report is not all there, masked")
	}
	if strings.Contains(d.Body, "](javascript:") || !strings.Contains(d.Body, "home `javascript:alert(1)`") {
		t.Errorf("a link that is no http(s) URL is not a link:\n%s", d.Body[:400])
	}
}
