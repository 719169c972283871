package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/actions/actionstest"
	"github.com/ferry-ci/ferry/internal/secrets"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// exampleRecipient is the public half of examples/age-test-key.txt.
const exampleRecipient = "age15cx5zv5kx8m0l760pzg644gjzl36aux7pv5433sjjtzwy8weyq4s9jempy"

// newPRRepo is the base of a pull request on examples/<example>
// (exampleScenario): setup, when not nil, edits it, then it is
// committed. It returns the base commit.
func newPRRepo(t *testing.T, example string, setup func(p *scenario)) (*scenario, string) {
	t.Helper()
	return prBase(exampleScenario(t, example), setup)
}

// newPRRepoOf is newPRRepo of a copy of any folder (copyScenario), its
// SOPS files for the examples' key.
func newPRRepoOf(t *testing.T, src string, setup func(p *scenario)) (*scenario, string) {
	t.Helper()
	return prBase(copyScenario(t, src).withExampleKey(), setup)
}

func prBase(p *scenario, setup func(p *scenario)) (*scenario, string) {
	p.t.Helper()
	if setup != nil {
		setup(p)
	}
	return p, p.commit("base")
}

// exampleKeyText is the examples' throwaway age identity.
func exampleKeyText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "age-test-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rotate decrypts an encrypted file of the repository with the example
// key, replaces one value and encrypts it again for the example recipient.
// It returns the old and new plaintext values.
func (p *scenario) rotate(t *testing.T, rel, key, newValue string) (string, string) {
	t.Helper()
	ids, err := secrets.ParseIdentities(exampleKeyText(t))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := secrets.NewDecryptor(ids).Decrypt(rel, []byte(p.read(rel)))
	if err != nil {
		t.Fatal(err)
	}
	var old string
	var out []string
	for _, l := range strings.Split(string(plain), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key+":") {
			i := strings.Index(l, key+":")
			old = strings.TrimSpace(l[i+len(key)+1:])
			l = l[:i] + key + ": " + newValue
		}
		out = append(out, l)
	}
	if old == "" {
		t.Fatalf("%s has no key %q", rel, key)
	}
	p.write(rel, string(secretstest.Encrypt(t, rel, []byte(strings.Join(out, "\n")), "^(data|stringData)$", exampleRecipient)))
	return old, newValue
}

// diffCase is a pull request on an example.
type diffCase struct {
	name    string
	example string
	setup   func(t *testing.T, p *scenario) // before the base commit
	change  func(t *testing.T, p *scenario) // the pull request
	noKey   bool
	// secrets are plaintext values no output may contain.
	secrets func() []string
}

func diffCases() []diffCase {
	var oldToken, newToken string
	return []diffCase{
		{
			name: "image-tag", example: "fleet",
			change: func(t *testing.T, p *scenario) {
				p.write("apps/staging/kustomization.yaml", p.read("apps/staging/kustomization.yaml")+
					"images:\n  - name: ghcr.io/stefanprodan/podinfo\n    newTag: 6.7.1\n")
			},
		},
		{
			name: "shared-base", example: "single-app",
			change: func(t *testing.T, p *scenario) {
				p.replace("shop/base/deployment.yaml", "image: registry.example.com/shop/web:2.4.0", "image: registry.example.com/shop/web:2.5.0")
			},
		},
		{
			name: "add-remove", example: "single-app",
			setup: func(t *testing.T, p *scenario) {
				p.replace("ferry.yaml", "path: shop/overlays/staging", "path: shop/overlays/staging\n    prune: true")
			},
			change: func(t *testing.T, p *scenario) {
				p.write("shop/overlays/staging/feature-flags.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: feature-flags\ndata:\n  checkout: v2\n")
				p.replace("shop/overlays/staging/kustomization.yaml", "  - namespace.yaml\n", "  - feature-flags.yaml\n")
			},
		},
		{
			name: "rotate-secret", example: "single-app",
			change: func(t *testing.T, p *scenario) {
				oldToken, newToken = p.rotate(t, "shop/overlays/production/api-token-secret.yaml", "token", "rotated-token-value-7f3c9")
			},
			secrets: func() []string { return []string{oldToken, newToken} },
		},
		{
			name: "rotate-secret-no-key", example: "single-app", noKey: true,
			change: func(t *testing.T, p *scenario) {
				oldToken, newToken = p.rotate(t, "shop/overlays/production/api-token-secret.yaml", "token", "rotated-token-value-5d1e2")
			},
			secrets: func() []string { return []string{oldToken, newToken} },
		},
		{
			name: "no-render-change", example: "single-app",
			change: func(t *testing.T, p *scenario) {
				p.write("shop/base/service.yaml", "# the shop's web service\n"+p.read("shop/base/service.yaml"))
				p.write("README.md", "notes\n")
			},
		},
	}
}

