package diff

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/risk"
)

// riskReport is a report of two targets whose change risks something of
// every kind the tables know, one risk accepted by the pull request and
// one by an annotation.
func riskReport(t *testing.T) *Report {
	t.Helper()
	deploy := func(labels, env string) *unstructured.Unstructured {
		return obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: "+labels+"}\n  template:\n    metadata: {labels: "+labels+"}\n    spec: {containers: [{name: web, image: web:1, envFrom: ["+env+"]}]}\n")
	}
	claim := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: uploads, namespace: shop}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}\n")
	ks := func(suspend string) *unstructured.Unstructured {
		return obj(t, "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: shop, namespace: flux-system}\nspec: {suspend: "+suspend+", prune: true}\n")
	}
	flow := obj(t, "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: ci, annotations: {ferry.dev/accept-risk: api-removed}}\nspec: {priorityLevelConfiguration: {name: workload-low}}\n")
	flowBase := obj(t, "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata: {name: ci}\nspec: {priorityLevelConfiguration: {name: workload-high}}\n")

	shopBase := []*unstructured.Unstructured{deploy("{app: web}", "{secretRef: {name: web-env}}"), claim}
	shopHead := []*unstructured.Unstructured{deploy("{app: web, tier: front}", "{secretRef: {name: web-env}}, {secretRef: {name: web-db}}")}
	platBase := []*unstructured.Unstructured{ks("false"), flowBase}
	platHead := []*unstructured.Unstructured{ks("true"), flow}
	r := &Report{Base: "1111111111111111111111111111111111111111", Head: "2222222222222222222222222222222222222222"}
	var pending []*targetRisks
	for i, tc := range []struct {
		name       string
		base, head []*unstructured.Unstructured
		releases   []ReleaseChange
	}{
		{"platform", platBase, platHead, nil},
		{"shop", shopBase, shopHead, nil},
	} {
		objs := Sets(tc.base, tc.head, SetsOptions{Prune: true})
		r.Targets = append(r.Targets, Target{Name: tc.name, Why: "files changed", Prune: true, Objects: objs, Counts: count(objs)})
		pending = append(pending, newTargetRisks(i, nil, tc.name, tc.base, tc.head, true, tc.releases, "v1.33.0"))
	}
	r.Risks = findRisks(t.Context(), pending, nil, nil, nil, nil)
	risk.Accept(r.Risks, risk.AcceptedIDs("# ferry: accept-risk flux-suspend:Kustomization/flux-system/shop:spec.suspend"), nil)
	r.markRisks()
	return r
}

// TestRiskReport: the risks come first in the text and markdown reports,
// in the JSON report's risks list, and beside their objects; accepted
// ones say by what. Golden files, reviewed.
func TestRiskReport(t *testing.T) {
	r := riskReport(t)
	var got []string
	for _, rk := range r.Risks {
		got = append(got, string(rk.Level)+" "+rk.ID+" "+rk.Accepted)
	}
	want := []string{
		"refused api-removed:FlowSchema/ci:apiVersion annotation ferry.dev/accept-risk",
		"refused immutable-field:Deployment/shop/web:spec.selector ",
		"destructive prune-data:PersistentVolumeClaim/shop/uploads:prune ",
		"warning flux-suspend:Kustomization/flux-system/shop:spec.suspend pull request",
		"warning dangling-reference:Deployment/shop/web:Secret/web-db ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("risks\n got %q\nwant %q", got, want)
	}
	out := renders(t, r)
	for format, first := range map[string]string{"text": "risks: 5 risks (2 refused, 1 destructive, 2 warning), 2 accepted", "markdown": "**What this change risks**: 5 risks"} {
		i, j := strings.Index(out[format], first), strings.Index(out[format], "Deployment")
		if i < 0 || j < i {
			t.Errorf("%s: the risks do not come first:\n%s", format, out[format])
		}
	}
	var js struct {
		Risks []risk.Risk `json:"risks"`
	}
	if err := json.Unmarshal([]byte(out["json"]), &js); err != nil || len(js.Risks) != 5 || js.Risks[1].Field != "spec.selector" || js.Risks[1].Base != `{"matchLabels":{"app":"web"}}` {
		t.Errorf("json risks (%v): %+v", err, js.Risks)
	}
	for format, got := range out {
		if format != "color" {
			goldenfile.Check(t, filepath.Join("testdata", "risks."+format+".golden"), []byte(got), *update)
		}
	}
}

// A diff's notification of a target says its risks.
func TestRiskNotification(t *testing.T) {
	r := riskReport(t)
	got := r.changeMessage(r.Targets[1], "shop")
	if want := "Revision 222222222222 changes shop: 0 added, 1 changed, 1 removed; 3 risks (1 refused, 1 destructive, 1 warning)"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := r.changeMessage(Target{Name: "quiet", Counts: Counts{Changed: 1}}, "quiet"); strings.Contains(got, "risk") {
		t.Errorf("a target without risks: %q", got)
	}
}
