package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/testtree"
)

func TestParseFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want *config.File
	}{
		{
			name: "empty file declares nothing",
			yaml: "",
			want: &config.File{},
		},
		{
			name: "comment only",
			yaml: "# nothing here yet\n",
			want: &config.File{},
		},
		{
			name: "minimal target",
			yaml: "targets: [{name: stage, path: apps/stage}]\n",
			want: &config.File{Targets: []config.TargetConfig{{Name: "stage", Path: "apps/stage"}}},
		},
		{
			name: "dependsOn as plain names",
			yaml: `
targets:
  - name: app
    path: apps/app
    dependsOn: [infra, crds]
`,
			want: &config.File{Targets: []config.TargetConfig{{
				Name: "app", Path: "apps/app",
				DependsOn: []config.Dependency{{Name: "infra"}, {Name: "crds"}},
			}}},
		},
		{
			name: "dependsOn as Flux references, mixed with a plain name",
			yaml: `
targets:
  - name: app
    path: apps/app
    dependsOn:
      - name: infra
        namespace: platform
      - name: crds
      - monitoring
`,
			want: &config.File{Targets: []config.TargetConfig{{
				Name: "app", Path: "apps/app",
				DependsOn: []config.Dependency{{Name: "infra", Namespace: "platform"}, {Name: "crds"}, {Name: "monitoring"}},
			}}},
		},
		{
			name: "sources and clusters",
			yaml: `
sources:
  app-repo: ../app-repo
clusters:
  staging:
    kubeconfig: ~/.kube/staging
    context: stg
  production:
    kubeconfigEnv: PROD_KUBECONFIG
`,
			want: &config.File{
				Sources: map[string]string{"app-repo": "../app-repo"},
				Clusters: map[string]config.ClusterConfig{
					"staging":    {Kubeconfig: "~/.kube/staging", Context: "stg"},
					"production": {KubeconfigEnv: "PROD_KUBECONFIG"},
				},
			},
		},
		{
			name: "YAML 1.2: no, on and 010 stay strings",
			yaml: "clusters:\n  no:\n    context: oslo\ntargets:\n  - {name: on, path: 010, cluster: no}\n",
			want: &config.File{
				Clusters: map[string]config.ClusterConfig{"no": {Context: "oslo"}},
				Targets:  []config.TargetConfig{{Name: "on", Path: "010", Cluster: "no"}},
			},
		},
		{
			name: "Flux spec fields",
			yaml: `
targets:
  - name: web
    cluster: staging
    namespace: apps
    kubeconfig: web.kubeconfig
    kubeconfigEnv: WEB_KUBECONFIG
    path: ./web
    prune: true
    targetNamespace: web
    components: [../components/tls]
    namePrefix: pre-
    nameSuffix: -suf
    images:
      - name: nginx
        newTag: "1.27"
    postBuild:
      substitute:
        env: staging
`,
			want: &config.File{Targets: []config.TargetConfig{{
				Name: "web", Cluster: "staging", Namespace: "apps",
				Kubeconfig: "web.kubeconfig", KubeconfigEnv: "WEB_KUBECONFIG",
				Path: "./web", Prune: true, TargetNamespace: "web",
				Components: []string{"../components/tls"},
				NamePrefix: "pre-", NameSuffix: "-suf",
				Images:    []any{map[string]any{"name": "nginx", "newTag": "1.27"}},
				PostBuild: map[string]any{"substitute": map[string]any{"env": "staging"}},
			}}},
		},
		{
			name: "image policies with Flux's field names",
			yaml: `
imagePolicies:
  - name: api
    image: ghcr.io/org/mono
    exclusionList: ['^.*\.sig$']
    secretRef: {name: ghcr}
    filterTags:
      pattern: '^api-(?P<version>.*)$'
      extract: '$version'
    policy:
      semver:
        range: '>=0.20.0'
  - name: build
    namespace: apps
    image: 127.0.0.1:5000/build
    insecure: true
    policy: {numerical: {order: asc}}
    digestReflectionPolicy: Always
`,
			want: &config.File{ImagePolicies: []config.ImagePolicyConfig{
				{
					Name: "api", Image: "ghcr.io/org/mono", ExclusionList: []string{`^.*\.sig$`},
					SecretRef:  &config.LocalRef{Name: "ghcr"},
					FilterTags: &config.TagFilterConfig{Pattern: "^api-(?P<version>.*)$", Extract: "$version"},
					Policy:     config.PolicyChoice{SemVer: &config.SemVerConfig{Range: ">=0.20.0"}},
				},
				{
					Name: "build", Namespace: "apps", Image: "127.0.0.1:5000/build", Insecure: true,
					Policy:                 config.PolicyChoice{Numerical: &config.OrderConfig{Order: "asc"}},
					DigestReflectionPolicy: "Always",
				},
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := config.ParseFile([]byte(tc.yaml))
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseFile (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // parts of the error
	}{
		{name: "allowHosts with a scheme", yaml: "network:\n  allowHosts: [\"https://charts.example.com\"]\n",
			want: []string{"ferry.yaml", "network.allowHosts[0]", "host or host:port"}},
		{name: "allowHosts with a path", yaml: "network:\n  allowHosts: [charts.example.com/x]\n",
			want: []string{"network.allowHosts[0]", `"charts.example.com/x"`}},
		{name: "allowHosts wildcard", yaml: "network:\n  allowHosts: [ok.example.com, \"*.example.com\"]\n",
			want: []string{"network.allowHosts[1]", "wildcard"}},
		{name: "allowHosts bad port", yaml: "network:\n  allowHosts: [\"charts.example.com:99999\"]\n",
			want: []string{"network.allowHosts[0]", "not a port number"}},
		{name: "network unknown field", yaml: "network:\n  allowHost: [x]\n", want: []string{`unknown field "allowHost"`}},
		{
			name: "unknown top-level field",
			yaml: "targets: []\ntarget: []\n",
			want: []string{"ferry.yaml", `"target"`},
		},
		{
			name: "typo in a target field, with its line",
			yaml: "targets:\n  - name: stage\n    pth: apps/stage\n",
			want: []string{"ferry.yaml", "line 3", `unknown field "pth"`},
		},
		{
			name: "key in the wrong case",
			yaml: "Targets: [{name: stage, path: apps/stage}]\n",
			want: []string{"ferry.yaml", `"Targets"`},
		},
		{
			name: "dependsOn in the wrong case",
			yaml: "targets:\n  - {name: a, path: x, dependson: [b]}\n  - {name: b, path: web}\n",
			want: []string{"ferry.yaml", `"dependson"`},
		},
		{
			name: "a key that differs from another only in case is not silently dropped",
			yaml: "targets: [{name: a, path: x, prune: true, Prune: false}]\n",
			want: []string{"ferry.yaml", `"Prune"`},
		},
		{
			name: "unknown field in a cluster",
			yaml: "clusters: {staging: {kubeconfig: a, ctx: b}}\n",
			want: []string{"ferry.yaml", `"ctx"`},
		},
		{
			name: "unknown field in a dependsOn reference",
			yaml: "targets: [{name: a, path: a, dependsOn: [{name: b, kind: Kustomization}]}]\n",
			want: []string{"ferry.yaml", "dependsOn entry", `"kind"`},
		},
		{
			name: "dependsOn entry that is neither a name nor a reference",
			yaml: "targets: [{name: a, path: a, dependsOn: [42]}]\n",
			want: []string{"ferry.yaml", "dependsOn entry"},
		},
		{
			name: "missing name",
			yaml: "targets:\n  - {name: a, path: a}\n  - {path: b}\n",
			want: []string{"ferry.yaml", "targets[1]", "name is required"},
		},
		{
			name: "empty name",
			yaml: `targets: [{name: "", path: a}]`,
			want: []string{"ferry.yaml", "targets[0]", "name is required"},
		},
		{
			name: "missing path",
			yaml: "targets: [{name: stage}]\n",
			want: []string{"ferry.yaml", `target "stage"`, "path is required"},
		},
		{
			name: "duplicate target name",
			yaml: "targets:\n  - {name: stage, path: a}\n  - {name: stage, path: b}\n",
			want: []string{"ferry.yaml", `target "stage" is declared twice`},
		},
		{
			name: "duplicate key",
			yaml: "targets: [{name: a, path: a, path: b}]\n",
			want: []string{"ferry.yaml", "path"},
		},
		{
			name: "targets is not a list",
			yaml: "targets: {name: a, path: a}\n",
			want: []string{"ferry.yaml"},
		},
		{
			name: "not YAML",
			yaml: "targets: [\n",
			want: []string{"ferry.yaml"},
		},
		{
			name: "a list at the top",
			yaml: "- name: a\n  path: a\n",
			want: []string{"ferry.yaml"},
		},
		{
			name: "prune is not a boolean",
			yaml: "targets: [{name: a, path: a, prune: sometimes}]\n",
			want: []string{"ferry.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := config.ParseFile([]byte(tc.yaml))
			if f != nil {
				t.Errorf("ParseFile returned %+v along with the error", f)
			}
			wantError(t, err, tc.want...)
			if err != nil && !strings.HasPrefix(err.Error(), "ferry.yaml: ") {
				t.Errorf("error %q does not start with the file name", err)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	t.Run("no ferry.yaml is not an error", func(t *testing.T) {
		t.Parallel()
		f, err := config.ReadFile(t.TempDir())
		if f != nil || err != nil {
			t.Fatalf("ReadFile = %+v, %v; want nil, nil", f, err)
		}
	})
	t.Run("reads ferry.yaml at the root", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{"ferry.yaml": "targets: [{name: stage, path: apps/stage}]\n"})
		f, err := config.ReadFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := &config.File{Targets: []config.TargetConfig{{Name: "stage", Path: "apps/stage"}}}
		if diff := cmp.Diff(want, f); diff != "" {
			t.Errorf("ReadFile (-want +got):\n%s", diff)
		}
	})
	t.Run("invalid ferry.yaml", func(t *testing.T) {
		t.Parallel()
		dir := testtree.New(t, map[string]string{"ferry.yaml": "targets: [{name: stage}]\n"})
		_, err := config.ReadFile(dir)
		wantError(t, err, "ferry.yaml", "path is required")
	})
	t.Run("unreadable ferry.yaml is an error, not an absent file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "ferry.yaml"), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := config.ReadFile(dir)
		if err == nil {
			t.Fatalf("ReadFile of a directory named ferry.yaml = %+v, nil; want an error", f)
		}
	})
}

// FuzzParseFile checks that ParseFile never panics, that what it accepts
// has a name and a path for every target and no name twice, and that what
// it accepts reads back the same after being written out.
func FuzzParseFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"targets: [{name: stage, path: apps/stage}]\n",
		"targets:\n  - name: app\n    path: apps/app\n    dependsOn: [infra, {name: crds, namespace: x}]\n  - name: infra\n    path: infra\n",
		"sources: {app-repo: ../app-repo}\nclusters: {staging: {kubeconfig: k, kubeconfigEnv: E, context: c}}\n",
		"targets: [{name: a, path: a, prune: true, postBuild: {substitute: {x: '1'}}, patches: [{patch: 'x'}], images: [], decryption: {provider: sops}}]\n",
		"targets: [{name: a, path: a}, {name: a, path: b}]\n",
		"targets: [{name: a}]\n",
		"targets: [null]\n",
		"targets: [{name: a, path: a, dependsOn: [null, 1, {}]}]\n",
		"{\"targets\": [{\"name\": \"a\", \"path\": \"a\"}]}",
		"- a\n- b\n",
		"targets: &x [{name: a, path: a}]\nsources: *x\n",
		"targets: [{name: a, path: a, commonMetadata: {labels: {a: b}}, components: [c]}]\n",
		"imagePolicies: [{name: app, image: ghcr.io/org/app, policy: {semver: {range: '>=1.0.0'}}}]\n",
		"imagePolicies:\n  - name: b\n    namespace: apps\n    image: r/b\n    exclusionList: [x]\n    secretRef: {name: s}\n    insecure: true\n    filterTags: {pattern: '^(?P<n>.*)$', extract: $n}\n    policy: {numerical: {order: asc}, alphabetical: {}}\n    digestReflectionPolicy: Always\n",
		"imagePolicies: [{name: a, image: x}, {name: a, namespace: flux-system, image: y}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.ParseFile(data)
		if err != nil {
			if file != nil {
				t.Fatalf("ParseFile returned a file and an error: %v", err)
			}
			return
		}
		if file == nil {
			t.Fatal("ParseFile returned nil, nil")
		}
		seen := map[string]bool{}
		for i, tc := range file.Targets {
			if tc.Name == "" || tc.Path == "" {
				t.Fatalf("targets[%d] = %+v accepted without a name or a path", i, tc)
			}
			if seen[tc.Name] {
				t.Fatalf("target %q accepted twice", tc.Name)
			}
			seen[tc.Name] = true
		}
		policies := map[string]bool{}
		for i, p := range file.ImagePolicies {
			ns := p.Namespace
			if ns == "" {
				ns = config.DefaultNamespace
			}
			if p.Name == "" || strings.TrimSpace(p.Image) == "" || policies[ns+"/"+p.Name] {
				t.Fatalf("imagePolicies[%d] = %+v accepted without a name or an image, or twice", i, p)
			}
			policies[ns+"/"+p.Name] = true
		}
		out, err := yaml.Marshal(file)
		if err != nil {
			t.Fatalf("marshal accepted file: %v", err)
		}
		again, err := config.ParseFile(out)
		if err != nil {
			t.Fatalf("ParseFile of its own output failed: %v\noutput:\n%s", err, out)
		}
		if diff := cmp.Diff(file, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("ParseFile(Marshal(f)) differs from f (-first +second):\n%s", diff)
		}
	})
}
