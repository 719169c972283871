package images_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/images"
)

func TestUpdates(t *testing.T) {
	t.Parallel()
	// The base revision: one file holds the markers of two policies.
	base := map[string]string{
		"apps/mono/kustomization.yaml": "images:\n  - name: api\n    newTag: api-0.20.0 # {\"$imagepolicy\": \"flux-system:api:tag\"}\n  - name: sherpa\n    newTag: sherpa-0.19.0 # {\"$imagepolicy\": \"flux-system:sherpa:tag\"}\n",
		"apps/app/deployment.yaml":     "image: ghcr.io/org/app:1.24.0 # {\"$imagepolicy\": \"flux-system:app\"}\n",
		"apps/up-to-date.yaml":         "image: ghcr.io/org/pinned:2.0.0@" + digestBuild + " # {\"$imagepolicy\": \"apps:pinned\"}\n",
	}
	read := func(file string) ([]byte, error) {
		s, ok := base[file]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	var markers []images.Marker
	for file, content := range base {
		ms, err := images.ParseMarkers(file, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		markers = append(markers, ms...)
	}
	// A marker of a file the base does not have (new in the work tree).
	markers = append(markers, images.Marker{File: "apps/new.yaml", Line: 1, Policy: "flux-system:app"})
	lat := results()
	res := &images.ScanResult{}
	for _, ref := range []string{"flux-system:api", "flux-system:sherpa", "flux-system:app", "apps:pinned"} {
		res.Policies = append(res.Policies, lat[ref])
	}
	// No tag matched: nothing for it.
	res.Policies = append(res.Policies, &images.PolicyResult{Policy: &images.Policy{Name: "none", Namespace: "apps", Image: "x/y"}, Warning: "no tag"})

	type file struct{ Path, New string }
	summary := func(us []images.Update) map[string][]file {
		out := map[string][]file{}
		for _, u := range us {
			for _, f := range u.Files {
				out[u.Key] = append(out[u.Key], file{f.Path, string(f.New)})
			}
		}
		return out
	}

	per, err := images.Updates(markers, res, read, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]file{
		// Each policy's update changes only its own line of the shared file.
		"flux-system:api":    {{"apps/mono/kustomization.yaml", strings.Replace(base["apps/mono/kustomization.yaml"], "api-0.20.0", "api-0.21.0", 1)}},
		"flux-system:sherpa": {{"apps/mono/kustomization.yaml", strings.Replace(base["apps/mono/kustomization.yaml"], "sherpa-0.19.0", "sherpa-0.20.1", 1)}},
		"flux-system:app":    {{"apps/app/deployment.yaml", strings.Replace(base["apps/app/deployment.yaml"], "1.24.0", "1.25.0", 1)}},
	}
	if diff := cmp.Diff(want, summary(per)); diff != "" {
		t.Errorf("per-policy updates (-want +got):\n%s", diff)
	}

	grouped, err := images.Updates(markers, res, read, true)
	if err != nil {
		t.Fatal(err)
	}
	wantGrouped := map[string][]file{"all": {
		{"apps/app/deployment.yaml", want["flux-system:app"][0].New},
		{"apps/mono/kustomization.yaml", strings.Replace(want["flux-system:api"][0].New, "sherpa-0.19.0", "sherpa-0.20.1", 1)},
	}}
	if diff := cmp.Diff(wantGrouped, summary(grouped)); diff != "" {
		t.Errorf("grouped update (-want +got):\n%s", diff)
	}
	var ids []string
	for _, r := range grouped[0].Results {
		ids = append(ids, r.Policy.ID())
	}
	if diff := cmp.Diff([]string{"ImagePolicy/flux-system/api", "ImagePolicy/flux-system/app", "ImagePolicy/flux-system/sherpa"}, ids); diff != "" {
		t.Errorf("grouped policies (-want +got):\n%s", diff)
	}
	body := grouped[0].Body()
	for _, row := range []string{
		"| `apps/mono/kustomization.yaml:3` | `ghcr.io/org/mono` | `api-0.20.0` → `api-0.21.0` | `" + digestApp + "` |",
		"| `apps/app/deployment.yaml:1` | `ghcr.io/org/app` | `ghcr.io/org/app:1.24.0` → `ghcr.io/org/app:1.25.0` | `" + digestApp + "` |",
	} {
		if !strings.Contains(body, row) {
			t.Errorf("body lacks\n%s\nbody:\n%s", row, body)
		}
	}
}
