package config

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
)

// ActsOn says why ferry does the work of a Flux object itself, "" for
// any other object. In a push setup no Flux controller runs in the
// cluster: a Kustomization is a target of ferry's own, a source is read
// from the checkout, image automation is ferry bump, and notifications
// are sent by ferry itself. So a render that holds such objects (a
// parent Kustomization listing its children, say) must not fail on a
// cluster without Flux's CRDs; ferry apply, drift and diff --live leave
// them out there (kube.ApplyOptions.LeaveOut). A
// cluster that has the CRDs gets them applied as before.
func ActsOn(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	switch gvk.Group {
	case KustomizeGroup:
		if gvk.Kind == "Kustomization" {
			return "Flux Kustomization, a target of its own for ferry; the cluster has no Flux CRDs"
		}
	case SourceGroup:
		switch gvk.Kind {
		case "GitRepository", "OCIRepository", "Bucket", "HelmRepository", "HelmChart":
			return "Flux source, which ferry resolves itself; the cluster has no Flux CRDs"
		}
	case helm.Group:
		if helm.IsRelease(u) { // the API versions ferry renders
			return "Flux HelmRelease, whose chart ferry renders itself; the cluster has no Flux CRDs"
		}
	case SourceExtensionsGroup:
		switch gvk.Kind {
		case "ArtifactGenerator", "ExternalArtifact":
			return "Flux artifact source, which ferry resolves itself; the cluster has no Flux CRDs"
		}
	case OperatorGroup:
		switch gvk.Kind {
		case "FluxInstance":
			return "Flux Operator instance, whose sync ferry does itself; the cluster has no Flux Operator CRDs"
		case "ResourceSet", "ResourceSetInputProvider":
			return "Flux Operator " + gvk.Kind + ", whose objects ferry renders itself; the cluster has no Flux Operator CRDs"
		}
	case NotificationGroup:
		switch gvk.Kind {
		case "Provider", "Alert":
			return "Flux notification " + gvk.Kind + ", whose events ferry sends itself; the cluster has no Flux CRDs"
		case "Receiver":
			return "Flux Receiver, whose webhook CI's own triggers replace; the cluster has no Flux CRDs"
		}
	case ImageGroup:
		switch gvk.Kind {
		case "ImageRepository", "ImagePolicy", "ImageUpdateAutomation":
			return "Flux image automation, done by ferry bump; the cluster has no Flux CRDs"
		}
	}
	return ""
}
