package risk

import (
	"fmt"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// flux flags Flux objects whose reconciliation flips: suspend, and a
// Kustomization that starts to prune.
func flux(target string, base, head *unstructured.Unstructured) []Risk {
	gvk := head.GroupVersionKind()
	var out []Risk
	switch gvk.Group + "/" + gvk.Kind {
	case "kustomize.toolkit.fluxcd.io/Kustomization", "helm.toolkit.fluxcd.io/HelmRelease":
	default:
		return nil
	}
	bs, _, _ := unstructured.NestedBool(base.Object, "spec", "suspend")
	hs, _, _ := unstructured.NestedBool(head.Object, "spec", "suspend")
	switch {
	case !bs && hs:
		r := newRisk(target, "flux-suspend", Warning, head, "spec.suspend")
		r.Base, r.Head = "false", "true"
		r.Why = "Flux stops reconciling it: drift is no longer corrected and later changes to it are not applied in the cluster"
		r.Fix = "say in the pull request why, and when it is resumed"
		out = append(out, r)
	case bs && !hs:
		r := newRisk(target, "flux-resume", Warning, head, "spec.suspend")
		r.Base, r.Head = "true", "false"
		r.Why = "Flux resumes it: everything Git holds for it is applied at once, including changes made while it was suspended"
		r.Fix = "diff what it holds against the cluster first (ferry diff --live)"
		out = append(out, r)
	}
	if gvk.Kind == "Kustomization" {
		bp, _, _ := unstructured.NestedBool(base.Object, "spec", "prune")
		hp, _, _ := unstructured.NestedBool(head.Object, "spec", "prune")
		if !bp && hp {
			r := newRisk(target, "flux-prune-enabled", Warning, head, "spec.prune")
			r.Base, r.Head = "false", "true"
			r.Why = "objects of this Kustomization that are no longer in Git, left in the cluster so far, are deleted"
			r.Fix = "list what the cluster holds that Git does not (ferry diff --live) before merging"
			out = append(out, r)
		}
	}
	return out
}

// charts flags a HelmRelease's chart that moves back a version or
// forward a major one.
func charts(target string, releases []Release) []Risk {
	var out []Risk
	for _, rel := range releases {
		b, berr := semver.NewVersion(rel.BaseVersion)
		h, herr := semver.NewVersion(rel.HeadVersion)
		if berr != nil || herr != nil {
			continue
		}
		r := Risk{Target: target, Object: rel.ID, Field: "chart " + rel.Chart, Base: rel.BaseVersion, Head: rel.HeadVersion, Level: Warning}
		switch {
		case h.LessThan(b):
			r.Rule = "chart-downgrade"
			r.Why = "the chart moves back a version: Helm rolls the release back to older templates, and charts rarely support downgrades of their data or CRDs"
			r.Fix = "make sure the chart's notes allow the downgrade, or pin the newer version"
		case h.Major() > b.Major():
			r.Rule = "chart-major"
			r.Why = fmt.Sprintf("a new major version of the chart (%d to %d): its values, CRDs or objects may have changed in ways the release does not expect", b.Major(), h.Major())
			r.Fix = "read the chart's upgrade notes for " + h.String() + " and the rendered diff below"
		default:
			continue
		}
		r.ID = r.Rule + ":" + rel.ID
		out = append(out, r)
	}
	return out
}
