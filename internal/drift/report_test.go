package drift

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
)

func parse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// Objects as the API server returns them. ferry applied web with 2
// replicas and image nginx:1.27; the server defaulted the rest.
const (
	webDesired = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`
	// What applying gives: ferry owns replicas, the container's name and
	// image, and its label.
	webDryRun = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {app: web, team: ml}
  managedFields:
  - {manager: ferry, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1,
     fieldsV1: {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}}
  - {manager: kubectl-label, operation: Update, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:labels": {"f:team": {}}}}}
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  template:
    spec:
      containers: [{name: web, image: "nginx:1.27", imagePullPolicy: IfNotPresent}]
`
)

// webLive is the live Deployment with replicas and image as given, and
// managedFields as given.
func webLive(replicas, image, managed string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {app: web, team: ml}
  managedFields:
` + managed + `
spec:
  replicas: ` + replicas + `
  progressDeadlineSeconds: 600
  template:
    spec:
      containers: [{name: web, image: "` + image + `", imagePullPolicy: IfNotPresent}]
`
}

const (
	ferryOwnsAll = `  - {manager: ferry, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1,
     fieldsV1: {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}}
  - {manager: kubectl-label, operation: Update, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:labels": {"f:team": {}}}}}`
	scaled = `  - {manager: ferry, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1,
     fieldsV1: {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}}
  - {manager: kubectl, operation: Update, subresource: scale, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:replicas": {}}}}`
	imageTaken = `  - {manager: ferry, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1,
     fieldsV1: {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}}}}}}}}
  - {manager: helm, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}}`
)

const (
	secretDesired = `apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: ns}
stringData: {token: canary-git-value-1a2b, user: admin-canary-3c4d}
`
	secretDryRun = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: ns
  managedFields:
  - {manager: ferry, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:stringData": {"f:token": {}, "f:user": {}}}}
data: {token: Y2FuYXJ5LWdpdC12YWx1ZS0xYTJi, user: YWRtaW4tY2FuYXJ5LTNjNGQ=}
`
	// token edited by kubectl patch to "canary-live-value-5e6f".
	secretLive = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: ns
  managedFields:
  - {manager: ferry, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:stringData": {"f:token": {}, "f:user": {}}}}
  - {manager: kubectl-patch, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:token": {}}}}
data: {token: Y2FuYXJ5LWxpdmUtdmFsdWUtNWU2Zg==, user: YWRtaW4tY2FuYXJ5LTNjNGQ=}
`
)

// secretCanaries are the values in the Secrets above, plain and base64.
var secretCanaries = []string{
	"canary-git-value-1a2b", "admin-canary-3c4d", "canary-live-value-5e6f",
	"Y2FuYXJ5LWdpdC12YWx1ZS0xYTJi", "YWRtaW4tY2FuYXJ5LTNjNGQ=", "Y2FuYXJ5LWxpdmUtdmFsdWUtNWU2Zg==",
}

const revA, revB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

func inventory(revision string) *kube.Inventory {
	return &kube.Inventory{Exists: true, Revision: revision, AppliedAt: time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC)}
}

// recorded is a LiveObject ferry applied: a member with a record.
func recorded(t *testing.T, desired, live, dryRun string) *kube.LiveObject {
	lo := &kube.LiveObject{Desired: parse(t, desired), Member: true, Recorded: true}
	lo.ID = manifest.IDOf(lo.Desired)
	if live != "" {
		lo.Live = parse(t, live)
	}
	if dryRun != "" {
		lo.DryRun = parse(t, dryRun)
	}
	return lo
}

func TestClassify(t *testing.T) {
	type tc struct {
		name     string
		object   func() *kube.LiveObject
		revision string  // checked out; the inventory has revA
		want     *Object // nil: in sync
	}
	web := manifest.ID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	creds := manifest.ID{Kind: "Secret", Namespace: "ns", Name: "creds"}
	tests := []tc{
		{"unchanged costs nothing", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:1.27", ferryOwnsAll), "")
			lo.Unchanged = true
			return lo
		}, revA, nil},
		{"a foreign label and server defaults are not drift", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:1.27", ferryOwnsAll), webDryRun)
			lo.FieldsChanged = true // e.g. ferry's field set was rewritten, nothing differs
			return lo
		}, revA, nil},
		{"kubectl scale", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("5", "nginx:1.27", scaled), webDryRun)
			lo.FieldsChanged = true
			return lo
		}, revA, &Object{Object: web, Class: Modified, Fields: []Field{
			{Path: ".spec.replicas", Git: raw("2"), Live: raw("5"), Managers: []string{"kubectl (scale)"}},
		}}},
		{"another manager took the image by force", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:evil", imageTaken), webDryRun)
			lo.FieldsChanged = true
			return lo
		}, revA, &Object{Object: web, Class: Modified, Fields: []Field{
			{Path: `.spec.template.spec.containers[name="web"].image`, Git: raw(`"nginx:1.27"`), Live: raw(`"nginx:evil"`), Managers: []string{"helm"}},
		}}},
		{"another manager owns a field ferry owned, same value", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:1.27", imageTaken), webDryRun)
			lo.FieldsChanged = true
			return lo
		}, revA, &Object{Object: web, Class: Modified, Fields: []Field{
			{Path: `.spec.template.spec.containers[name="web"].image`, Git: raw(`"nginx:1.27"`), Live: raw(`"nginx:1.27"`), Managers: []string{"helm"}},
		}}},
		{"changed in Git, cluster behind: pending", func() *kube.LiveObject {
			// Git says 2 now; ferry applied 1 and still owns it.
			lo := recorded(t, webDesired, webLive("1", "nginx:1.27", ferryOwnsAll), webDryRun)
			lo.ConfigChanged = true
			return lo
		}, revB, &Object{Object: web, Class: Pending, Reason: "changed in Git since the last apply", Fields: []Field{
			{Path: ".spec.replicas", Git: raw("2"), Live: raw("1"), Pending: true},
		}}},
		{"changed in Git and scaled by hand: drift wins", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("5", "nginx:1.27", scaled), webDryRun)
			lo.ConfigChanged, lo.FieldsChanged = true, true
			return lo
		}, revB, &Object{Object: web, Class: Modified, Fields: []Field{
			{Path: ".spec.replicas", Git: raw("2"), Live: raw("5"), Managers: []string{"kubectl (scale)"}},
		}}},
		{"deleted", func() *kube.LiveObject {
			return recorded(t, webDesired, "", "")
		}, revA, &Object{Object: web, Class: Missing, Reason: "deleted from the cluster"}},
		{"a Helm hook deleted by its policy after it ran is not missing", func() *kube.LiveObject {
			lo := recorded(t, webDesired, "", "")
			lo.HookDeleted, lo.Unchanged = true, true
			return lo
		}, revA, nil},
		{"a Helm hook deleted by its policy, changed in Git since: pending", func() *kube.LiveObject {
			lo := recorded(t, webDesired, "", "")
			lo.HookDeleted, lo.ConfigChanged = true, true
			return lo
		}, revA, &Object{Object: web, Class: Pending, Reason: "Helm hook changed in Git since it last ran (deleted by its hook-delete-policy since)"}},
		{"new in Git, not applied yet", func() *kube.LiveObject {
			lo := recorded(t, webDesired, "", "")
			lo.Recorded, lo.Member, lo.ConfigChanged = false, false, true
			return lo
		}, revB, &Object{Object: web, Class: Pending, Reason: "not applied yet"}},
		{"absent at the applied revision", func() *kube.LiveObject {
			lo := recorded(t, webDesired, "", "")
			lo.Recorded, lo.Member = false, false
			return lo
		}, revA, &Object{Object: web, Class: Missing, Reason: "deleted from the cluster"}},
		{"made by hand", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:1.27", ferryOwnsAll), webDryRun)
			lo.Recorded, lo.Member = false, false
			return lo
		}, revA, &Object{Object: web, Class: Unowned, Reason: "in the cluster, in no inventory: not applied by ferry"}},
		{"another target's", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:1.27", ferryOwnsAll), webDryRun)
			lo.Recorded, lo.Member, lo.PartOf = false, false, "applyset-x-v1"
			return lo
		}, revA, &Object{Object: web, Class: Unowned, Reason: "in the cluster as a member of another ApplySet (applyset-x-v1), not of this target's"}},
		{"dry-run rejected", func() *kube.LiveObject {
			lo := recorded(t, webDesired, webLive("2", "nginx:1.27", ferryOwnsAll), "")
			lo.Err = errString("Deployment.apps/ns/web: denied by a webhook")
			return lo
		}, revA, &Object{Object: web, Class: Unknown, Reason: "cannot be dry-run: Deployment.apps/ns/web: denied by a webhook"}},
		{"Secret value edited: key named, value hidden", func() *kube.LiveObject {
			return recorded(t, secretDesired, secretLive, secretDryRun)
		}, revA, &Object{Object: creds, Class: Modified, Fields: []Field{
			{Path: ".data.token", Hidden: true, Managers: []string{"kubectl-patch"}},
		}}},
		{"Secret value changed in Git: pending", func() *kube.LiveObject {
			lo := recorded(t, secretDesired, secretLive, secretDryRun)
			lo.ConfigChanged = true
			return lo
		}, revB, &Object{Object: creds, Class: Pending, Reason: "changed in Git since the last apply", Fields: []Field{
			{Path: ".data.token", Hidden: true, Managers: []string{"kubectl-patch"}, Pending: true},
		}}},
		{"Secret as applied", func() *kube.LiveObject {
			return recorded(t, secretDesired, secretDryRun, secretDryRun)
		}, revA, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &kube.Comparison{Target: "app", Inventory: inventory(revA), Objects: []*kube.LiveObject{tc.object()}}
			r := Detect(c, tc.revision, nil)
			want := []Object{}
			inSync := 1
			if tc.want != nil {
				want, inSync = []Object{*tc.want}, 0
			}
			if diff := cmp.Diff(want, r.Objects, cmp.Transformer("raw", func(m []byte) string { return string(m) })); diff != "" || r.InSync != inSync {
				t.Errorf("objects (-want +got):\n%s\nin sync %d, want %d", diff, r.InSync, inSync)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func raw(s string) []byte { return []byte(s) }

func TestOrphansAndStatus(t *testing.T) {
	orphan := func(name string, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetAnnotations(annotations)
		return u
	}
	orphans := []*unstructured.Unstructured{
		orphan("gone", nil),
		orphan("kept", map[string]string{kube.AnnotationPrune: kube.PruneDisabled}),
		orphan("flux-kept", map[string]string{kube.AnnotationFluxPrune: kube.PruneDisabled}),
	}
	classes := func(r *Report) map[string]Class {
		out := map[string]Class{}
		for _, o := range r.Objects {
			out[o.Object.Name] = o.Class
		}
		return out
	}
	tests := []struct {
		name     string
		inv      *kube.Inventory
		revision string
		orphans  []*unstructured.Unstructured
		want     map[string]Class
		status   Status
		behind   bool
	}{
		{"at the applied revision", inventory(revA), revA, orphans,
			map[string]Class{"gone": Orphaned, "kept": Kept, "flux-kept": Kept}, Drifted, false},
		{"behind Git", inventory(revA), revB, orphans,
			map[string]Class{"gone": Pending, "kept": Kept, "flux-kept": Kept}, NotApplied, true},
		{"only kept objects", inventory(revA), revA, orphans[1:],
			map[string]Class{"kept": Kept, "flux-kept": Kept}, InSync, false},
		{"revision unknown", inventory(revA), "", nil, map[string]Class{}, InSync, false},
		{"never applied", &kube.Inventory{}, revA, nil, map[string]Class{}, NotApplied, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Detect(&kube.Comparison{Target: "app", Inventory: tc.inv, Orphans: tc.orphans}, tc.revision, nil)
			if diff := cmp.Diff(tc.want, classes(r)); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
			if r.Status != tc.status || r.Behind != tc.behind {
				t.Errorf("status %q behind %v, want %q %v", r.Status, r.Behind, tc.status, tc.behind)
			}
		})
	}
	e := ErrorReport("broken", errString(`rendering target "broken": missing.yaml: no such file`))
	if e.Status != Failed || !e.Failed() || e.Drifted() || len(e.Objects) != 0 {
		t.Errorf("error report: %+v", e)
	}
}