// pullRequest makes sc's pull request: its repository, base and head
// commits, and the variables of a run (the examples' key unless noKey).
func (sc diffCase) pullRequest(t *testing.T) (*scenario, string, string, map[string]string) {
	t.Helper()
	p, base := newPRRepo(t, sc.example, func(p *scenario) {
		if sc.setup != nil {
			sc.setup(t, p)
		}
	})
	sc.change(t, p)
	head := p.commit("pull request")
	vars := map[string]string{}
	if !sc.noKey {
		vars["SOPS_AGE_KEY"] = exampleKeyText(t)
	}
	return p, base, head, vars
}

// TestDiffScenarios runs ferry diff over pull requests on the examples and
// compares the three formats with reviewed golden files.
func TestDiffScenarios(t *testing.T) {
	for _, sc := range diffCases() {
		t.Run(sc.name, func(t *testing.T) {
			p, base, head, vars := sc.pullRequest(t)
			var outputs []string
			for _, format := range []string{"text", "json", "markdown"} {
				res := ferry(t, vars, "diff", "--repo", p.dir, "--base", base, "--head", head, "--format", format)
				if res.code != 0 {
					t.Fatalf("%s: exit %d, stderr:\n%s", format, res.code, res.stderr)
				}
				got := strings.NewReplacer(base, "BASE", head, "HEAD", base[:12], "BASE", head[:12], "HEAD").Replace(res.stdout)
				golden(t, filepath.Join("diff", sc.name+"."+format+".golden"), []byte(got))
				outputs = append(outputs, res.stdout, res.stderr)
			}
			if sc.secrets != nil {
				for _, s := range sc.secrets() {
					for _, out := range outputs {
						if strings.Contains(out, s) {
							t.Fatalf("a secret value reached the output")
						}
					}
				}
			}
		})
	}
}

// TestDiffWithKeptBuilds: a diff whose builds come from --cache-dir (a
// later run: render.BuildCache) reports byte for byte what it reports
// with no cache, in every scenario; so does a render. A build that read
// an encrypted file is never kept.
func TestDiffWithKeptBuilds(t *testing.T) {
	for _, sc := range diffCases() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			p, base, head, vars := sc.pullRequest(t)
			cache := t.TempDir()
			for _, args := range [][]string{
				{"diff", "--repo", p.dir, "--base", base, "--head", head, "--format", "json"},
				{"render", "--repo", p.dir},
			} {
				want := ferry(t, vars, args...)
				if want.code != 0 && !(sc.noKey && args[0] == "render") { // render needs the key
					t.Fatalf("%s: exit %d, stderr:\n%s", args[0], want.code, want.stderr)
				}
				for _, run := range []string{"first", "later"} {
					got := ferry(t, vars, append(args, "--cache-dir", cache)...)
					if got.code != want.code || got.stdout != want.stdout || got.stderr != want.stderr {
						t.Fatalf("%s, %s run with a cache: exit %d, output differs from a run without one:\n%s\n%s", args[0], run, got.code, got.stdout, got.stderr)
					}
				}
			}
			// Every target of single-app reads a SOPS file: none is kept.
			entries, _ := os.ReadDir(filepath.Join(cache, "builds"))
			if kept := len(entries) > 0; kept != (sc.example == "fleet") {
				t.Errorf("%d builds kept in --cache-dir of %s", len(entries), sc.example)
			}
		})
	}
}

