package risk

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
)

// removedAPI is an API group/version Kubernetes stopped serving for a
// kind, and what replaces it.
type removedAPI struct {
	removedIn, replacement string
}

// removedAPIs are the group/versions and kinds the Kubernetes
// deprecation guide lists as removed, with the release that removed
// them.
var removedAPIs = map[string]removedAPI{}

func init() {
	add := func(removedIn, gv, replacement string, kinds ...string) {
		for _, k := range kinds {
			removedAPIs[gv+"/"+k] = removedAPI{removedIn, replacement}
		}
	}
	add("1.16", "extensions/v1beta1", "apps/v1", "Deployment", "DaemonSet", "ReplicaSet")
	add("1.16", "extensions/v1beta1", "networking.k8s.io/v1", "NetworkPolicy")
	add("1.16", "apps/v1beta1", "apps/v1", "Deployment", "StatefulSet", "ReplicaSet", "ControllerRevision")
	add("1.16", "apps/v1beta2", "apps/v1", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ControllerRevision")
	add("1.22", "extensions/v1beta1", "networking.k8s.io/v1", "Ingress")
	add("1.22", "networking.k8s.io/v1beta1", "networking.k8s.io/v1", "Ingress", "IngressClass")
	add("1.22", "admissionregistration.k8s.io/v1beta1", "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
	add("1.22", "apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1", "CustomResourceDefinition")
	add("1.22", "apiregistration.k8s.io/v1beta1", "apiregistration.k8s.io/v1", "APIService")
	add("1.22", "authentication.k8s.io/v1beta1", "authentication.k8s.io/v1", "TokenReview")
	add("1.22", "authorization.k8s.io/v1beta1", "authorization.k8s.io/v1", "SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview")
	add("1.22", "certificates.k8s.io/v1beta1", "certificates.k8s.io/v1", "CertificateSigningRequest")
	add("1.22", "coordination.k8s.io/v1beta1", "coordination.k8s.io/v1", "Lease")
	add("1.22", "rbac.authorization.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
	add("1.22", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1", "PriorityClass")
	add("1.22", "storage.k8s.io/v1beta1", "storage.k8s.io/v1", "CSIDriver", "CSINode", "StorageClass", "VolumeAttachment")
	add("1.25", "batch/v1beta1", "batch/v1", "CronJob")
	add("1.25", "discovery.k8s.io/v1beta1", "discovery.k8s.io/v1", "EndpointSlice")
	add("1.25", "events.k8s.io/v1beta1", "events.k8s.io/v1", "Event")
	add("1.25", "autoscaling/v2beta1", "autoscaling/v2", "HorizontalPodAutoscaler")
	add("1.25", "policy/v1beta1", "policy/v1", "PodDisruptionBudget")
	add("1.25", "policy/v1beta1", "(none: Pod Security Admission)", "PodSecurityPolicy")
	add("1.25", "node.k8s.io/v1beta1", "node.k8s.io/v1", "RuntimeClass")
	add("1.26", "flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "PriorityLevelConfiguration")
	add("1.26", "autoscaling/v2beta2", "autoscaling/v2", "HorizontalPodAutoscaler")
	add("1.27", "storage.k8s.io/v1beta1", "storage.k8s.io/v1", "CSIStorageCapacity")
	add("1.29", "flowcontrol.apiserver.k8s.io/v1beta2", "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "PriorityLevelConfiguration")
	add("1.32", "flowcontrol.apiserver.k8s.io/v1beta3", "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "PriorityLevelConfiguration")
}

// servedAPI flags an object of an API the cluster's Kubernetes version
// (kubeVersion) no longer serves.
func servedAPI(target string, head *unstructured.Unstructured, kubeVersion string) []Risk {
	if kubeVersion == "" {
		return nil
	}
	api, ok := removedAPIs[head.GetAPIVersion()+"/"+head.GetKind()]
	if !ok {
		return nil
	}
	cluster, err := version.ParseGeneric(kubeVersion)
	if err != nil {
		return nil
	}
	if !cluster.AtLeast(version.MustParseGeneric(api.removedIn)) {
		return nil
	}
	r := newRisk(target, "api-removed", Refused, head, "apiVersion")
	r.Why = head.GetAPIVersion() + " " + head.GetKind() + " is not served since Kubernetes " + api.removedIn + " (the cluster runs " + kubeVersion + "): the apply fails"
	r.Fix = "use " + api.replacement
	return []Risk{r}
}
