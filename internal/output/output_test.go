package output_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/output"
)

// TestEveryResult: each result a command prints writes every format it
// offers, JSON always among them, and refuses any other with the same
// error, writing nothing.
func TestEveryResult(t *testing.T) {
	results := map[string]output.Result{
		"kube.ChangeSets": kube.ChangeSets{{Target: "apps", Revision: "abc", Changes: []kube.Change{{Object: manifest.ID{Kind: "ConfigMap", Namespace: "a", Name: "b"}, Action: kube.Created}}}},
		"drift.Reports":   drift.Reports{{Target: "apps", Status: "drifted"}},
		"diff.Report":     &diff.Report{Base: "b", Head: "h", Targets: []diff.Target{{Name: "apps"}}},
		"diff.Colored":    diff.Colored{Report: &diff.Report{Base: "b", Head: "h"}},
		"config.Listing":  &config.Listing{Targets: []config.ListedTarget{{Name: "apps", Path: "apps"}}},
	}
	for name, r := range results {
		offered := r.Formats()
		if len(offered) == 0 || offered[0] != output.Text || !strings.Contains(strings.Join(output.Names(offered), ","), "json") {
			t.Errorf("%s offers %v, want text first and json", name, offered)
		}
		for _, f := range offered {
			var b strings.Builder
			if err := r.Write(&b, f); err != nil || b.Len() == 0 {
				t.Errorf("%s in %s: %q, %v", name, f, b.String(), err)
			}
		}
		for _, f := range []output.Format{"yaml", "", "JSON"} {
			var b strings.Builder
			err := r.Write(&b, f)
			var unknown *output.UnknownFormatError
			if !errors.As(err, &unknown) || unknown.Format != f || b.Len() > 0 {
				t.Errorf("%s in %q: wrote %q, error %v; want an UnknownFormatError and nothing written", name, f, b.String(), err)
			}
		}
	}
	err := output.Check("yaml", output.All)
	if err == nil || err.Error() != `unknown format "yaml": want text, json or markdown` {
		t.Errorf("Check = %v", err)
	}
}
