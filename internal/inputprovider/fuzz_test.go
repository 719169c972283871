package inputprovider_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/inputprovider"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

// The filter of a provider is user input: whatever it holds, Resolve
// answers with an error or a skip, and calls nothing it may not.
func FuzzFilter(f *testing.F) {
	f.Add("GitHubTag", "https://github.example.com/a/b", ">=1.0.0", "^v", "-rc", int64(3))
	f.Add("OCIArtifactTag", "oci://r.example.com/a", "~1.2", "(", "", int64(-1))
	f.Add("GiteaPullRequest", "https://git.example.com/a", "", "", "", int64(20000))
	f.Fuzz(func(t *testing.T, typ, url, semver, include, exclude string, limit int64) {
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSetInputProvider",
			"metadata": map[string]any{"name": "p", "namespace": "ns"},
			"spec": map[string]any{"type": typ, "url": url, "filter": map[string]any{
				"semver": semver, "includeTag": include, "excludeBranch": exclude, "limit": limit,
			}},
		}}
		got, err := inputprovider.Resolve(t.Context(), p, inputprovider.Options{})
		if err == nil {
			t.Fatalf("resolved %v with nothing allowed", got)
		}
		var skip *resourceset.SkipError
		if errors.As(err, &skip) && skip.Reason == "" {
			t.Fatal("a skip without a reason")
		}
	})
}
