package config

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/render"
)

// The fields of a chart version a ChartPin names.
const (
	FieldReleaseVersion = "spec.chart.spec.version" // HelmRelease
	FieldChartVersion   = "spec.version"            // HelmChart
	FieldRefTag         = "spec.ref.tag"            // OCIRepository
	FieldRefSemver      = "spec.ref.semver"         // OCIRepository
)

// ChartPin is one chart version an object of a target's build names, as
// ferry bump moves them: a HelmRelease's spec.chart.spec.version (its
// chart in a HelmRepository), a HelmChart's spec.version, an
// OCIRepository's spec.ref.tag (or spec.ref.semver, which floats).
type ChartPin struct {
	// Kind, Namespace and Name are the object's, as the build holds it.
	Kind, Namespace, Name string
	// Field is the field's path (FieldReleaseVersion, ...) and Version
	// its value in the build.
	Field, Version string
	// Source is where the versions are listed: URL, chart, credentials,
	// whether plain HTTP is allowed; its Version is empty.
	Source helm.ChartSource
	// Err is why the source cannot be listed (it is not among the
	// cluster's renders, its credentials are missing).
	Err error
	// Files are the files of the repository the target's build read:
	// the object's file is among them.
	Files []string
}

// ID is the pin's object, Kind/namespace/name.
func (p ChartPin) ID() string { return p.Kind + "/" + p.Namespace + "/" + p.Name }

// ChartPins builds t and returns the chart versions its objects pin,
// with the sources they are listed from (found among the cluster's
// renders, with their credentials, as a render finds them). Nothing is
// fetched. A release whose chart is in a folder, or a HelmRelease whose
// chart is a chartRef (its HelmChart or OCIRepository is a pin of its
// own), names none; nor does a target that renders another ref of the
// repository (its lines are not this checkout's).
func (r *Repo) ChartPins(ctx context.Context, t *Target) ([]ChartPin, error) {
	if t.Revision != nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	build, err := r.build(ctx, t)
	if err != nil {
		return nil, err
	}
	var out []ChartPin
	for _, o := range build.Set.Objects {
		gvk := o.GroupVersionKind()
		pin := ChartPin{Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), Files: build.Files}
		switch {
		case helm.IsRelease(o):
			chart, _, _ := unstructured.NestedMap(o.Object, "spec", "chart", "spec")
			if chart == nil {
				continue
			}
			pin.Field = FieldReleaseVersion
			pin.Version, _, _ = unstructured.NestedString(chart, "version")
			kind, _, _ := unstructured.NestedString(chart, "sourceRef", "kind")
			name, _, _ := unstructured.NestedString(chart, "sourceRef", "name")
			ns, _, _ := unstructured.NestedString(chart, "sourceRef", "namespace")
			if ns == "" {
				ns = pin.Namespace
			}
			if kind != "HelmRepository" {
				continue
			}
			pin.Source, pin.Err = r.pinSource(ctx, t, build, kind, ns, name)
			pin.Source.Chart, _, _ = unstructured.NestedString(chart, "chart")
		case gvk.Group == SourceGroup && gvk.Kind == "HelmChart":
			pin.Field = FieldChartVersion
			pin.Version, _, _ = unstructured.NestedString(o.Object, "spec", "version")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "kind")
			name, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "name")
			if kind != "HelmRepository" {
				continue
			}
			pin.Source, pin.Err = r.pinSource(ctx, t, build, kind, pin.Namespace, name)
			pin.Source.Chart, _, _ = unstructured.NestedString(o.Object, "spec", "chart")
		case gvk.Group == SourceGroup && gvk.Kind == "OCIRepository":
			ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "ref")
			switch {
			case ref["digest"] != "":
				continue
			case ref["semver"] != "":
				pin.Field, pin.Version = FieldRefSemver, ref["semver"]
			case ref["tag"] != "":
				pin.Field, pin.Version = FieldRefTag, ref["tag"]
			default:
				continue
			}
			pin.Source, pin.Err = r.remoteSource(ctx, t, build, o, pin.ID(), helm.OCIRepository)
		default:
			continue
		}
		var skip *skippedRelease
		if errors.As(pin.Err, &skip) {
			continue // a source this revision does not fetch
		}
		out = append(out, pin)
	}
	return out, nil
}

// pinSource is the chart source the HelmRepository namespace/name of t's
// cluster stands for.
func (r *Repo) pinSource(ctx context.Context, t *Target, build *render.Result, kind, namespace, name string) (helm.ChartSource, error) {
	id := kind + "/" + namespace + "/" + name
	repo := r.clusterObject(ctx, t, build, SourceGroup, kind, namespace, name)
	if repo == nil {
		return helm.ChartSource{}, fmt.Errorf("source %s is not in the renders of its cluster", id)
	}
	return r.remoteSource(ctx, t, build, repo, id, sourceKind(repo))
}
