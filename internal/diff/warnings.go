package diff

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// immutableFields are fields the API server refuses to change in place:
// applying such a change fails until the object is deleted and recreated.
var immutableFields = map[string][][]string{
	"apps/Deployment":                              {{"spec", "selector"}},
	"apps/ReplicaSet":                              {{"spec", "selector"}},
	"apps/DaemonSet":                               {{"spec", "selector"}},
	"apps/StatefulSet":                             {{"spec", "selector"}, {"spec", "serviceName"}, {"spec", "volumeClaimTemplates"}, {"spec", "podManagementPolicy"}},
	"batch/Job":                                    {{"spec", "selector"}, {"spec", "template"}, {"spec", "completionMode"}},
	"/Service":                                     {{"spec", "clusterIP"}, {"spec", "clusterIPs"}},
	"/PersistentVolumeClaim":                       {{"spec", "storageClassName"}, {"spec", "accessModes"}, {"spec", "volumeName"}, {"spec", "selector"}, {"spec", "volumeMode"}},
	"/PersistentVolume":                            {{"spec", "claimRef"}},
	"storage.k8s.io/StorageClass":                  {{"provisioner"}, {"parameters"}, {"reclaimPolicy"}, {"volumeBindingMode"}},
	"rbac.authorization.k8s.io/RoleBinding":        {{"roleRef"}},
	"rbac.authorization.k8s.io/ClusterRoleBinding": {{"roleRef"}},
}

// immutable warns about changes to fields that cannot change in place.
func immutable(base, head *unstructured.Unstructured) []string {
	gvk := head.GroupVersionKind()
	var out []string
	for _, path := range immutableFields[gvk.Group+"/"+gvk.Kind] {
		bv, bok, _ := unstructured.NestedFieldNoCopy(base.Object, path...)
		hv, hok, _ := unstructured.NestedFieldNoCopy(head.Object, path...)
		if bok != hok || !reflect.DeepEqual(bv, hv) {
			out = append(out, fmt.Sprintf("changes the immutable field %s: the apply will be refused until the object is recreated", dotted(path)))
		}
	}
	if (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret") && gvk.Group == "" && isImmutable(base) {
		out = append(out, "changes an object marked immutable: the apply will be refused until it is recreated")
	}
	return out
}

func isImmutable(u *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedBool(u.Object, "immutable")
	return v
}

func dotted(path []string) string {
	s := ""
	for i, p := range path {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}

// removal warns about deletions, loudest for those that take other
// objects with them.
func removal(o Object) []string {
	if o.Action != Removed {
		return nil
	}
	if !o.Pruned {
		return []string{"no longer rendered; the target does not prune, so it stays in the cluster"}
	}
	switch {
	case o.ID.Kind == "Namespace" && o.ID.Group == "":
		return []string{"will be pruned: deleting a Namespace deletes everything in it"}
	case o.ID.Kind == "CustomResourceDefinition" && o.ID.Group == "apiextensions.k8s.io":
		return []string{"will be pruned: deleting a CRD deletes every custom resource of it"}
	case o.ID.Kind == "PersistentVolumeClaim" && o.ID.Group == "":
		return []string{"will be pruned: deleting a PersistentVolumeClaim may delete its data"}
	}
	return []string{"will be pruned (deleted from the cluster on merge)"}
}
