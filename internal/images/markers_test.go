package images_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/testtree"
)

const (
	digestApp   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestBuild = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// results is a scan's outcome for the marker tests: app at 1.25.0, api at
// api-0.21.0 from a shared repository, a numerical build number, and a
// policy that reflects digests.
func results() map[string]*images.PolicyResult {
	out := map[string]*images.PolicyResult{}
	add := func(ns, name, image, tag, digest, reflect string) {
		p := &images.Policy{Name: name, Namespace: ns, Image: image, DigestReflectionPolicy: reflect}
		out[p.Ref()] = &images.PolicyResult{Policy: p, Tag: tag, Digest: digest}
	}
	add("flux-system", "app", "ghcr.io/org/app", "1.25.0", digestApp, "")
	add("flux-system", "api", "ghcr.io/org/mono", "api-0.21.0", digestApp, "")
	add("flux-system", "sherpa", "ghcr.io/org/mono", "sherpa-0.20.1", digestApp, "")
	add("apps", "build", "registry.example.com:5000/team/build", "03300208", digestBuild, "")
	add("apps", "pinned", "ghcr.io/org/pinned", "2.0.0", digestBuild, images.ReflectAlways)
	return out
}

func TestRewrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string // "" when the file must not change
	}{
		{
			name: "deployment: full reference, comments, quotes and spacing kept",
			in: `# app; this comment stays
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app  # trailing comment
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.24.0 # {"$imagepolicy": "flux-system:app"}
        - name: sidecar
          image: "ghcr.io/org/app:1.0.0"   #   {"$imagepolicy":"flux-system:app"}  keep this
        - name: unmarked
          image: ghcr.io/org/app:1.0.0 # pinned on purpose
      initContainers:
        - image: 'ghcr.io/org/mono:api-0.20.0' # {"$imagepolicy": "flux-system:api"}
`,
			want: `# app; this comment stays
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app  # trailing comment
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.25.0 # {"$imagepolicy": "flux-system:app"}
        - name: sidecar
          image: "ghcr.io/org/app:1.25.0"   #   {"$imagepolicy":"flux-system:app"}  keep this
        - name: unmarked
          image: ghcr.io/org/app:1.0.0 # pinned on purpose
      initContainers:
        - image: 'ghcr.io/org/mono:api-0.21.0' # {"$imagepolicy": "flux-system:api"}
`,
		},
		{
			name: "kustomization images: newName, newTag, digest; a number-like tag gets quoted",
			in: `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
  - name: app
    newName: ghcr.io/org/app-old # {"$imagepolicy": "flux-system:app:name"}
    newTag: "1.24.0" # {"$imagepolicy": "flux-system:app:tag"}
  - name: build
    newTag: 03300207 # {"$imagepolicy": "apps:build:tag"}
    digest: sha256:0000 # {"$imagepolicy": "apps:build:digest"}
  - name: api
    newTag: api-0.20.0 # {"$imagepolicy": "flux-system:api:tag"}
  - name: sherpa
    newTag: sherpa-0.19.0 # {"$imagepolicy": "flux-system:sherpa:tag"}
`,
			want: `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
  - name: app
    newName: ghcr.io/org/app # {"$imagepolicy": "flux-system:app:name"}
    newTag: "1.25.0" # {"$imagepolicy": "flux-system:app:tag"}
  - name: build
    newTag: "03300208" # {"$imagepolicy": "apps:build:tag"}
    digest: ` + digestBuild + ` # {"$imagepolicy": "apps:build:digest"}
  - name: api
    newTag: api-0.21.0 # {"$imagepolicy": "flux-system:api:tag"}
  - name: sherpa
    newTag: sherpa-0.20.1 # {"$imagepolicy": "flux-system:sherpa:tag"}
`,
		},
		{
			name: "CRLF line endings and a last line without newline",
			in:   "image:\r\n  repository: ghcr.io/org/app # {\"$imagepolicy\": \"flux-system:app:name\"}\r\n  tag: 1.0.0 # {\"$imagepolicy\": \"flux-system:app:tag\"}",
			want: "image:\r\n  repository: ghcr.io/org/app # {\"$imagepolicy\": \"flux-system:app:name\"}\r\n  tag: 1.25.0 # {\"$imagepolicy\": \"flux-system:app:tag\"}",
		},
		{
			name: "tabs before the comment, quoted key, bare sequence item",
			in:   "\"image\": ghcr.io/org/app:1.0.0\t# {\"$imagepolicy\": \"flux-system:app\"}\nargs:\n  - ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n  - - 'it''s': 1.0.0 # {\"$imagepolicy\": \"flux-system:app:tag\"}\n",
			want: "\"image\": ghcr.io/org/app:1.25.0\t# {\"$imagepolicy\": \"flux-system:app\"}\nargs:\n  - ghcr.io/org/app:1.25.0 # {\"$imagepolicy\": \"flux-system:app\"}\n  - - 'it''s': 1.25.0 # {\"$imagepolicy\": \"flux-system:app:tag\"}\n",
		},
		{
			name: "digest reflection writes name:tag@digest",
			in:   "image: ghcr.io/org/pinned:1.0.0@sha256:0000 # {\"$imagepolicy\": \"apps:pinned\"}\n",
			want: "image: ghcr.io/org/pinned:2.0.0@" + digestBuild + " # {\"$imagepolicy\": \"apps:pinned\"}\n",
		},
		{
			name: "multi-document file, only the marked line of the second document",
			in:   "a: 1\n---\nimage: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n---\nb: 2 # {\"other\": 1}\n",
			want: "a: 1\n---\nimage: ghcr.io/org/app:1.25.0 # {\"$imagepolicy\": \"flux-system:app\"}\n---\nb: 2 # {\"other\": 1}\n",
		},
		{
			name: "already at the latest tag",
			in:   "image: ghcr.io/org/app:1.25.0 # {\"$imagepolicy\": \"flux-system:app\"}\ntag: \"1.25.0\" # {\"$imagepolicy\": \"flux-system:app:tag\"}\n",
		},
		{
			name: "a whole-line comment with a marker is documentation, not a marker",
			in:   "# image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\nimage: x:1 # a comment\n",
		},
		{
			name: "a marker of a policy not selected is left alone",
			in:   "image: ghcr.io/org/other:1.0.0 # {\"$imagepolicy\": \"flux-system:other\"}\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testtree.New(t, map[string]string{"apps/file.yaml": tc.in})
			markers, err := images.FindMarkers(dir)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := images.Rewrite(dir, markers, results())
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(cs.Files) != 0 {
					t.Fatalf("Rewrite changed %d files; want none:\n%s", len(cs.Files), cs.UnifiedDiff())
				}
				return
			}
			if len(cs.Files) != 1 {
				t.Fatalf("Rewrite changed %d files, want 1", len(cs.Files))
			}
			if diff := cmp.Diff(tc.want, string(cs.Files[0].New)); diff != "" {
				t.Errorf("rewritten file (-want +got):\n%s", diff)
			}
			if string(cs.Files[0].Old) != tc.in {
				t.Error("FileChange.Old is not the file as it was")
			}
			// Nothing is written until asked.
			if b, _ := os.ReadFile(filepath.Join(dir, "apps/file.yaml")); string(b) != tc.in {
				t.Fatal("Rewrite wrote the file")
			}
			if err := cs.Write(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "apps/file.yaml")); string(b) != tc.want {
				t.Errorf("written file differs from the change set")
			}
			// A second pass finds nothing more to do.
			markers, _ = images.FindMarkers(dir)
			if again, _ := images.Rewrite(dir, markers, results()); len(again.Files) != 0 {
				t.Errorf("second Rewrite changed the file again:\n%s", again.UnifiedDiff())
			}
		})
	}
}

