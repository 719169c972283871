package risk_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/kube/kubetest"
	"github.com/ferry-ci/ferry/internal/risk"
)

// cp is one real control plane (etcd + kube-apiserver) for the package.
var cp *kubetest.ControlPlane

func TestMain(m *testing.M) { os.Exit(kubetest.Run(m, &cp)) }

// server applies objects to the control plane as ferry does (server-side
// apply, forced).
type server struct {
	t      *testing.T
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newServer(t *testing.T) *server {
	p := cp.Require(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(p.RESTConfig())
	return &server{t: t, dyn: dynamic.NewForConfigOrDie(p.RESTConfig()), mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (s *server) resource(o *unstructured.Unstructured) dynamic.ResourceInterface {
	s.t.Helper()
	gvk := o.GroupVersionKind()
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		s.mapper.Reset()
		if m, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			s.t.Fatal(err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return s.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	return s.dyn.Resource(m.Resource)
}

func (s *server) apply(o *unstructured.Unstructured) error {
	b, err := o.MarshalJSON()
	if err != nil {
		s.t.Fatal(err)
	}
	force := true
	_, err = s.resource(o).Patch(context.Background(), o.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "ferry", Force: &force})
	return err
}

func objects(t *testing.T, ns, doc string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, part := range strings.Split(strings.ReplaceAll(doc, "{ns}", ns), "\n---\n") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(part), &m); err != nil {
			t.Fatalf("%v:\n%s", err, part)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// TestOracle applies each case's base to a real API server, then its
// head: for every change ferry's tables say the server refuses, the
// apply of the head really fails, naming the field, and ferry flagged
// exactly that object and field before it; a change with no risk (a
// scale, an image) applies.
func TestOracle(t *testing.T) {
	s := newServer(t)
	deployment := func(labels, replicas, image string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: {ns}}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: ` + labels + `}
  template:
    metadata: {labels: ` + labels + `}
    spec: {containers: [{name: web, image: ` + image + `}]}
`
	}
	statefulSet := func(serviceName, size, policy, history string) string {
		return `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: {ns}}
spec:
  serviceName: ` + serviceName + `
  podManagementPolicy: ` + policy + `
  revisionHistoryLimit: ` + history + `
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:17}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: ` + size + `}}}
`
	}
	job := func(image string) string {
		return `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: {ns}}
spec:
  suspend: true
  template:
    spec: {restartPolicy: Never, containers: [{name: m, image: ` + image + `}]}
`
	}
	service := func(ip string) string {
		return `apiVersion: v1
kind: Service
metadata: {name: web, namespace: {ns}}
spec: {clusterIP: ` + ip + `, clusterIPs: [` + ip + `], ports: [{port: 80}]}
`
	}
	binding := func(role string) string {
		return `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers, namespace: {ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + role + `}
subjects: [{kind: Group, name: readers, apiGroup: rbac.authorization.k8s.io}]
`
	}
	configMap := func(value string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: {ns}}
