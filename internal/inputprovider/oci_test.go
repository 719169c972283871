package inputprovider_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ferry-ci/ferry/internal/inputprovider"
)

// OCIArtifactTag against a registry (go-containerregistry's, in
// process): the tags the semver range keeps, highest first, limited,
// each with its manifest digest; anonymous, on an allowed host only.
func TestOCIArtifactTag(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	digests := map[string]string{}
	for _, tag := range []string{"1.0.0", "1.2.3", "2.0.0", "2.1.0-rc.1", "latest", "0.9.0"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(host+"/apps/podinfo:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests[tag] = d.String()
	}
	p := provider(t, `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata: {name: podinfo, namespace: apps}
spec:
  type: OCIArtifactTag
  url: oci://`+host+`/apps/podinfo
  insecure: true
  filter: {semver: ">=1.0.0", limit: 2}
  defaultValues: {env: lab}
`)
	got, err := inputprovider.Resolve(t.Context(), p, inputprovider.Options{AllowHosts: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"id": inputprovider.Checksum("2.0.0"), "tag": "2.0.0", "digest": digests["2.0.0"], "env": "lab"},
		{"id": inputprovider.Checksum("1.2.3"), "tag": "1.2.3", "digest": digests["1.2.3"], "env": "lab"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}

	_, err = inputprovider.Resolve(t.Context(), p, inputprovider.Options{})
	wantSkip(t, err, "the registry "+host+" is not allowed")
}
