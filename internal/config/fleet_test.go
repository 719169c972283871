package config_test

import (
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/testtree"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The generated fleet, written to a directory for timing the binary:
//
//	go test ./internal/config -run TestWriteFleet -fleet.dir /tmp/fleet5000 -fleet.n 5000
var (
	fleetDir    = flag.String("fleet.dir", "", "TestWriteFleet: write a generated fleet repository to this directory")
	fleetN      = flag.Int("fleet.n", 1000, "TestWriteFleet: number of Flux Kustomizations in the fleet")
	fleetLayout = flag.String("fleet.layout", "clusters", "TestWriteFleet: clusters (roots with nested Kustomizations) or flat (no root reaches them)")
)

// fleetClusters are the clusters of a generated fleet: the first two were
// bootstrapped (flux-system/gotk-sync.yaml), the last is a plain
// clusters/<name>/ folder whose kustomization.yaml sets the namespace its
// Kustomization files leave out.
var fleetClusters = []string{"production", "staging", "dev"}

// genFleet returns the files of a fleet repository with about n Flux
// Kustomizations, laid out as fleet repos are:
//
//   - clusters/<c>/kustomization.yaml lists the cluster's files of child
//     Kustomizations (eight to a file, and one to a file) and patches every
//     child: prune, postBuild.substitute, a timeout for labelled ones;
//   - infra-controllers and infra-configs that every app depends on (fan-in),
//     and every third app depending on the one before it (chains), some
//     naming the namespace, some substituting from a ConfigMap of the root;
//   - most app names exist in every cluster (so targets are named
//     <cluster>/<name>), some in one cluster only;
//   - a tenants Kustomization whose path holds more Kustomizations (found
//     by rendering it, not the root), and one from another repository
//     (skipped);
//   - a legacy/ folder of Kustomizations no root reaches (file scan);
//   - apps/<name>/ for every path: a Deployment and a ConfigMap.
//
// With layout "flat" there are no clusters: every Kustomization sits in a
// deploy/ file that nothing renders, and the file scan finds them all.
func genFleet(n int, layout string) map[string]string {
	files := map[string]string{}
	apps := map[string]bool{}
	app := func(name string) string {
		if !apps[name] {
			apps[name] = true
			d := "apps/" + name + "/"
			files[d+"kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deployment.yaml, config.yaml]\n"
			files[d+"deployment.yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[1]s
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
        - name: app
          image: registry.example.com/%[1]s:1.0.0
          envFrom: [{configMapRef: {name: %[1]s}}]
`, name)
			files[d+"config.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %[1]s\n  namespace: %[1]s\ndata:\n  cluster: ${cluster:=none}\n  region: ${region:=none}\n", name)
		}
		return "apps/" + name
	}
	// ks is a Kustomization document; ns "" leaves the namespace out.
	ks := func(ns, name, path, spec string) string {
		meta := "  name: " + name + "\n"
		if ns != "" {
			meta += "  namespace: " + ns + "\n"
		}
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n" + meta +
			"spec:\n  interval: 10m\n  path: ./" + path + "\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n" + spec
	}
	deps := func(names ...string) string {
		s := "  dependsOn:\n"
		for _, d := range names {
			s += "    - name: " + d + "\n"
		}
		return s
	}

	if layout == "flat" {
		var doc []string
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("svc-%04d", i)
			spec := "  prune: true\n"
			if i%3 != 0 && i > 0 {
				spec += deps(fmt.Sprintf("svc-%04d", i-1))
			}
			doc = append(doc, ks("flux-system", name, app(name), spec))
			if i%5 == 4 || i == n-1 {
				files[fmt.Sprintf("deploy/group-%04d.yaml", i/5)] = strings.Join(doc, "---\n")
				doc = nil
			}
		}
		return files
	}

	legacy := n / 50
	perCluster := (n - legacy) / len(fleetClusters)
	for ci, c := range fleetClusters {
		dir := "clusters/" + c + "/"
		ns := "flux-system"
		var resources []string
		rootNS := ""
		if ci < 2 {
			files[dir+"flux-system/gotk-sync.yaml"] = gotkSync("clusters/" + c)
			files[dir+"flux-system/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [gotk-sync.yaml]\n"
			resources = append(resources, "flux-system")
		} else {
			ns = "" // the root's kustomization.yaml sets it
			rootNS = "namespace: flux-system\n"
		}
		files[dir+"cluster-vars.yaml"] = configMap("flux-system", "cluster-vars", "region", "eu-"+c)
		files[dir+"infra.yaml"] = ks(ns, "infra-controllers", app("infra-controllers"), "") + "---\n" +
			ks(ns, "infra-configs", app("infra-configs"), deps("infra-controllers"))
		files[dir+"platform.yaml"] = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: platform
  namespace: flux-system
spec:
  interval: 1m
  url: https://example.com/platform.git
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform
  namespace: flux-system
spec:
  interval: 10m
  path: ./deploy
  sourceRef:
    kind: GitRepository
    name: platform
`
		resources = append(resources, "cluster-vars.yaml", "infra.yaml", "platform.yaml")

		// Tenants: a Kustomization whose path holds one Kustomization per
		// tenant, found when the tenants target is rendered.
		tenants := perCluster / 20
		files[dir+"tenants.yaml"] = ks(ns, "tenants", "tenants/"+c, deps("infra-configs"))
		resources = append(resources, "tenants.yaml")
		var tfiles []string
		for j := 0; j < tenants; j++ {
			f := fmt.Sprintf("tenant-%03d.yaml", j)
			files["tenants/"+c+"/"+f] = ks("flux-system", fmt.Sprintf("tenant-%03d", j), app(fmt.Sprintf("tenant-%03d", j)), "  prune: true\n")
			tfiles = append(tfiles, f)
		}
		files["tenants/"+c+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [" + strings.Join(tfiles, ", ") + "]\n"

		napps := perCluster - 4 - tenants // infra-controllers, infra-configs, platform, tenants
		shared := napps * 4 / 5
		var group []string
		groups := 0
		flush := func() {
			if len(group) > 0 {
				f := fmt.Sprintf("apps/group-%04d.yaml", groups)
				groups++
				files[dir+f] = strings.Join(group, "---\n")
				resources = append(resources, f)
				group = nil
			}
		}
		appName := func(i int) string {
			if i >= shared {
				return fmt.Sprintf("%s-app-%04d", c, i)
			}
			return fmt.Sprintf("app-%04d", i)
		}
		for i := 0; i < napps; i++ {
			name := appName(i)
			d := []string{"infra-configs"}
			if i%3 == 2 {
				d = append(d, appName(i-1))
			}
			spec := deps(d...)
			if i%10 == 5 && ns != "" {
				spec += "    - name: infra-controllers\n      namespace: flux-system\n"
			}
			if i%7 == 3 {
				spec += "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n"
			}
			if i%4 == 1 {
				spec += "  targetNamespace: " + name + "\n"
			}
			doc := ks(ns, name, app(name), spec)
			if i%11 == 0 {
				doc = strings.Replace(doc, "metadata:\n", "metadata:\n  labels:\n    tier: critical\n", 1)
			}
			if i%5 == 4 {
				f := "apps/single/" + name + ".yaml"
				files[dir+f] = doc
				resources = append(resources, f)
				continue
			}
			group = append(group, doc)
			if len(group) == 8 {
				flush()
			}
		}
		flush()
		files[dir+"kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + rootNS +
			"resources:\n  - " + strings.Join(resources, "\n  - ") + "\n" + `patches:
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: |
      - op: add
        path: /spec/prune
        value: true
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}
    patch: |
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata: {name: all}
      spec:
        postBuild:
          substitute: {cluster: ` + c + `}
  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization, labelSelector: tier=critical}
    patch: |
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata: {name: critical}
      spec: {timeout: 5m}
`
	}
	for i := 0; i < legacy; i++ {
		name := fmt.Sprintf("legacy-%03d", i)
		files["legacy/"+name+".yaml"] = ks("flux-system", name, app(name), "")
	}
	return files
}

// TestWriteFleet writes a generated fleet to -fleet.dir, for timing
// `ferry render --list` on it; without the flag it does nothing.
func TestWriteFleet(t *testing.T) {
	if *fleetDir == "" {
		t.Skip("no -fleet.dir")
	}
	if err := os.RemoveAll(*fleetDir); err != nil {
		t.Fatal(err)
	}
	testtree.Write(t, *fleetDir, genFleet(*fleetN, *fleetLayout))
}

// TestDiscoverGeneratedFleet discovers small generated fleets and compares
// what `ferry render --list` shows of them (every field of every target,
// the skipped ones, the clusters) with golden files, written by the
// discovery as it was before it was made linear: it must not change.
// Every Kustomization of the fleet is a target once, after its
// dependencies.
func TestDiscoverGeneratedFleet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		layout  string
		n       int
		skipped int
	}{
		{"clusters", 300, len(fleetClusters)},
		{"flat", 30, 0},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.layout, tc.n), func(t *testing.T) {
			t.Parallel()
			files := genFleet(tc.n, tc.layout)
			repo := load(t, testtree.New(t, files))

			got := listing(t, repo)
			goldenfile.Check(t, filepath.Join("testdata", fmt.Sprintf("fleet-%s-%d.golden", tc.layout, tc.n)), []byte(got), *update)

			var docs int
			for name, body := range files {
				if path.Base(name) != "kustomization.yaml" {
					docs += strings.Count("\n"+body, "\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n")
				}
			}
			syncs := 0
			for _, c := range repo.Clusters {
				if strings.HasSuffix(c.Origin, "gotk-sync.yaml:12") {
					syncs++
				}
			}
			if got, want := len(repo.Targets)+len(repo.Skipped), docs-syncs; got != want {
				t.Errorf("%d targets and %d skipped, want %d Kustomizations (%d in files, %d syncs)", len(repo.Targets), len(repo.Skipped), want, docs, syncs)
			}
			if len(repo.Skipped) != tc.skipped {
				t.Errorf("%d skipped, want %d: %+v", len(repo.Skipped), tc.skipped, repo.Skipped)
			}
			assertDependencyOrder(t, repo)
		})
	}
}

// listing is a repository's targets in order, one line each with every
// field, then the skipped Kustomizations and the clusters.
func listing(t *testing.T, repo *config.Repo) string {
	t.Helper()
	var b strings.Builder
	for _, tg := range targets(t, repo) {
		fmt.Fprintf(&b, "target %s cluster=%s namespace=%s path=%s prune=%t targetNamespace=%s dependsOn=%s origin=%s root=%s\n",
			tg.Name, tg.Cluster, tg.Namespace, tg.Path, tg.Prune, tg.TargetNamespace, strings.Join(tg.DependsOn, ","), tg.Origin, tg.Root)
	}
	for _, s := range repo.Skipped {
		fmt.Fprintf(&b, "skipped %s cluster=%s origin=%s reason=%s\n", s.Name, s.Cluster, s.Origin, s.Reason)
	}
	for _, c := range repo.Clusters {
		fmt.Fprintf(&b, "cluster %s path=%s origin=%s\n", c.Name, c.Path, c.Origin)
	}
	return b.String()
}
