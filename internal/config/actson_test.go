package config

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestActsOn(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		acts             bool
	}{
		{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", true},
		{"kustomize.toolkit.fluxcd.io/v1beta2", "Kustomization", true},
		{"source.toolkit.fluxcd.io/v1", "GitRepository", true},
		{"source.toolkit.fluxcd.io/v1beta2", "OCIRepository", true},
		{"source.toolkit.fluxcd.io/v1", "Bucket", true},
		{"image.toolkit.fluxcd.io/v1", "ImageRepository", true},
		{"image.toolkit.fluxcd.io/v1beta2", "ImagePolicy", true},
		{"image.toolkit.fluxcd.io/v1", "ImageUpdateAutomation", true},
		{"source.extensions.fluxcd.io/v1beta1", "ArtifactGenerator", true},
		{"source.extensions.fluxcd.io/v1beta1", "ExternalArtifact", true},
		{"fluxcd.controlplane.io/v1", "FluxInstance", true},
		{"fluxcd.controlplane.io/v1", "ResourceSet", true},
		{"fluxcd.controlplane.io/v1", "ResourceSetInputProvider", true},
		{"helm.toolkit.fluxcd.io/v2", "HelmRelease", true},
		{"helm.toolkit.fluxcd.io/v2beta2", "HelmRelease", true},
		{"source.toolkit.fluxcd.io/v1", "HelmRepository", true},
		{"source.toolkit.fluxcd.io/v1", "HelmChart", true},
		// Flux objects ferry does not do the work of: a cluster without
		// their CRDs is an error, as for any unknown kind.
		{"helm.toolkit.fluxcd.io/v2beta1", "HelmRelease", false}, // not rendered by ferry
		{"notification.toolkit.fluxcd.io/v1beta3", "Alert", true},
		{"notification.toolkit.fluxcd.io/v1beta2", "Alert", true},
		{"notification.toolkit.fluxcd.io/v1beta3", "Provider", true},
		{"notification.toolkit.fluxcd.io/v1beta1", "Provider", true},
		{"notification.toolkit.fluxcd.io/v1", "Receiver", true},
		{"notification.toolkit.fluxcd.io/v1", "Bucket", false},
		{"kustomize.config.k8s.io/v1beta1", "Kustomization", false},
		{"fluxcd.controlplane.io/v1", "FluxReport", false},
		{"v1", "ConfigMap", false},
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(tc.apiVersion)
		u.SetKind(tc.kind)
		if got := ActsOn(u); (got != "") != tc.acts {
			t.Errorf("ActsOn(%s %s) = %q, want a reason: %v", tc.apiVersion, tc.kind, got, tc.acts)
		}
	}
}
