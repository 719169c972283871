package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/images"
)

// The corpus cases of ferry's own secrets (class "mask", named "own
// secret: ..."): credentials ferry is given by its environment (or
// decrypts) reach servers that echo them back in their errors, and
// ferry prints those errors. Each secret holds the corpus's unique word
// (hostileCanary's), so the harness finds it in any stream or file
// ferry writes, in any of its encodings. The servers are the ones the
// credentials belong to (named by the environment, or by the base), not
// the trap: a case's setup starts its server and puts its address in
// the case's environment, which the harness reads after setup.

// canaryWord is the part of hostileCanary the harness looks for in every
// output, alone.
const canaryWord = "hostile-canary-5e1f"

func hostileMaskCases() []hostileCase {
	return []hostileCase{
		webhookCase("own secret: FERRY_SECRET webhook address echoed by a 404, diff --notify --format json --report-file",
			[]string{"--format", "json", "--report-file", "{{OUT}}/report.md"},
			func(t *testing.T, c *hostileRun, env map[string]string, url string) {
				env["FERRY_SECRET_HOOK_ADDRESS"] = url + "/services/T0A1B2C3D/B0E1F2G3H/xoxb-" + canaryWord + "-77aa?sig=" + canaryWord
			}),
		webhookCase("own secret: FERRY_SECRET webhook header echoed by a 404, diff --notify --format markdown",
			[]string{"--format", "markdown"},
			func(t *testing.T, c *hostileRun, env map[string]string, url string) {
				env["FERRY_SECRET_HOOK_ADDRESS"] = url + "/hooks/team"
				env["FERRY_SECRET_HOOK_HEADERS"] = "X-Api-Key: key-" + canaryWord
			}),
		webhookCase("own secret: decrypted webhook address whose path a 404 echoes, diff --notify",
			nil,
			func(t *testing.T, c *hostileRun, env map[string]string, url string) {
				c.encrypt(t, "app/hook.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: hook, namespace: flux-system}\nstringData:\n  address: "+
					url+"/services/T0A1B2C3D/"+canaryWord+"-0b1c\n", "^(data|stringData)$")
				c.write(t, "app/kustomization.yaml", "resources: [deployment.yaml, secret.yaml, hook.yaml]\n")
			}),
		chartCase("own secret: FERRY_REGISTRY password echoed in a chart repository's status line", false,
			func(t *testing.T, c *hostileRun, env map[string]string, host string) {
				name, ok := images.RegistryEnv(host)
				if !ok {
					t.Fatalf("no variable stands for %s", host)
				}
				env[name+"_USERNAME"] = "ci-bot"
				env[name+"_PASSWORD"] = "pw-" + canaryWord
			}),
		chartCase("own secret: Docker config password echoed in a chart repository's status line", false,
			func(t *testing.T, c *hostileRun, env map[string]string, host string) {
				auths, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"username": "ci-bot", "password": "pw-" + canaryWord}}})
				dir := filepath.Join(c.dir, "docker")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "config.json"), auths, 0o600); err != nil {
					t.Fatal(err)
				}
				env["DOCKER_CONFIG"] = dir
			}),
		chartCase("own secret: FERRY_SECRET credentials of a chart source's secretRef echoed in its status line", true,
			func(t *testing.T, c *hostileRun, env map[string]string, host string) {
				env["FERRY_SECRET_CREDS_USERNAME"] = "ci-bot"
				env["FERRY_SECRET_CREDS_PASSWORD"] = "pw-" + canaryWord
			}),
		chartCase("own secret: decrypted password of a chart source's secretRef echoed in its status line", true,
			func(t *testing.T, c *hostileRun, env map[string]string, host string) {
				c.encrypt(t, "app/creds.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: apps}\nstringData:\n  username: ci-bot\n  password: pw-"+
					canaryWord+"\n", "^(data|stringData)$")
				c.write(t, "app/kustomization.yaml", "resources: [deployment.yaml, secret.yaml, release.yaml, creds.yaml]\n")
			}),
	}
}

// webhookCase diffs a change of the corpus repo with --notify and
// extraArgs: a generic Provider (ferry.yaml, base and head alike) whose
// address and headers come from the Secret hook, which secret puts in
// the environment (FERRY_SECRET_HOOK_*) or the repo. The webhook answers
// 404 with the path, query and key it was sent; the run succeeds (a
// notification that is not delivered is a warning). Neither that warning
// nor the event posted holds the secret.
func webhookCase(name string, extraArgs []string, secret func(t *testing.T, c *hostileRun, env map[string]string, url string)) hostileCase {
	env := map[string]string{}
	return hostileCase{name: name, class: "mask", succeeds: true, env: env,
		args: append([]string{"diff", "--repo", "{{REPO}}", "--base", "HEAD~1", "--notify"}, extraArgs...),
		want: []string{"warning: notification", "Provider/flux-system/hook", "404 Not Found: Cannot POST ***"},
		setup: func(t *testing.T, c *hostileRun) {
			hook := newEchoServer(t)
			t.Cleanup(func() {
				posted := hook.bodies()
				if len(posted) == 0 {
					t.Error("no notification was posted")
				}
				for _, b := range posted {
					if strings.Contains(b, canaryWord) {
						t.Errorf("a notification holds the secret:\n%s", b)
					}
				}
			})
			if err := os.MkdirAll(c.out, 0o755); err != nil {
				t.Fatal(err)
			}
			c.write(t, "ferry.yaml", `targets:
  - name: app
    path: app
notifications:
  providers: [{name: hook, namespace: flux-system, type: generic, secretRef: {name: hook}}]
  alerts: [{name: all, namespace: flux-system, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: "*"}]}]
`)
			secret(t, c, env, hook.URL)
			repo := gittest.Init(t, c.repo)
			repo.Commit(t, "base")
			c.write(t, "app/deployment.yaml", strings.Replace(c.read(t, "app/deployment.yaml"), "nginx:1.27", "nginx:1.28", 1))
			repo.Commit(t, "head")
		}}
}

// chartCase renders a HelmRelease whose chart repository answers 401
// with the basic credentials it was sent in its status line; secret
// gives the credentials: the repository host's, or (secretRef) those of
// the Secret creds its HelmRepository names. The render fails naming
// the release and the refusal, without the password.
func chartCase(name string, secretRef bool, secret func(t *testing.T, c *hostileRun, env map[string]string, host string)) hostileCase {
	env := map[string]string{}
	ref := ""
	if secretRef {
		ref = ", secretRef: {name: creds}"
	}
	return hostileCase{name: name, class: "mask", env: env,
		want: []string{"HelmRelease/apps/web", "refused the credentials", "answered 401 Unauthorized: ", "***"},
		setup: func(t *testing.T, c *hostileRun) {
			charts := newEchoServer(t)
			c.write(t, "app/release.yaml", `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {interval: 10m, url: "`+charts.URL+`/charts"`+ref+`}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: web, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
`)
			c.write(t, "app/kustomization.yaml", "resources: [deployment.yaml, secret.yaml, release.yaml]\n")
			secret(t, c, env, strings.TrimPrefix(charts.URL, "http://"))
		}}
}
