package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/diff"
	"github.com/ferry-ci/ferry/internal/drift"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/release"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// TestEveryCommandMasksEveryOutput walks every command in every output
// format its result offers (output.Result's Formats), as an Actions step
// writing a step summary and outputs, with two secrets on their way out:
//
//   - a decrypted value: a SOPS Secret's, copied into a ConfigMap (as
//     kustomize replacements copy it), which the pull request changes and
//     someone then changes in the cluster, so that diff and drift have
//     every reason to quote it;
//   - a secret input: a webhook's address (FERRY_SECRET_HOOK_ADDRESS),
//     whose server answers every notification with its path.
//
// Neither may be in any stream, step summary, step output or notification
// body, in any encoding; the decrypted value may be in render's manifests
// only, by design. Each path the secrets take is shown to be taken: the
// masked forms are in the outputs.
func TestEveryCommandMasksEveryOutput(t *testing.T) {
	echo := newEchoServer(t)
	key := secretstest.NewKey(t)
	canary := "walk-canary-decrypted-91c4"
	hookPath := "/services/T0WALK/B0WALK/walkHookSecret7d2e"
	hookAddr := echo.URL + hookPath
	ns := cp.Namespace(t)
	invNS := cp.Namespace(t)

	r := newScenario(t)
	r.write("ferry.yaml", `targets:
  - {name: app, path: app}
notifications:
  providers:
    - {name: hook, type: generic, secretRef: {name: hook}}
  alerts:
    - {name: hook, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: "*"}]}
`)
	r.write("app/kustomization.yaml", "namespace: "+ns+"\nresources: [secret.yaml, settings.yaml]\n")
	r.write("app/secret.yaml", string(secretstest.Encrypt(t, "secret.yaml",
		[]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: "+canary+"}\n"), "^(data|stringData)$", key.Recipient)))
	r.write("app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {copied: "+canary+", level: info}\n")
	base := r.commit("base")
	r.replace("app/settings.yaml", "copied: "+canary, "copied: rotated-by-the-pull-request")
	head := r.commit("head")
	// The work tree, which render, apply and drift read, is the base's.
	r.replace("app/settings.yaml", "copied: rotated-by-the-pull-request", "copied: "+canary)

	vars := map[string]string{
		"SOPS_AGE_KEY":              key.Identity,
		"TEST_KUBECONFIG":           string(cp.Require(t).Kubeconfig()),
		"FERRY_SECRET_HOOK_ADDRESS": hookAddr,
		"GITHUB_ACTIONS":            "true",
		"GITHUB_REPOSITORY":         "acme/fleet",
		"GITHUB_SERVER_URL":         "https://github.com",
	}
	cluster := []string{"--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS}
	revs := []string{"--repo", r.dir, "--base", base, "--head", head}

	type run struct {
		name string
		args []string
		// manifests: stdout is render's manifests, which show decrypted
		// values by design (the secret input still may not be there).
		manifests bool
	}
	var runs []run
	each := func(name string, formats []output.Format, args ...string) {
		for _, f := range formats {
			runs = append(runs, run{name: name + " --format " + string(f), args: append(append([]string{}, args...), "--format", string(f))})
		}
	}
	runs = append(runs, run{name: "render", args: []string{"render", "--repo", r.dir}, manifests: true})
	each("render --list", (&config.Listing{}).Formats(), "render", "--list", "--repo", r.dir)
	each("version", release.Info{}.Formats(), "version")
	each("diff", (&diff.Report{}).Formats(), append([]string{"diff", "--notify"}, revs...)...)
	runs = append(runs, run{name: "plan", args: append([]string{"plan"}, revs...)})
	runs = append(runs, run{name: "bump --dry-run", args: []string{"bump", "--dry-run", "--repo", r.dir}})
	each("apply --dry-run", kube.ChangeSets{}.Formats(), append([]string{"apply", "--dry-run", "--revision", base}, cluster...)...)
	runs = append(runs, run{name: "apply", args: append([]string{"apply", "--revision", base}, cluster...)})

	outputs := map[string]string{}
	for _, rn := range runs {
		res := walkRun(t, vars, rn.args)
		if res.code != 0 && res.code != exitDifferences {
			t.Errorf("%s: exit %d:\n%s", rn.name, res.code, res.stderr)
		}
		for part, out := range res.outputs {
			if rn.manifests && part == "stdout" {
				if leaks := secretstest.Leaks(out, hookPath); len(leaks) > 0 {
					t.Errorf("%s: render's manifests hold the secret input as %v", rn.name, leaks)
				}
				continue
			}
			outputs[rn.name+": "+part] = out
		}
	}

	// Someone changes the copied value in the cluster: drift quotes it.
	kubectl(t, nil, "-n", ns, "patch", "configmap/settings", "--type=merge", "-p", `{"data":{"copied":"changed-in-the-cluster"}}`)
	for _, f := range (drift.Reports{}).Formats() {
		name := "drift --format " + string(f)
		res := walkRun(t, vars, append([]string{"drift", "--revision", base, "--format", string(f)}, cluster...))
		if res.code != 0 {
			t.Errorf("%s: exit %d:\n%s", name, res.code, res.stderr)
		}
		for part, out := range res.outputs {
			outputs[name+": "+part] = out
		}
	}
	for i, b := range echo.bodies() {
		outputs[fmt.Sprintf("notification %d", i)] = b
	}

	// The paths were taken: diff and drift quoted the value, masked, and
	// ferry reported the webhook's answer, masked.
	for _, want := range []struct{ output, text string }{
		{"diff --format text: stdout", "copied: '***'"},
		{"diff --format markdown: summary", "***"},
		{"drift --format json: stdout", "***"},
		{"diff --format text: stderr", "Cannot POST ***"},
		{"apply: stderr", "Cannot POST ***"},
	} {
		if !strings.Contains(outputs[want.output], want.text) {
			t.Errorf("%s does not show %q:\n%s", want.output, want.text, outputs[want.output])
		}
	}
	if len(echo.bodies()) == 0 {
		t.Error("no notification reached the webhook")
	}
	for name, out := range outputs {
		for _, v := range []string{canary, hookPath, hookAddr} {
			if leaks := secretstest.Leaks(out, v); len(leaks) > 0 {
				t.Errorf("%s holds %q as %v:\n%s", name, v, leaks, out)
			}
		}
	}
}

// walkResult is what one run of the walk wrote: its streams, step summary
// and step outputs.
type walkResult struct {
	code    int
	stderr  string
	outputs map[string]string
}

func walkRun(t *testing.T, vars map[string]string, args []string) walkResult {
	t.Helper()
	dir := t.TempDir()
	summary, outputFile := filepath.Join(dir, "summary"), filepath.Join(dir, "output")
	v := map[string]string{"GITHUB_STEP_SUMMARY": summary, "GITHUB_OUTPUT": outputFile}
	for k, val := range vars {
		v[k] = val
	}
	res := ferry(t, v, args...)
	out := walkResult{code: res.code, stderr: res.stderr, outputs: map[string]string{"stdout": withoutMasks(res.stdout), "stderr": res.stderr}}
	for name, path := range map[string]string{"summary": summary, "output": outputFile} {
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out.outputs[name] = string(b)
	}
	return out
}
