package drift

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// sampleReports are a drifted target (with a heal), a target behind Git,
// a clean one and one that failed to render.
func sampleReports(t *testing.T) []*Report {
	scaledWeb := recorded(t, webDesired, webLive("5", "nginx:1.27", scaled), webDryRun)
	scaledWeb.FieldsChanged = true
	missing := recorded(t, strings.ReplaceAll(webDesired, "name: web", "name: api"), "", "")
	orphan := &unstructured.Unstructured{}
	orphan.SetAPIVersion("v1")
	orphan.SetKind("ConfigMap")
	orphan.SetNamespace("ns")
	orphan.SetName("old-settings")
	drifted := Detect(&kube.Comparison{
		Target: "stage", Cluster: "https://10.0.0.1:6443", Inventory: inventory(revA),
		Objects: []*kube.LiveObject{scaledWeb, missing, recorded(t, secretDesired, secretLive, secretDryRun)},
		Orphans: []*unstructured.Unstructured{orphan},
	}, revA, nil)
	drifted.Heal = &kube.ChangeSet{Target: "stage", Revision: revA, Changes: []kube.Change{
		{Object: manifest.ID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "api"}, Action: kube.Created},
		{Object: manifest.ID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, Action: kube.Configured},
		{Object: manifest.ID{Kind: "Secret", Namespace: "ns", Name: "creds"}, Action: kube.Configured},
		{Object: manifest.ID{Kind: "ConfigMap", Namespace: "ns", Name: "old-settings"}, Action: kube.Orphaned, Reason: "no longer rendered; pruning is off"},
	}}

	changed := recorded(t, webDesired, webLive("1", "nginx:1.27", ferryOwnsAll), webDryRun)
	changed.ConfigChanged = true
	behind := Detect(&kube.Comparison{Target: "prod", Cluster: "https://10.0.0.2:6443", Inventory: inventory(revA), Objects: []*kube.LiveObject{changed}}, revB, nil)

	clean := recorded(t, webDesired, webLive("2", "nginx:1.27", ferryOwnsAll), "")
	clean.Unchanged = true
	inSync := Detect(&kube.Comparison{Target: "infra", Cluster: "https://10.0.0.1:6443", Inventory: inventory(revA), Objects: []*kube.LiveObject{clean}}, revA, nil)

	broken := ErrorReport("edge", errString(`rendering target "edge": apps/edge/kustomization.yaml: missing.yaml: no such file or directory`))
	return []*Report{inSync, drifted, behind, broken}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update)
}

func TestRenderers(t *testing.T) {
	reports := sampleReports(t)
	for _, r := range []struct {
		file   string
		render func(*bytes.Buffer) error
	}{
		{"reports.txt", func(b *bytes.Buffer) error { return Text(b, reports) }},
		{"reports.md", func(b *bytes.Buffer) error { return Markdown(b, reports) }},
		{"reports.json", func(b *bytes.Buffer) error { return JSON(b, reports) }},
	} {
		t.Run(r.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := r.render(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, r.file, b.Bytes())
			for _, c := range secretCanaries {
				if strings.Contains(b.String(), c) {
					t.Errorf("a Secret value (%s) is in the output", c)
				}
			}
			// The same input renders the same bytes.
			var again bytes.Buffer
			if err := r.render(&again); err != nil || !bytes.Equal(b.Bytes(), again.Bytes()) {
				t.Error("rendering twice gave different output")
			}
		})
	}
	var back []*Report
	var b bytes.Buffer
	if err := JSON(&b, reports); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != 4 || back[1].Count(Modified) != 2 {
		t.Errorf("JSON does not read back: %v", err)
	}
}

// Names and values come from the cluster and the repository: whatever they
// hold, the markdown has no HTML element, link or image of theirs, and
// every line still belongs to the report's structure.
func TestMarkdownEscapes(t *testing.T) {
	hostile := []string{
		"<script>alert(1)</script>",
		"<img src=x onerror=alert(1)>",
		"`</code><b>x</b>",
		"[click](https://evil.example)",
		"![img](https://evil.example/x.png)",
		"a|b|c",
		"line\n# heading\n<details>",
		"**bold** _it_ ~~s~~",
		"&lt;script&gt;",
	}
	for _, h := range hostile {
		id := manifest.ID{Kind: "ConfigMap", Namespace: "ns", Name: h}
		r := &Report{
			Target: h, Status: Drifted, Cluster: h, Revision: h, AppliedRevision: revA,
			Objects: []Object{
				{Object: id, Class: Modified, Reason: h, Fields: []Field{{Path: ".data." + h, Git: encode(h), Live: encode(h + h), Managers: []string{h}}}},
				{Object: id, Class: Unknown, Reason: h},
			},
			HealError: h,
		}
		var b bytes.Buffer
		if err := Markdown(&b, []*Report{r, ErrorReport(h, errString(h))}); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		checkMarkdown(t, h, md)
		issue := MarkdownTarget(r)
		checkMarkdown(t, h, issue)
	}
}

var (
	rawTag  = regexp.MustCompile(`<[A-Za-z!/]`)
	rawLink = regexp.MustCompile(`(^|[^\\])\]\(`)
)

func checkMarkdown(t *testing.T, input, md string) {
	t.Helper()
	// Outside code spans, no tag may open and no link may form.
	outside := regexp.MustCompile("`[^`\n]*`").ReplaceAllString(md, "")
	if rawTag.MatchString(outside) || rawLink.MatchString(outside) {
		t.Errorf("input %q: markup outside code spans:\n%s", input, md)
	}
	for _, line := range strings.Split(md, "\n") {
		ok := line == "" || strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "#### ") ||
			strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "- ") ||
			strings.HasPrefix(line, "  - ") || strings.HasPrefix(line, "cluster ") || strings.HasPrefix(line, "Error: ") ||
			strings.HasPrefix(line, "Heal failed: ") || strings.HasPrefix(line, "Healed: ") ||
			strings.HasPrefix(line, "Drift issue #")
		if !ok {
			t.Errorf("input %q: line %q is not part of the report's structure", input, line)
		}
		// A table row has exactly the table's columns.
		if strings.HasPrefix(line, "| ") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 6 {
			t.Errorf("input %q: table row %q has extra cells", input, line)
		}
	}
}
