package diff

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/secrets"
)

// Live compares a target's head render with its cluster: each object as
// the cluster holds it against what a server-side dry-run apply of the
// head would make of it, both without what the server sets on its own
// (managed fields, resource version, uid, generation, timestamps, status),
// so defaults the server adds appear on both sides and cancel out.
// Members of the target's inventory that are no longer rendered are
// listed as removed (pruned when the target prunes). mask hides
// decrypted values in the diffs, before they are written, and in errors.
func Live(cmp *kube.Comparison, prune bool, mask *secrets.Masker) []Object {
	var out []Object
	for _, lo := range cmp.Objects {
		o := Object{ID: lo.ID, Answered: lo.Err == nil}
		switch {
		case lo.Err != nil:
			o.Action = Changed
			o.Warnings = []string{"cannot be compared: " + mask.Mask(lo.Err.Error())}
			if isRefusal(lo.Err) {
				o.Refusal, o.Answered = lo.Err, true
			}
		case lo.Live == nil && lo.Unchanged:
			o.Action = Unchanged // a Helm hook that ran and was deleted by its policy
		case lo.Live == nil:
			o.Action = Added
			o.Diff = Unified("", text(normalized(lo.Desired), mask))
			if isSecret(lo.ID) {
				o.Secret = &SecretChange{Added: secretKeys(lo.Desired)}
			}
		case lo.DryRun == nil:
			o.Action = Unchanged
		default:
			live, want := normalized(lo.Live), normalized(lo.DryRun)
			var hidden bool
			o.Diff, hidden = diffMasked(live, want, mask)
			if isSecret(lo.ID) {
				if sc := compareSecrets(live, want); !sc.empty() {
					o.Secret = sc
				}
			}
			o.Action = Unchanged
			if o.Diff != "" || hidden || o.Secret != nil {
				o.Action = Changed
				if hidden {
					o.Warnings = []string{maskedChange}
				}
			}
		}
		out = append(out, o)
	}
	for _, u := range cmp.Orphans {
		o := Object{ID: manifest.IDOf(u), Action: Removed, Pruned: prune}
		o.Diff = Unified(text(normalized(u), mask), "")
		o.Warnings = removal(o)
		out = append(out, o)
	}
	return out
}

func normalized(u *unstructured.Unstructured) *unstructured.Unstructured {
	n := kube.Normalize(u)
	// The last-applied annotation of client-side apply repeats the object.
	if a := n.GetAnnotations(); a != nil {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		if len(a) == 0 {
			a = nil
		}
		n.SetAnnotations(a)
	}
	return n
}

// LiveCompare is the Options.Live of targets reached through connect:
// each target's head render compared with its cluster by a server-side
// dry-run (kube.Client.Compare, nothing written), its inventory read in
// inventoryNS, the result masked with mask (see Live).
func LiveCompare(connect func(*config.Target) (*kube.Client, error), inventoryNS string, mask *secrets.Masker) func(context.Context, *config.Target, []*unstructured.Unstructured) ([]Object, error) {
	return func(ctx context.Context, t *config.Target, objs []*unstructured.Unstructured) ([]Object, error) {
		client, err := connect(t)
		if err != nil {
			return nil, err
		}
		cmp, err := client.Compare(ctx, objs, kube.CompareOptions{Target: t.Name, InventoryNamespace: inventoryNS, DryRunAll: true, LeaveOut: config.ActsOn})
		if err != nil {
			return nil, err
		}
		return Live(cmp, t.Prune, mask), nil
	}
}
