package risk

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Annotations that keep an object from being deleted.
const (
	helmKeep        = "helm.sh/resource-policy"
	ferryPrune      = "ferry.dev/prune"
	fluxPrune       = "kustomize.toolkit.fluxcd.io/prune"
	pruneDisabled   = "disabled"
	helmKeepPolicy  = "keep"
	namespaceKind   = "Namespace"
	crdKind         = "CustomResourceDefinition"
	crdGroup        = "apiextensions.k8s.io"
	claimKind       = "PersistentVolumeClaim"
	volumeKind      = "PersistentVolume"
	deleteAllOfKind = "deletes every object of its kind in the cluster"
)

// protected says whether o carries an annotation ferry's prune honours.
func protected(o *unstructured.Unstructured) bool {
	a := o.GetAnnotations()
	return a[ferryPrune] == pruneDisabled || a[fluxPrune] == pruneDisabled
}

// pruned are the risks of deleting base, an object that leaves Git from
// a target that prunes.
func pruned(target string, base *unstructured.Unstructured) []Risk {
	if protected(base) {
		return nil // the prune keeps it
	}
	gvk := base.GroupVersionKind()
	var r Risk
	switch {
	case gvk.Group == "" && gvk.Kind == claimKind:
		r = newRisk(target, "prune-data", Destructive, base, "prune")
		r.Why = "the claim is deleted; with its StorageClass's Delete reclaim policy the volume and its data go with it"
		r.Fix = "keep the claim in Git, or annotate it " + ferryPrune + ": " + pruneDisabled + " in the base first"
	case gvk.Group == "" && gvk.Kind == volumeKind:
		r = newRisk(target, "prune-data", Destructive, base, "prune")
		r.Why = "the PersistentVolume is deleted, and with reclaim policy Delete its storage"
		r.Fix = "set persistentVolumeReclaimPolicy: Retain first, or keep it in Git"
	case gvk.Group == "" && gvk.Kind == namespaceKind:
		r = newRisk(target, "prune-namespace", Destructive, base, "prune")
		r.Why = "deleting a Namespace deletes everything in it, whichever target or tool made it"
		r.Fix = "keep the Namespace in Git (or annotate it " + ferryPrune + ": " + pruneDisabled + ") until it is empty"
	case gvk.Group == crdGroup && gvk.Kind == crdKind:
		r = newRisk(target, "prune-crd", Destructive, base, "prune")
		kind, _, _ := unstructured.NestedString(base.Object, "spec", "names", "kind")
		r.Why = "deleting a CustomResourceDefinition " + deleteAllOfKind + " (" + kind + ")"
		r.Fix = "keep the CRD in Git (or annotate it " + ferryPrune + ": " + pruneDisabled + ") until no " + kind + " is left"
	case base.GetAnnotations()[helmKeep] == helmKeepPolicy:
		r = newRisk(target, "prune-kept", Destructive, base, "prune")
		r.Why = "it says " + helmKeep + ": keep, which Helm honours and ferry's prune does not: it is deleted"
		r.Fix = "annotate it " + ferryPrune + ": " + pruneDisabled + " in the base first"
	default:
		return nil
	}
	return []Risk{r}
}

// protection flags an annotation that kept an object from prunes going
// away: the next time it leaves Git it is deleted.
func protection(target string, base, head *unstructured.Unstructured) []Risk {
	for _, key := range []string{ferryPrune, fluxPrune} {
		if base.GetAnnotations()[key] == pruneDisabled && head.GetAnnotations()[key] != pruneDisabled && !protected(head) {
			r := newRisk(target, "protection-removed", Warning, head, "metadata.annotations."+key)
			r.Base, r.Head = pruneDisabled, head.GetAnnotations()[key]
			r.Why = "the object is no longer kept from prunes: when it leaves Git, it is deleted"
			r.Fix = "keep the annotation if the object holds data or is shared"
			return []Risk{r}
		}
	}
	return nil
}
