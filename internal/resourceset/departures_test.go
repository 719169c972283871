package resourceset_test

import (
	"context"
	"fmt"
	"hash/adler32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/resourceset"
	"github.com/ferry-ci/ferry/internal/testbin"
)

// TestDeparturesFromOracle shows, one case each, where Expand departs from
// `flux-operator build rset` v0.59.0 on purpose (see the package doc), by
// running both: the case fails if the CLI stops doing what it is said to
// do here, or ferry does not do what it says instead.
func TestDeparturesFromOracle(t *testing.T) {
	bin := testbin.Tool(t, "flux-operator", "tools")
	const cm = `resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cm-<< get inputs "name" | default "none" >>
      namespace: apps
`
	const defaults = `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: defaults
  namespace: apps
  uid: 5d1e7c2a-9b3f-4e8d-a6c1-0f2b3c4d5e6f
  labels:
    pick: "yes"
spec:
  type: Static
  defaultValues:
    name: defaults
`
	cases := []struct {
		name, rset, providers string
		oracle                []string // the CLI's objects, as summary gives them
		ferry                 []string // Expand's objects, when it succeeds
		ferryErr              string   // Expand's error, when it fails
	}{{
		// A paused ResourceSet: the CLI renders it, the cluster applies
		// nothing, ferry skips it.
		name:     "paused",
		rset:     "metadata:\n  annotations:\n    fluxcd.controlplane.io/reconcile: disabled\nspec:\n" + indent(cm),
		oracle:   []string{"ConfigMap/cm-none"},
		ferryErr: "ResourceSet/apps/departure: reconciliation is disabled",
	}, {
		// Providers selected but none matches: the CLI executes the
		// templates once without inputs; ferry generates nothing, as for
		// a provider with nothing to export.
		name:      "selector matching nothing",
		rset:      "spec:\n  inputsFrom:\n    - selector:\n        matchLabels:\n          pick: \"no\"\n" + indent(cm),
		providers: defaults,
		oracle:    []string{"ConfigMap/cm-none"},
		ferry:     nil,
	}, {
		// A provider named but not there: the CLI ignores it, ferry
		// cannot tell what it would export.
		name:      "named provider missing",
		rset:      "spec:\n  inputsFrom:\n    - name: defaults\n    - name: gone\n" + indent(cm),
		providers: defaults,
		oracle:    []string{"ConfigMap/cm-defaults"},
		ferryErr:  "ResourceSet/apps/departure: spec.inputsFrom[1]: ResourceSetInputProvider/apps/gone not found among the providers given",
	}, {
		// A label value that is not a string: the CLI drops every label
		// of the object (its own are set again after), ferry says so.
		name:     "label not a string",
		rset:     "spec:\n  inputs:\n    - flag: true\n  resources:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: cm\n        namespace: apps\n        labels:\n          team: core\n          enabled: << inputs.flag >>\n",
		oracle:   []string{"ConfigMap/cm"},
		ferryErr: `metadata.labels["enabled"] is true, not a string`,
	}, {
		// Without inputs the CLI neither de-duplicates spec.resources nor
		// leaves out the disabled ones; ferry does both, as documented
		// for every ResourceSet.
		name:   "no inputs: disabled and duplicate resources",
		rset:   "spec:\n  resources:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: paused, namespace: apps, annotations: {fluxcd.controlplane.io/reconcile: disabled}}}\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: twice, namespace: apps}, data: {n: \"1\"}}\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: twice, namespace: apps}, data: {n: \"2\"}}\n",
		oracle: []string{"ConfigMap/paused", "ConfigMap/twice", "ConfigMap/twice"},
		ferry:  []string{"ConfigMap/twice"},
	}, {
		// A Static provider with a uid: the CLI's id is the checksum of
		// the name, the cluster's (and ferry's) that of the uid.
		name:      "static provider with a uid",
		rset:      "spec:\n  inputsFrom:\n    - name: defaults\n  resources:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: \"cm-<< inputs.id >>\", namespace: apps}}\n",
		providers: defaults,
		oracle:    []string{fmt.Sprintf("ConfigMap/cm-%d", adler32.Checksum([]byte("defaults")))},
		ferry:     []string{fmt.Sprintf("ConfigMap/cm-%d", adler32.Checksum([]byte("5d1e7c2a-9b3f-4e8d-a6c1-0f2b3c4d5e6f")))},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			doc := "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: departure\n  namespace: apps\n"
			if strings.HasPrefix(c.rset, "metadata:\n") {
				doc += strings.TrimPrefix(c.rset, "metadata:\n")
			} else {
				doc += c.rset
			}
			write(t, filepath.Join(dir, "rset.yaml"), doc)
			if c.providers != "" {
				write(t, filepath.Join(dir, "providers.yaml"), c.providers)
			}
			if diff := cmp.Diff(c.oracle, summary(oracle(t, bin, dir))); diff != "" {
				t.Errorf("flux-operator no longer does what this case says (-said +did):\n%s", diff)
			}
			f := loadFixture(t, dir)
			res, err := resourceset.Expand(context.Background(), f.rset, resourceset.Options{Providers: f.providers})
			if c.ferryErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.ferryErr) {
					t.Errorf("Expand error = %v, want one containing %q", err, c.ferryErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.ferry, summary(res.Unstructured())); diff != "" {
				t.Errorf("Expand (-want +got):\n%s", diff)
			}
		})
	}
}

// summary names objects as Kind/name, with the labels other than the
// operator's own as key=value after it.
func summary(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		s := o.GetKind() + "/" + o.GetName()
		var extra []string
		for k, v := range o.GetLabels() {
			if k != resourceset.NameLabel && k != resourceset.NamespaceLabel {
				extra = append(extra, k+"="+v)
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 {
			s += " " + strings.Join(extra, ",")
		}
		out = append(out, s)
	}
	return out
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