// TestDiffExitCodeAndPlan checks --exit-code and that plan lists exactly
// the targets a change reaches.
func TestDiffExitCodeAndPlan(t *testing.T) {
	p, base := newPRRepo(t, "single-app", nil)
	p.replace("shop/overlays/staging/replicas-patch.yaml", "replicas: ", "replicas: 1")
	one := p.commit("staging only")
	p.replace("shop/base/service.yaml", "port: 80", "port: 8080")
	both := p.commit("shared base")
	p.write("docs.md", "nothing rendered\n")
	none := p.commit("docs only")

	plan := func(b, h string) []string {
		t.Helper()
		res := ferry(t, nil, "plan", "--repo", p.dir, "--base", b, "--head", h)
		if res.code != 0 {
			t.Fatalf("plan: exit %d: %s", res.code, res.stderr)
		}
		var out struct {
			Include []struct {
				Target string `json:"target"`
			} `json:"include"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("plan output is not JSON: %v\n%s", err, res.stdout)
		}
		var names []string
		for _, i := range out.Include {
			names = append(names, i.Target)
		}
		return names
	}
	for _, c := range []struct {
		name       string
		base, head string
		want       string
	}{
		{"one overlay", base, one, "staging"},
		{"shared base", one, both, "production,staging"},
		{"nothing rendered", both, none, ""},
	} {
		if got := strings.Join(plan(c.base, c.head), ","); got != c.want {
			t.Errorf("%s: plan lists %q, want %q", c.name, got, c.want)
		}
	}

	// In a deploy job on push: base and head from the event, the matrix
	// and the target names as step outputs.
	dir := t.TempDir()
	event, output := filepath.Join(dir, "push.json"), filepath.Join(dir, "output")
	if err := os.WriteFile(event, []byte(`{"ref": "refs/heads/main", "before": "`+one+`", "after": "`+both+`", "repository": {"full_name": "acme/gitops"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := ferry(t, map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": event,
		"GITHUB_OUTPUT": output, "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary")}, "plan", "--repo", p.dir)
	if res.code != 0 {
		t.Fatalf("plan on push: exit %d: %s", res.code, res.stderr)
	}
	outs := actionstest.Outputs(t, output)
	if outs["matrix"] != strings.TrimSpace(res.stdout) || !strings.Contains(outs["matrix"], `"target":"production"`) || outs["targets"] != `["production","staging"]` {
		t.Errorf("plan step outputs matrix=%q targets=%q (stdout %q)", outs["matrix"], outs["targets"], res.stdout)
	}

	if res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", one, "--exit-code"); res.code != 1 {
		t.Errorf("--exit-code with differences: exit %d, want 1 (stderr %s)", res.code, res.stderr)
	}
	if res := ferry(t, nil, "diff", "--repo", p.dir, "--base", both, "--head", none, "--exit-code"); res.code != 0 || !strings.Contains(res.stdout, "no differences") {
		t.Errorf("--exit-code without differences: exit %d, stdout %q", res.code, res.stdout)
	}
}

// TestDiffBadInputs: each exits 2 with an error that says what is wrong.
func TestDiffBadInputs(t *testing.T) {
	p, base := newPRRepo(t, "single-app", nil)
	p.replace("shop/overlays/staging/kustomization.yaml", "  - path: hpa-patch.yaml\n", "  - path: hpa-patch.yaml\n  - path: missing-patch.yaml\n")
	p.replace("shop/overlays/production/replicas-patch.yaml", "replicas: ", "replicas: 1")
	head := p.commit("breaks staging")

	t.Run("unknown base", func(t *testing.T) {
		res := ferry(t, nil, "diff", "--repo", p.dir, "--base", "no-such-branch")
		if res.code != 2 || !strings.Contains(res.stderr, `"no-such-branch"`) {
			t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("one side fails to render", func(t *testing.T) {
		res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", head)
		if res.code != 2 {
			t.Fatalf("exit %d, want 2", res.code)
		}
		if !strings.Contains(res.stdout, "fails to render at head") || !strings.Contains(res.stdout, "missing-patch.yaml") {
			t.Errorf("the report does not say which side failed and why:\n%s", res.stdout)
		}
		if !strings.Contains(res.stdout, "Deployment.apps/shop-production/shop (changed)") {
			t.Errorf("the other target was not diffed:\n%s", res.stdout)
		}
		if !strings.Contains(res.stderr, "staging (render failed at head)") {
			t.Errorf("stderr does not name the failed target: %q", res.stderr)
		}
	})
	t.Run("base missing from a shallow clone", func(t *testing.T) {
		gitBin, err := exec.LookPath("git")
		if err != nil {
			t.Fatal("git is needed to make a shallow clone")
		}
		shallow := filepath.Join(t.TempDir(), "shallow")
		out, err := exec.Command(gitBin, "clone", "-q", "--depth", "1", "file://"+p.dir, shallow).CombinedOutput()
		if err != nil {
			t.Fatalf("git clone --depth 1: %v\n%s", err, out)
		}
		res := ferry(t, nil, "diff", "--repo", shallow, "--base", base)
		if res.code != 2 || !strings.Contains(res.stderr, "fetch-depth: 0") || !strings.Contains(res.stderr, base) {
			t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
		}

		// With a token, ferry fetches the base commit (the server must
		// serve commits by hash, as GitHub and Gitea do).
		if out, err := exec.Command(gitBin, "-C", p.dir, "config", "uploadpack.allowReachableSHA1InWant", "true").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		res = ferry(t, map[string]string{"GITHUB_TOKEN": "test-token"}, "diff", "--repo", shallow, "--base", base, "--head", "HEAD", "production")
		if res.code != 0 || !strings.Contains(res.stdout, "target production") {
			t.Fatalf("with a token: exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
		}
	})
	t.Run("bad format", func(t *testing.T) {
		res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--format", "yaml")
		if res.code != 2 || !strings.Contains(res.stderr, "--format") {
			t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
		}
	})
}

// TestPlanWithoutBase: with nothing to compare with, plan lists every
// target of the work tree in dependency order (here none: by name): --all, or an Actions event
// without a base (the push that created the branch, workflow_dispatch).
// Outside Actions a missing --base is still an error, and --all takes no
// revisions.
func TestPlanWithoutBase(t *testing.T) {
	p, _ := newPRRepo(t, "single-app", nil)
	dir := t.TempDir()
	planIn := func(event, payload string, args ...string) (result, map[string]string) {
		t.Helper()
		path, output := filepath.Join(dir, event+".json"), filepath.Join(dir, event+".output")
		if err := os.WriteFile(path, []byte(payload), 0o644); err != nil {
			t.Fatal(err)
		}
		res := ferry(t, map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": path,
			"GITHUB_OUTPUT": output, "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary")}, append([]string{"plan", "--repo", p.dir}, args...)...)
		if res.code != 0 {
			t.Fatalf("plan on %s: exit %d: %s", event, res.code, res.stderr)
		}
		return res, actionstest.Outputs(t, output)
	}
	zero := strings.Repeat("0", 40)
	res, outs := planIn("push", `{"ref": "refs/heads/main", "before": "`+zero+`", "after": "`+p.repo().Tip(t, "main").Hash+`", "repository": {"full_name": "acme/gitops"}}`)
	if outs["targets"] != `["production","staging"]` {
		t.Errorf("plan of a push that created main: targets %s, want every target", outs["targets"])
	}
	if !strings.Contains(res.stdout, `"why":"no base revision: the push created refs/heads/main"`) {
		t.Errorf("plan does not say why every target: %s", res.stdout)
	}
	if outs["clusters"] != `{"include":[{"cluster":"","targets":"production,staging"}]}` {
		t.Errorf("clusters %s", outs["clusters"])
	}
	res, outs = planIn("workflow_dispatch", `{"inputs": {}, "ref": "refs/heads/main", "repository": {"full_name": "acme/gitops"}}`, "production")
	if outs["targets"] != `["production"]` || !strings.Contains(res.stdout, "workflow_dispatch event") {
		t.Errorf("plan production on workflow_dispatch: targets %s, stdout %s", outs["targets"], res.stdout)
	}

	if res := ferry(t, nil, "plan", "--repo", p.dir, "--all"); res.code != 0 || !strings.Contains(res.stdout, `"target":"production","why":"every target (--all)"`) {
		t.Errorf("plan --all: exit %d, stdout %s, stderr %s", res.code, res.stdout, res.stderr)
	}
	if res := ferry(t, nil, "plan", "--repo", p.dir); res.code != 2 || !strings.Contains(res.stderr, "--base is required outside Actions (or --all") {
		t.Errorf("plan without --base outside Actions: exit %d, stderr %s", res.code, res.stderr)
	}
	if res := ferry(t, nil, "plan", "--repo", p.dir, "--all", "--base", "main"); res.code != 2 || !strings.Contains(res.stderr, "--all lists the work tree's targets") {
		t.Errorf("plan --all --base: exit %d, stderr %s", res.code, res.stderr)
	}
}
