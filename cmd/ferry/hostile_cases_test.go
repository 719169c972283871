package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/gittest"
)

// kust is a kustomization for the corpus's app folder: the base
// resources, then the hostile lines.
func kust(lines string) map[string]string {
	return map[string]string{"app/kustomization.yaml": "resources:\n  - deployment.yaml\n  - secret.yaml\n" + lines}
}

func remoteCase(name, lines, ref string) hostileCase {
	return hostileCase{name: name, class: "remote", files: kust(lines),
		want: []string{`target "app"`, "app/kustomization.yaml", "remote location", ref, "--allow-remote-bases"}}
}

// aliasBomb is a YAML document whose aliases expand to 10^9 scalars.
func aliasBomb(head string) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("x" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// sparse makes a file of size bytes that takes no disk space.
func sparse(rel string, size int64, head string) func(t *testing.T, c *hostileRun) {
	return func(t *testing.T, c *hostileRun) {
		p := filepath.Join(c.repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(head), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
	}
}

// edit rewrites a repo file with fn.
func edit(rel string, fn func(string) string) func(t *testing.T, c *hostileRun) {
	return func(t *testing.T, c *hostileRun) {
		before := c.read(t, rel)
		after := fn(before)
		if after == before {
			t.Fatalf("the edit changed nothing in %s", rel)
		}
		c.write(t, rel, after)
	}
}

func linkAt(target, rel string) func(t *testing.T, c *hostileRun) {
	return func(t *testing.T, c *hostileRun) {
		target = strings.ReplaceAll(target, "{{CASE}}", c.dir)
		p := strings.ReplaceAll(rel, "{{CASE}}", c.dir)
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.repo, p)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// actionsEnv is a workflow step's environment, with its files under the
// folder the case lets ferry write.
func actionsEnv() map[string]string {
	return map[string]string{"GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": "{{REPO}}",
		"GITHUB_OUTPUT": "{{CASE}}/out/output", "GITHUB_STEP_SUMMARY": "{{CASE}}/out/summary",
		"GITHUB_EVENT_NAME": "push", "GITHUB_REPOSITORY": "acme/fleet"}
}

func actionsFiles(t *testing.T, c *hostileRun) {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"output", "summary"} {
		if err := os.WriteFile(filepath.Join(c.out, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var forgedCommands = []string{"::warning title=forged", "::error title=forged", "::add-mask::forged", "::stop-commands::", "##[warning]forged"}

func hostileCases() []hostileCase {
	cases := []hostileCase{
		// 1. Remote locations in any field, to a listener that must hear
		// nothing, and git forms that must start no git.
		remoteCase("configMapGenerator files URL", "configMapGenerator:\n  - name: x\n    files: [{{URL}}/a.txt]\n", "/a.txt"),
		remoteCase("configMapGenerator files key=URL", "configMapGenerator:\n  - name: x\n    files: [k={{URL}}/a.txt]\n", "k=http"),
		remoteCase("secretGenerator envs https", "secretGenerator:\n  - name: x\n    envs: [https://127.0.0.1:1/e.env]\n", "e.env"),
		remoteCase("secretGenerator deprecated env", "secretGenerator:\n  - name: x\n    env: {{URL}}/e.env\n", "e.env"),
		remoteCase("openapi path", "openapi:\n  path: {{URL}}/schema.json\n", "schema.json"),
		remoteCase("crds", "crds: [{{URL}}/crd.yaml]\n", "crd.yaml"),
		remoteCase("configurations", "configurations: [{{URL}}/conf.yaml]\n", "conf.yaml"),
		remoteCase("replacements path", "replacements:\n  - path: {{URL}}/r.yaml\n", "r.yaml"),
		remoteCase("patchesStrategicMerge URL", "patchesStrategicMerge: [{{URL}}/p.yaml]\n", "p.yaml"),
		remoteCase("patches path", "patches:\n  - path: {{URL}}/p.yaml\n", "p.yaml"),
		remoteCase("patchesJson6902 path", "patchesJson6902:\n  - path: {{URL}}/p.json\n    target: {kind: Deployment, name: web}\n", "p.json"),
		remoteCase("transformers URL", "transformers: [{{URL}}/t.yaml]\n", "t.yaml"),
		remoteCase("validators URL", "validators: [{{URL}}/v.yaml]\n", "v.yaml"),
		remoteCase("generators git repo", "generators:\n  - git::{{URL}}/org/repo.git//gen?ref=main\n", "repo.git"),
		remoteCase("resources git over https", "resources:\n  - https://github.com/org/repo//base?ref=v1\n", "github.com/org/repo"),
		remoteCase("resources scp-like git", "resources:\n  - git@github.com:org/repo.git//base\n", "git@github.com"),
		remoteCase("resources ssh", "resources:\n  - ssh://git@127.0.0.1:1/org/repo.git//base\n", "ssh://"),
		remoteCase("components github shorthand", "components:\n  - github.com/org/repo/comp?ref=v1\n", "github.com/org/repo/comp"),
		remoteCase("bases (deprecated)", "bases:\n  - gh:org/repo\n", "gh:org/repo"),
		remoteCase("inline transformer config", "transformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata: {name: p}\n    path: {{URL}}/p.yaml\n", "p.yaml"),
		remoteCase("one-line inline generator config", "generators:\n  - \"{apiVersion: builtin, kind: ConfigMapGenerator, metadata: {name: g}, files: [{{URL}}/f]}\"\n", "/f"),
		{name: "generator config file", class: "remote", files: map[string]string{
			"app/kustomization.yaml": "resources: [deployment.yaml]\ngenerators: [gen.yaml]\n",
			"app/gen.yaml":           "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: g}\nenvs: [{{URL}}/x.env]\n"},
			want: []string{`target "app"`, "app/gen.yaml", "remote location", "x.env"}},
		{name: "replacement transformer config file", class: "remote", files: map[string]string{
			"app/kustomization.yaml": "resources: [deployment.yaml]\ntransformers: [t.yaml]\n",
			"app/t.yaml":             "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements:\n  - path: {{URL}}/r.yaml\n"},
			want: []string{`target "app"`, "app/t.yaml", "remote location", "r.yaml"}},
		{name: "remote location in a component", class: "remote", files: map[string]string{
			"app/kustomization.yaml":  "resources: [deployment.yaml]\ncomponents: [../comp]\n",
			"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nconfigMapGenerator:\n  - name: c\n    files: [{{URL}}/c]\n"},
			want: []string{`target "app"`, "comp/kustomization.yaml", "remote location"}},
		{name: "remote location in a Flux root", class: "remote", files: map[string]string{
			"ferry.yaml": "", "clusters/dev/kustomization.yaml": "resources: [{{URL}}/root.yaml]\n"},
			setup: func(t *testing.T, c *hostileRun) { _ = os.Remove(filepath.Join(c.repo, "ferry.yaml")) },
			want:  []string{"clusters/dev/kustomization.yaml", "remote location"}},

		// 2. Decrypted values in diff reports, in every format: a value
		// kustomize replacements copy out of the Secret into a ConfigMap.
		maskCase("json", "json"),
		maskCase("text", "text"),
		maskCase("markdown", "markdown"),

		// 3. Paths render -o writes.
		{name: "target named ../../escaped", class: "output",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: ../../escaped\n    path: app\n"},
			args:  []string{"render", "--repo", "{{REPO}}", "-o", "{{OUT}}"}, want: []string{"ferry.yaml", `"../../escaped"`}},
		{name: "target name with a dot segment", class: "output",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: a/../../b\n    path: app\n"},
			args:  []string{"render", "--repo", "{{REPO}}", "-o", "{{OUT}}"}, want: []string{"ferry.yaml", `"a/../../b"`}},
		{name: "Flux Kustomization named ../x", class: "output",
			files: map[string]string{"clusters/dev/ks.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: ../../x, namespace: flux-system}\nspec: {path: ./app, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n"},
			setup: func(t *testing.T, c *hostileRun) { _ = os.Remove(filepath.Join(c.repo, "ferry.yaml")) },
			args:  []string{"render", "--repo", "{{REPO}}", "-o", "{{OUT}}"}, want: []string{"clusters/dev/ks.yaml", `"../../x"`}},
		{name: "symlink at the Secret's file", class: "output",
			setup: linkAt("{{CASE}}/stolen.yaml", "{{CASE}}/out/app/secret_db.yaml"),
			args:  []string{"render", "--repo", "{{REPO}}", "-o", "{{OUT}}"}, want: []string{"secret_db.yaml", "symlink"}},
		{name: "symlinked target folder", class: "output",
			setup: func(t *testing.T, c *hostileRun) {
				if err := os.MkdirAll(filepath.Join(c.out), 0o755); err != nil {
					t.Fatal(err)
				}
				linkAt("{{CASE}}/home", "{{CASE}}/out/app")(t, c)
			},
			args: []string{"render", "--repo", "{{REPO}}", "-o", "{{OUT}}"}, want: []string{"out/app", "symlink"}},

		// 4. Inputs that exhaust the runner.
		{name: "alias bomb in a resource", class: "exhaust",
			files: map[string]string{"app/kustomization.yaml": "resources: [deployment.yaml, bomb.yaml]\n",
				"app/bomb.yaml": aliasBomb("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  x: y\nz:\n  ")},
			want: []string{`target "app"`, "app/bomb.yaml", "alias"}},
		{name: "alias bomb in a kustomization", class: "exhaust",
			files: map[string]string{"app/kustomization.yaml": aliasBomb("resources: [deployment.yaml]\n")},
			want:  []string{`target "app"`, "app/kustomization.yaml", "alias"}},
		{name: "alias bomb in ferry.yaml", class: "exhaust",
			files: map[string]string{"ferry.yaml": aliasBomb("targets:\n  - name: app\n    path: app\n")},
			want:  []string{"ferry.yaml", "alias"}},
		{name: "alias bomb in a Flux object", class: "exhaust",
			files: map[string]string{"clusters/dev/ks.yaml": aliasBomb("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app, namespace: flux-system}\nspec: {path: ./app, sourceRef: {kind: GitRepository, name: flux-system}}\n")},
			setup: func(t *testing.T, c *hostileRun) { _ = os.Remove(filepath.Join(c.repo, "ferry.yaml")) },
			want:  []string{"clusters/dev/ks.yaml", "alias"}},
		{name: "200 MB resource", class: "exhaust",
			files: map[string]string{"app/kustomization.yaml": "resources: [deployment.yaml, big.yaml]\n"},
			setup: sparse("app/big.yaml", 200<<20, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  k: "),
			want:  []string{`target "app"`, "app/big.yaml", "more than"}},
		{name: "200 MB Flux object file", class: "exhaust",
			setup: func(t *testing.T, c *hostileRun) {
				_ = os.Remove(filepath.Join(c.repo, "ferry.yaml"))
				sparse("clusters/dev/big.yaml", 200<<20, "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n")(t, c)
			},
			want: []string{"clusters/dev/big.yaml", "more than"}},
		{name: "200 MB ferry.yaml", class: "exhaust",
			setup: sparse("ferry.yaml", 200<<20, "targets:\n  - name: app\n    path: app\n"),
			want:  []string{"ferry.yaml", "more than"}},

		// 5. Damaged SOPS files.
		{name: "SOPS file cut in half", class: "sops",
			setup: edit("app/secret.yaml", func(s string) string { return s[:len(s)/2] }),
			want:  []string{`target "app"`, "app/secret.yaml"}},
		{name: "SOPS mac line removed", class: "sops",
			setup: edit("app/secret.yaml", func(s string) string { return regexp.MustCompile(`(?m)^\s*mac: .*\n`).ReplaceAllString(s, "") }),
			want:  []string{`target "app"`, "app/secret.yaml", "SOPS"}},
		{name: "SOPS metadata removed", class: "sops",
			setup: edit("app/secret.yaml", func(s string) string { return s[:strings.Index(s, "\nsops:")+1] }),
			want:  []string{`target "app"`, "app/secret.yaml", "not a complete SOPS document"}},
		{name: "SOPS file cut in half, --no-decrypt", class: "sops",
			setup: edit("app/secret.yaml", func(s string) string { return s[:strings.Index(s, "\nsops:")+1] }),
			args:  []string{"render", "--repo", "{{REPO}}", "--no-decrypt"},
			want:  []string{`target "app"`, "app/secret.yaml", "not a complete SOPS document"}},
		{name: "dotenv source without its sops_mac", class: "sops",
			files: map[string]string{"app/kustomization.yaml": "resources: [deployment.yaml]\nsecretGenerator:\n  - name: g\n    envs: [app.env]\n"},
			setup: func(t *testing.T, c *hostileRun) {
				c.encrypt(t, "app/app.env", "TOKEN="+strings.ReplaceAll(hostileCanary, "\t", "_")+"\n", "")
				edit("app/app.env", func(s string) string { return regexp.MustCompile(`(?m)^sops_mac=.*\n`).ReplaceAllString(s, "") })(t, c)
			},
			want: []string{`target "app"`, "app/app.env"}},
		{name: "JSON source cut short", class: "sops",
			files: map[string]string{"app/kustomization.yaml": "resources: [deployment.yaml]\nsecretGenerator:\n  - name: g\n    files: [creds.json]\n"},
			setup: func(t *testing.T, c *hostileRun) {
				c.encrypt(t, "app/creds.json", `{"credential": "x-hostile-json"}`, "")
				edit("app/creds.json", func(s string) string { return s[:strings.Index(s, `"sops"`)] + "}" })(t, c)
			},
			want: []string{`target "app"`, "app/creds.json", "not a complete SOPS document"}},

		// 6. Workflow commands through either stream.
		{name: "repo path that forges a command", class: "commands", env: actionsEnv(), setup: actionsFiles,
			args: []string{"render", "--repo", "{{CASE}}/no\n::warning title=forged::pwned\nrepo"}, forbid: forgedCommands},
		{name: "file name that forges a command", class: "commands", env: actionsEnv(), setup: actionsFiles,
			files:  map[string]string{"app/kustomization.yaml": "resources:\n  - deployment.yaml\n  - \"x\\n::error title=forged::pwned\\n.yaml\"\n"},
			forbid: forgedCommands, want: []string{`target "app"`}},
		{name: "target name that forges a command", class: "commands", env: actionsEnv(), setup: actionsFiles,
			files:  map[string]string{"ferry.yaml": "targets:\n  - name: \"app\\r::add-mask::forged\"\n    path: app\n"},
			forbid: forgedCommands, want: []string{"ferry.yaml"}},
		{name: "old-style command in an error", class: "commands", env: actionsEnv(), setup: actionsFiles,
			files:  map[string]string{"app/kustomization.yaml": "resources:\n  - deployment.yaml\n  - \"##[warning]forged\"\n"},
			forbid: forgedCommands, want: []string{`target "app"`}},

		// 7. ferry.yaml edges.
		{name: "source naming the repo's parent", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "sources:\n  other: ..\ntargets:\n  - name: app\n    path: app\n"}, want: []string{"ferry.yaml", "other"}},
		{name: "source naming the repo itself", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "sources:\n  self: .\ntargets:\n  - name: app\n    path: app\n"}, want: []string{"ferry.yaml", "self"}},
		{name: "source naming the filesystem root", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "sources:\n  root: /\ntargets:\n  - name: app\n    path: app\n"}, want: []string{"ferry.yaml", "root"}},
		{name: "source through a symlink to the parent", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "sources:\n  up: up\ntargets:\n  - name: app\n    path: app\n"},
			setup: linkAt("..", "up"), want: []string{"ferry.yaml", "up"}},
		{name: "target name with a newline", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: \"app\\nforged  -  x\"\n    path: app\n"}, want: []string{"ferry.yaml", `\n`}},
		{name: "target name with upper case and spaces", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: My App\n    path: app\n"}, want: []string{"ferry.yaml", `"My App"`}},
		{name: "prune: on", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: app\n    path: app\n    prune: on\n"}, want: []string{"ferry.yaml", "prune"}},
		{name: "prune quoted true", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: app\n    path: app\n    prune: \"true\"\n"}, want: []string{"ferry.yaml", "prune"}},
		{name: "prune: yes", class: "ferry.yaml",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: app\n    path: app\n    prune: yes\n"}, want: []string{"ferry.yaml", "prune"}},

		// Earlier issues' bad inputs.
		{name: "invalid YAML", class: "earlier", files: map[string]string{"app/deployment.yaml": "kind: Deployment\nmetadata: {name: web\n  spec: [\n"},
			want: []string{`target "app"`, "app/deployment.yaml"}},
		{name: "missing resource", class: "earlier", files: kust("  - missing.yaml\n"), want: []string{"app/missing.yaml"}},
		{name: "path escaping the root", class: "earlier", files: map[string]string{"app/kustomization.yaml": "resources: [../../../etc/passwd]\n"},
			want: []string{`target "app"`, "escapes the repository root"}},
		{name: "symlink escaping the root", class: "earlier", files: kust("  - link.yaml\n"),
			setup: linkAt("{{CASE}}/home/outside.yaml", "app/link.yaml"), want: []string{`target "app"`, "link.yaml"}},
		{name: "target path outside the repository", class: "earlier",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: app\n    path: ../../etc\n"}, want: []string{`target "app"`, "escapes the repository root"}},
		{name: "object defined twice", class: "earlier", files: map[string]string{"app/again.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			"app/kustomization.yaml": "resources: [deployment.yaml, again.yaml]\n"}, want: []string{"Deployment.apps/web", "defined twice"}},
		{name: "encrypted file and no key", class: "earlier", env: map[string]string{"SOPS_AGE_KEY": ""}, want: []string{"app/secret.yaml", "no age identity"}},
		{name: "wrong key", class: "earlier", env: map[string]string{"SOPS_AGE_KEY": "{{OTHERKEY}}"}, want: []string{"app/secret.yaml", "none of the given age identities"}},
		{name: "tampered ciphertext", class: "earlier",
			setup: edit("app/secret.yaml", func(s string) string {
				return regexp.MustCompile(`password: ENC\[AES256_GCM,data:.`).ReplaceAllStringFunc(s, flipLast)
			}), want: []string{"app/secret.yaml", "ciphertext was modified"}},
		{name: "plaintext changed under the MAC", class: "earlier",
			setup: edit("app/secret.yaml", func(s string) string { return strings.Replace(s, "name: db", "name: db2", 1) }),
			want:  []string{"app/secret.yaml", "MAC mismatch"}},
		{name: "dependsOn cycle", class: "earlier",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: a\n    path: app\n    dependsOn: [b]\n  - name: b\n    path: app\n    dependsOn: [a]\n"},
			want:  []string{"dependsOn cycle"}},
		{name: "unknown field in ferry.yaml", class: "earlier",
			files: map[string]string{"ferry.yaml": "targets:\n  - name: app\n    pth: app\n"}, want: []string{"ferry.yaml", `"pth"`}},
		{name: "helmCharts", class: "earlier", files: kust("helmCharts:\n  - name: x\n    repo: {{URL}}/charts\n"), want: []string{`target "app"`}},

		// Command-line misuse.
		{name: "unknown target", class: "cli", args: []string{"render", "--repo", "{{REPO}}", "nope"}, want: []string{`"nope"`}},
		{name: "bad --format", class: "cli", args: []string{"render", "--repo", "{{REPO}}", "--list", "--format", "yaml"}, want: []string{"--format"}},
		{name: "unknown flag", class: "cli", args: []string{"render", "--nope"}, want: []string{"--nope"}},
		{name: "diff without --base", class: "cli", args: []string{"diff", "--repo", "{{REPO}}"}, want: []string{"--base"}},
		{name: "SOPS_AGE_KEY_FILE missing", class: "cli", env: map[string]string{"SOPS_AGE_KEY": "", "SOPS_AGE_KEY_FILE": "{{CASE}}/nope.txt"}, want: []string{"SOPS_AGE_KEY_FILE"}},
		{name: "malformed age key", class: "cli", env: map[string]string{"SOPS_AGE_KEY": "AGE-SECRET-KEY-1NOTAKEY"}, want: []string{"age"}},
		{name: "repository that does not exist", class: "cli", args: []string{"render", "--repo", "{{CASE}}/nowhere"}, want: []string{"nowhere"}},
	}
	cases = append(cases, hostileReachCases()...)
	cases = append(cases, hostileMaskCases()...)
	cases = append(cases, hostileCredsCases()...)
	cases = append(cases, hostileIdentityCases()...)
	cases = append(cases, hostileBudgetCases()...)
	return cases
}

// maskCase commits the corpus repo, then a change that copies the
// Secret's value into a new ConfigMap, and diffs the two in format.
func maskCase(name, format string) hostileCase {
	return hostileCase{name: "replacements copy the value, diff --format " + name, class: "mask", succeeds: true,
		args: []string{"diff", "--repo", "{{REPO}}", "--base", "HEAD~1", "--format", format},
		setup: func(t *testing.T, c *hostileRun) {
			repo := gittest.Init(t, c.repo)
			repo.Commit(t, "base")
			c.write(t, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: copy}\ndata: {password: placeholder}\n")
			c.write(t, "app/kustomization.yaml", "resources: [deployment.yaml, secret.yaml, cm.yaml]\nreplacements:\n  - source: {kind: Secret, name: db, fieldPath: stringData.password}\n    targets:\n      - select: {kind: ConfigMap, name: copy}\n        fieldPaths: [data.password]\n")
			repo.Commit(t, "head")
		}}
}

func flipLast(m string) string {
	if m[len(m)-1] == 'A' {
		return m[:len(m)-1] + "B"
	}
	return m[:len(m)-1] + "A"
}