func TestRewriteChanges(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"b.yaml":      "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n",
		"a.yml":       "x: 1\nnewTag: api-0.1.0 # {\"$imagepolicy\": \"flux-system:api:tag\"}\n",
		".git/c.yaml": "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n",
		"d.json":      "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n",
	})
	markers, err := images.FindMarkers(dir)
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, m := range markers {
		where = append(where, m.Where()+" "+m.Policy+" "+string(m.Field)+" "+m.Value)
	}
	want := []string{"a.yml:2 flux-system:api tag api-0.1.0", "b.yaml:1 flux-system:app  ghcr.io/org/app:1.0.0"}
	if diff := cmp.Diff(want, where); diff != "" {
		t.Errorf("markers (-want +got):\n%s", diff)
	}
	cs, err := images.Rewrite(dir, markers, results())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs.Changes() {
		got = append(got, c.File+":"+strconv.Itoa(c.Line)+" "+c.Policy.ID()+" "+c.Old+" -> "+c.New)
	}
	want = []string{
		"a.yml:2 ImagePolicy/flux-system/api api-0.1.0 -> api-0.21.0",
		"b.yaml:1 ImagePolicy/flux-system/app ghcr.io/org/app:1.0.0 -> ghcr.io/org/app:1.25.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	wantDiff := `--- a/a.yml
+++ b/a.yml
@@ -1,2 +1,2 @@
 x: 1
-newTag: api-0.1.0 # {"$imagepolicy": "flux-system:api:tag"}
+newTag: api-0.21.0 # {"$imagepolicy": "flux-system:api:tag"}
--- a/b.yaml
+++ b/b.yaml
@@ -1 +1 @@
-image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
+image: ghcr.io/org/app:1.25.0 # {"$imagepolicy": "flux-system:app"}
`
	if diff := cmp.Diff(wantDiff, cs.UnifiedDiff()); diff != "" {
		t.Errorf("unified diff (-want +got):\n%s", diff)
	}
}

func TestParseMarkersErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string
		want string
	}{
		{"not JSON", `image: a:1 # {"$imagepolicy": flux-system:app}`, "malformed marker"},
		{"no object", `image: a:1 # $imagepolicy flux-system:app`, "malformed marker"},
		{"reference not a string", `image: a:1 # {"$imagepolicy": 1}`, "must be a string"},
		{"no namespace", `image: a:1 # {"$imagepolicy": "app"}`, `marker "app": want NAMESPACE:NAME`},
		{"empty name", `image: a:1 # {"$imagepolicy": "flux-system:"}`, "want NAMESPACE:NAME"},
		{"unknown field", `image: a:1 # {"$imagepolicy": "flux-system:app:version"}`, `unknown field "version"`},
		{"too many parts", `image: a:1 # {"$imagepolicy": "a:b:tag:x"}`, "want NAMESPACE:NAME"},
		{"flow sequence value", `image: [a, b] # {"$imagepolicy": "flux-system:app"}`, "not a plain or quoted scalar"},
		{"alias value", `image: *img # {"$imagepolicy": "flux-system:app"}`, "not a plain or quoted scalar"},
		{"block scalar", `image: | # {"$imagepolicy": "flux-system:app"}`, "not a plain or quoted scalar"},
		{"key without a value", `image: # {"$imagepolicy": "flux-system:app"}`, "on a key without a value"},
		{"unterminated quote", `image: "a:1 # {"$imagepolicy": "flux-system:app"}`, "cannot read the marked value"},
		{"flow mapping", `{image: a:1} # {"$imagepolicy": "flux-system:app"}`, "cannot read the marked value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := "a: b\n" + tc.line + "\n"
			ms, err := images.ParseMarkers("apps/x.yaml", []byte(data))
			if err == nil {
				t.Fatalf("ParseMarkers = %+v, nil; want an error", ms)
			}
			for _, w := range []string{"apps/x.yaml:2: ", tc.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestUnknownPolicies(t *testing.T) {
	t.Parallel()
	ms, err := images.ParseMarkers("apps/app.yaml", []byte("a: 1\nimage: x:1 # {\"$imagepolicy\": \"flux-system:app\"}\nimage: y:1 # {\"$imagepolicy\": \"flux-system:gone:tag\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	known := []*images.Policy{{Name: "app", Namespace: "flux-system"}}
	err = images.UnknownPolicies(ms, known)
	if err == nil || err.Error() != "apps/app.yaml:3: marker names ImagePolicy/flux-system/gone, which the repository does not declare" {
		t.Errorf("UnknownPolicies = %v", err)
	}
	if err := images.UnknownPolicies(ms[:1], known); err != nil {
		t.Errorf("UnknownPolicies of known markers = %v", err)
	}
}