immutable: true
data: {value: ` + value + `}
`
	}
	crd := func(scope, versions string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets{nsid}.example.com}
spec:
  group: example.com
  scope: ` + scope + `
  names: {plural: widgets{nsid}, singular: widget{nsid}, kind: Widget{nsid}, listKind: Widget{nsid}List}
  versions:
` + versions
	}
	version := func(name string, storage bool) string {
		st := "false"
		if storage {
			st = "true"
		}
		return "  - {name: " + name + ", served: true, storage: " + st + ", schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n"
	}
	claim := func(size, mode string) string {
		return `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: expandable-{ns}}
provisioner: example.com/none
allowVolumeExpansion: true
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: {ns}}
spec:
  storageClassName: expandable-{ns}
  accessModes: [` + mode + `]
  resources: {requests: {storage: ` + size + `}}
`
	}

	workload := func(kind, labels string) string {
		return `apiVersion: apps/v1
kind: ` + kind + `
metadata: {name: agent, namespace: {ns}}
spec:
  selector: {matchLabels: ` + labels + `}
  template:
    metadata: {labels: ` + labels + `}
    spec: {containers: [{name: agent, image: agent:1}]}
`
	}
	indexedJob := func(mode string) string {
		return `apiVersion: batch/v1
kind: Job
metadata: {name: shards, namespace: {ns}}
spec:
  suspend: true
  completions: 2
  completionMode: ` + mode + `
  template:
    spec: {restartPolicy: Never, containers: [{name: s, image: shard:1}]}
`
	}
	clusterBinding := func(role string) string {
		return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: readers-{ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + role + `}
subjects: [{kind: Group, name: readers, apiGroup: rbac.authorization.k8s.io}]
`
	}
	storageClass := func(typ string) string {
		return `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast-{ns}}
provisioner: example.com/disk
parameters: {type: ` + typ + `}
`
	}
	volume := func(claim string) string {
		return `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-{ns}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /data}
  claimRef: {namespace: {ns}, name: ` + claim + `}
`
	}
	secret := func(value string) string {
		return `apiVersion: v1
kind: Secret
metadata: {name: token, namespace: {ns}}
immutable: true
stringData: {token: ` + value + `}
`
	}
	for _, tc := range []struct {
		name, base, head string
		// risks are the rule:field of the refused risks ferry must find
		// (the head's apply then fails); none: the apply succeeds.
		risks []string
		// bound marks the PersistentVolumeClaim bound before the head,
		// as a volume controller would.
		bound bool
	}{
		{name: "scale and image", base: deployment("{app: web}", "1", "nginx:1.27"), head: deployment("{app: web}", "3", "nginx:1.28")},
		{name: "Deployment selector", base: deployment("{app: web}", "1", "nginx:1.27"), head: deployment("{app: web, tier: front}", "1", "nginx:1.27"),
			risks: []string{"immutable-field:spec.selector"}},
		{name: "StatefulSet volumeClaimTemplates", base: statefulSet("db", "1Gi", "OrderedReady", "10"), head: statefulSet("db", "2Gi", "OrderedReady", "10"),
			risks: []string{"immutable-field:spec.volumeClaimTemplates"}},
		{name: "StatefulSet serviceName and podManagementPolicy", base: statefulSet("db", "1Gi", "OrderedReady", "10"), head: statefulSet("db-headless", "1Gi", "Parallel", "10"),
			risks: []string{"immutable-field:spec.podManagementPolicy", "immutable-field:spec.serviceName"}},
		{name: "StatefulSet revisionHistoryLimit", base: statefulSet("db", "1Gi", "OrderedReady", "10"), head: statefulSet("db", "1Gi", "OrderedReady", "5")},
		{name: "Job template", base: job("migrate:1"), head: job("migrate:2"), risks: []string{"immutable-field:spec.template"}},
		{name: "Service clusterIP", base: service("10.96.7.7"), head: service("10.96.7.8"),
			risks: []string{"immutable-field:spec.clusterIP", "immutable-field:spec.clusterIPs"}},
		{name: "RoleBinding roleRef", base: binding("view"), head: binding("edit"), risks: []string{"immutable-field:roleRef"}},
		{name: "immutable ConfigMap", base: configMap("one"), head: configMap("two"), risks: []string{"immutable-field:data"}},
		{name: "CRD scope", base: crd("Namespaced", version("v1", true)), head: crd("Cluster", version("v1", true)), risks: []string{"immutable-field:spec.scope"}},
		{name: "CRD kind", base: crd("Namespaced", version("v1", true)), head: strings.Replace(crd("Namespaced", version("v1", true)), "kind: Widget{nsid},", "kind: Gizmo{nsid},", 1),
			risks: []string{"immutable-field:spec.names.kind"}},
		{name: "CRD storage version dropped", base: crd("Namespaced", version("v1alpha1", true)), head: crd("Namespaced", version("v1", true)),
			risks: []string{"crd-version-removed:spec.versions"}},
		{name: "PVC access modes", base: claim("1Gi", "ReadWriteOnce"), head: claim("1Gi", "ReadWriteMany"), bound: true,
			risks: []string{"immutable-field:spec.accessModes"}},
		{name: "PVC shrinks", base: claim("2Gi", "ReadWriteOnce"), head: claim("1Gi", "ReadWriteOnce"), bound: true,
			risks: []string{"immutable-field:spec.resources.requests.storage"}},
		{name: "ReplicaSet selector", base: workload("ReplicaSet", "{app: agent}"), head: workload("ReplicaSet", "{app: agent, v: two}"), risks: []string{"immutable-field:spec.selector"}},
		{name: "DaemonSet selector", base: workload("DaemonSet", "{app: agent}"), head: workload("DaemonSet", "{app: agent, v: two}"), risks: []string{"immutable-field:spec.selector"}},
		{name: "Job completionMode", base: indexedJob("NonIndexed"), head: indexedJob("Indexed"), risks: []string{"immutable-field:spec.completionMode"}},
		{name: "ClusterRoleBinding roleRef", base: clusterBinding("view"), head: clusterBinding("edit"), risks: []string{"immutable-field:roleRef"}},
		{name: "StorageClass parameters", base: storageClass("ssd"), head: storageClass("hdd"), risks: []string{"immutable-field:parameters"}},
		{name: "PersistentVolume claimRef", base: volume("one"), head: volume("two")}, // a volume not bound yet may be claimed anew
		{name: "immutable Secret", base: secret("one"), head: secret("two"), risks: []string{"immutable-field:data"}},
		{name: "PVC grows", base: claim("1Gi", "ReadWriteOnce"), head: claim("2Gi", "ReadWriteOnce"), bound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			nsid := strings.ReplaceAll(ns, "-", "")
			fill := func(doc string) string { return strings.ReplaceAll(doc, "{nsid}", nsid) }
			base, head := objects(t, ns, fill(tc.base)), objects(t, ns, fill(tc.head))
			for _, o := range base {
				if err := s.apply(o); err != nil {
					t.Fatalf("applying the base %s: %v", o.GetName(), err)
				}
			}
			if tc.bound {
				s.bind(ns, "data")
			}
			for _, o := range base {
				if o.GetKind() == "CustomResourceDefinition" {
					s.established(o)
				}
			}
			var changes []risk.Change
			for i := range head {
				changes = append(changes, risk.Change{Base: base[i], Head: head[i]})
			}
			var got []string
			for _, r := range risk.Find(risk.Target{Name: "app", Changes: changes}) {
				if r.Level == risk.Refused {
					got = append(got, r.Rule+":"+r.Field)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.risks, " ") {
				t.Errorf("ferry found %q, want %q", got, tc.risks)
			}
			var applyErr error
			for _, o := range head {
				if err := s.apply(o); err != nil {
					applyErr = err
				}
			}
			switch {
			case len(tc.risks) == 0 && applyErr != nil:
				t.Errorf("no risk, but the API server refused the head: %v", applyErr)
			case len(tc.risks) > 0 && applyErr == nil:
				t.Errorf("ferry says the API server refuses %v, and it applied the head", tc.risks)
			case len(tc.risks) > 0:
				// The server names the field ferry named.
				for _, r := range tc.risks {
					field := r[strings.Index(r, ":")+1:]
					if !strings.Contains(applyErr.Error(), field) && !strings.Contains(applyErr.Error(), "spec: Forbidden") {
						t.Errorf("the API server's refusal does not name %s: %v", field, applyErr)
					}
				}
				t.Logf("refused as flagged: %v", applyErr)
			}
		})
	}
}

// bind marks a PersistentVolumeClaim bound, as the volume controller
// does once a volume is provisioned (the test's API server runs none).
func (s *server) bind(ns, name string) {
	s.t.Helper()
	patch := []byte(`{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"2Gi"}}}`)
	gvr := s.resource(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"namespace": ns}}})
	if _, err := gvr.Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		s.t.Fatal(err)
	}
}

// established waits until the API server serves the CRD, as every CRD
// in a cluster long since is.
func (s *server) established(crd *unstructured.Unstructured) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		u, err := s.resource(crd).Get(context.Background(), crd.GetName(), metav1.GetOptions{})
		if err != nil {
			s.t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("CustomResourceDefinition/%s not established in 30 s", crd.GetName())
}
