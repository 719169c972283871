package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// echoServer answers every request by echoing the secrets it was sent,
// as careless servers do: a webhook POST gets 404 "Cannot POST <path and
// query>" with the API key header it carried; a chart index request gets
// 401 with the basic credentials it carried in the status line. It
// records the bodies posted to it (the events ferry sends).
type echoServer struct {
	*httptest.Server
	mu     sync.Mutex
	posted []string
}

func newEchoServer(t *testing.T) *echoServer {
	s := &echoServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/charts/") {
			user, pass, _ := r.BasicAuth()
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(buf, "HTTP/1.1 401 Unauthorized: %s:%s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", user, pass)
			_ = buf.Flush()
			return
		}
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.posted = append(s.posted, string(b))
		s.mu.Unlock()
		http.Error(w, "Cannot POST "+r.URL.RequestURI()+" with key "+r.Header.Get("X-Api-Key"), http.StatusNotFound)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *echoServer) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posted...)
}

// TestOwnSecretsInNoOutput: ferry's own secrets (the token input, a
// webhook address and header from FERRY_SECRET_*, a chart registry's
// password from FERRY_REGISTRY_*) and the parts of the address, which the
// servers echo back in their errors, are in no stream, step summary or
// output, report file, pull-request comment, commit status or
// notification, in any encoding, in every report format of ferry diff.
func TestOwnSecretsInNoOutput(t *testing.T) {
	echo := newEchoServer(t)
	gh := githubtest.New(t)
	token := gh.AddUser("github-actions[bot]")
	gh.AddRepo("acme", "gitops")
	n := gh.AddPullRequest("acme", "gitops", "octocat", "change", "main", "Change", "")

	hookToken := "xoxbHookSecret0123456789abcdef"
	hookPath := "/services/T0A1B2C3D/B0E1F2G3H/" + hookToken
	hookAddr := echo.URL + hookPath + "?sig=Q2FuYXJ5U2lnbmF0dXJl"
	apiKey, regUser, regPassword := "k3y-of-the-hook-4567", "ci-bot", "reg-pa55word-89ab"
	host := strings.TrimPrefix(echo.URL, "http://")
	secretValues := []string{token, hookAddr, hookPath, hookToken, "T0A1B2C3D", "B0E1F2G3H", "sig=Q2FuYXJ5U2lnbmF0dXJl", "Q2FuYXJ5U2lnbmF0dXJl", apiKey, regPassword}

	r := newScenario(t)
	r.write("ferry.yaml", `targets:
  - {name: app, path: app}
  - {name: web, path: web}
notifications:
  providers:
    - {name: hook, type: generic, secretRef: {name: hook}}
    - {name: statuses, type: github, address: "`+strings.TrimSuffix(gh.URL, "/")+`/acme/gitops", secretRef: {name: gh}}
  alerts:
    - {name: hook, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: "*"}]}
    - {name: statuses, providerRef: {name: statuses}, eventSources: [{kind: Kustomization, name: "*"}]}
`)
	r.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: apps}\ndata: {k: base}\n")
	r.write("web/release.yaml", `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {interval: 10m, url: "`+echo.URL+`/charts"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: web, version: "1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
`)
	base := r.commit("base")
	r.write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: apps}\ndata: {k: head}\n")
	// The change touches web too: a target it does not touch is not
	// rendered, and web must fail with the registry's answer.
	r.replace("web/release.yaml", "spec:\n  interval: 10m\n  chart:", "spec:\n  interval: 11m\n  chart:")
	head := r.commit("head")

	for _, format := range []string{"json", "markdown", "text"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			summary, output, report := filepath.Join(dir, "summary"), filepath.Join(dir, "output"), filepath.Join(dir, "report.md")
			regEnv, ok := images.RegistryEnv(host)
			if !ok {
				t.Fatalf("no variable stands for %s", host)
			}
			vars := map[string]string{
				"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REPOSITORY": "acme/gitops",
				"GITHUB_EVENT_PATH":   pullRequestEvent(t, "github-pull_request.json", n, base, head),
				"GITHUB_SERVER_URL":   "https://github.com",
				"GITHUB_API_URL":      gh.URL,
				"INPUT_TOKEN":         token,
				"GITHUB_STEP_SUMMARY": summary, "GITHUB_OUTPUT": output,
				"FERRY_SECRET_HOOK_ADDRESS": hookAddr,
				"FERRY_SECRET_HOOK_HEADERS": "X-Api-Key: " + apiKey,
				"FERRY_SECRET_GH_TOKEN":     token,
				regEnv + "_USERNAME":        regUser,
				regEnv + "_PASSWORD":        regPassword,
				regEnv + "_UNUSED_TOKEN":    "not a secret by its name",
			}
			res := ferry(t, vars, "diff", "--repo", r.dir, "--comment", "--notify", "--format", format, "--report-file", report)
			if res.code != exitError {
				t.Errorf("exit %d, want %d (target web does not render)", res.code, exitError)
			}
			// The servers did answer with the secrets, and ferry said so.
			for _, want := range []string{"Provider/flux-system/hook", "404 Not Found: Cannot POST ***"} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
				}
			}
			outputs := map[string]string{"stdout": withoutMasks(res.stdout), "stderr": res.stderr}
			for name, path := range map[string]string{"summary": summary, "output": output, "report file": report} {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				outputs[name] = string(b)
			}
			for i, req := range gh.Writes() {
				outputs[fmt.Sprintf("forge request %d (%s %s)", i, req.Method, req.Path)] = req.Body
			}
			for i, b := range echo.bodies() {
				outputs[fmt.Sprintf("notification %d", i)] = b
			}
			// Of all runs so far: the first one posts the comment and the
			// statuses, later ones find them unchanged.
			if len(gh.Writes()) < 3 || len(echo.bodies()) < 2 {
				t.Errorf("%d forge writes and %d notifications, want a comment and two statuses, and an event per target", len(gh.Writes()), len(echo.bodies()))
			}
			for _, name := range []string{"stdout", "report file", "summary"} {
				if !strings.Contains(outputs[name], "401 Unauthorized: ci-bot:***") {
					t.Errorf("the %s does not show the chart repository's answer, masked:\n%s", name, outputs[name])
				}
			}
			for name, out := range outputs {
				for _, v := range secretValues {
					if leaks := secretstest.Leaks(out, v); len(leaks) > 0 {
						t.Errorf("%s holds %q as %v:\n%s", name, v, leaks, out)
					}
				}
			}
		})
	}
}

// TestOwnSecretsLearnedAtStart: which variables ferry hides before it
// prints anything.
func TestOwnSecretsLearnedAtStart(t *testing.T) {
	vars := map[string]string{
		"INPUT_TOKEN":                        "input-token-value",
		"GITHUB_TOKEN":                       "github-token-value",
		"GITEA_TOKEN":                        "gitea-token-value",
		"FERRY_TOKEN":                        "ferry-token-value",
		"ACTIONS_RUNTIME_TOKEN":              "runtime-token-value",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN":     "id-token-value",
		"SOPS_AGE_KEY":                       "# public key: age1public\nAGE-SECRET-KEY-1SECRETVALUE",
		"FERRY_SECRET_HOOK_ADDRESS":          "https://hooks.example.com/services/T0A1B2C3D/tokenvalue0123456789",
		"FERRY_SECRET_CHARTS_PASSWORD":       "charts-password-value",
		"FERRY_SECRET_CHARTS_USERNAME":       "charts-username-value",
		"FERRY_REGISTRY_GHCR_IO_PASSWORD":    "registry-password-value",
		"FERRY_REGISTRY_GHCR_IO_USERNAME":    "registry-username-value",
		"FERRY_REGISTRY_GHCR_IO_INSECURE":    "not-a-secret-value",
		"DOCKER_CONFIG":                      dockerConfig(t, `{"auths": {"ghcr.io": {"auth": "dXNlcjpkb2NrZXItcGFzc3dvcmQ="}, "quay.io": {"identitytoken": "docker-identity-token"}}}`),
		"SOME_OTHER_VARIABLE":                "other-variable-value",
		"FERRY_SECRETLESS_LOOKALIKE":         "lookalike-value",
		"FERRY_SECRET_HOOK_ADDRESS_AND_MORE": "also-a-secret-value",
	}
	e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return vars[k] }, environ: func() []string { return environOf(vars) }}
	run(t.Context(), []string{"version"}, e)
	text := strings.Join([]string{
		"input-token-value github-token-value gitea-token-value ferry-token-value runtime-token-value id-token-value",
		"age1public AGE-SECRET-KEY-1SECRETVALUE /services/T0A1B2C3D/tokenvalue0123456789 T0A1B2C3D",
		"charts-password-value charts-username-value registry-password-value registry-username-value not-a-secret-value",
		"user:docker-password docker-password docker-identity-token",
		"other-variable-value lookalike-value also-a-secret-value",
	}, "\n")
	want := strings.Join([]string{
		"*** *** *** *** *** ***",
		"age1public *** *** ***",
		"*** charts-username-value *** registry-username-value not-a-secret-value",
		"*** *** ***",
		"other-variable-value lookalike-value ***",
	}, "\n")
	if got := e.Masker.Mask(text); got != want {
		t.Errorf("masked:\n%s\nwant:\n%s", got, want)
	}
	// Render's manifests hide the same, and nothing decrypted.
	if got := e.Credentials.Mask(text); got != want {
		t.Errorf("credentials masked:\n%s\nwant:\n%s", got, want)
	}
}

// dockerConfig writes a Docker config.json holding content and returns
// its folder.
func dockerConfig(t *testing.T, content string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestForgeTokenEchoedInNoOutput: a forge that refuses the token and
// quotes it in its answer does not get it into ferry's error, its
// annotation, the step summary or outputs: in a step (the token input)
// and outside one (GITHUB_TOKEN).
func TestForgeTokenEchoedInNoOutput(t *testing.T) {
	const token = "ghs_EchoedToken0123456789abcdef"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"message": "Bad credentials: %s", "documentation_url": "https://docs.example.com"}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(api.Close)
	p, base := newPRRepo(t, "single-app", nil)
	p.replace("shop/base/deployment.yaml", "web:2.4.0", "web:2.5.0")
	head := p.commit("2.5.0")
	dir := t.TempDir()
	summary, output := filepath.Join(dir, "summary"), filepath.Join(dir, "output")
	for name, vars := range map[string]map[string]string{
		"step": {
			"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REPOSITORY": "acme/gitops",
			"GITHUB_EVENT_PATH": pullRequestEvent(t, "github-pull_request.json", 7, base, head),
			"GITHUB_API_URL":    api.URL + "/", "INPUT_TOKEN": token,
			"GITHUB_STEP_SUMMARY": summary, "GITHUB_OUTPUT": output,
		},
		"shell": {"GITHUB_API_URL": api.URL + "/", "GITHUB_REPOSITORY": "acme/gitops", "GITHUB_TOKEN": token},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"diff", "--repo", p.dir, "--base", base, "--head", head, "--comment", "--pr", "7", "--forge", "github"}
			res := ferry(t, vars, args...)
			if res.code != exitError || !strings.Contains(res.stderr, "Bad credentials: ") {
				t.Fatalf("exit %d, want %d and the forge's answer:\n%s", res.code, exitError, res.stderr)
			}
			outputs := map[string]string{"stdout": withoutMasks(res.stdout), "stderr": res.stderr}
			for name, path := range map[string]string{"summary": summary, "output": output} {
				b, _ := os.ReadFile(path)
				outputs[name] = string(b)
			}
			for name, out := range outputs {
				if leaks := secretstest.Leaks(out, token); len(leaks) > 0 {
					t.Errorf("%s holds the token as %v:\n%s", name, leaks, out)
				}
			}
		})
	}
}

// kubeEchoServer is an API server (HTTPS: client-go sends no token over
// HTTP) that refuses every request with 401,
// quoting the Authorization header it was sent.
func kubeEchoServer(t *testing.T) *httptest.Server {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		msg, _ := json.Marshal("Unauthorized: " + r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%s,"reason":"Unauthorized","code":401}`, msg)
	}))
	t.Cleanup(api.Close)
	return api
}

// TestKubeconfigTokenEchoedInNoOutput: the token of a kubeconfig, which
// an API server quotes when it refuses it, is in no output of apply,
// drift or diff --live, whether the kubeconfig is content in a variable
// or a file.
func TestKubeconfigTokenEchoedInNoOutput(t *testing.T) {
	const token = "kube-EchoedToken-0123456789abcdef"
	api := kubeEchoServer(t)
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + api.URL + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: "` + token + `"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	p, base := newPRRepo(t, "single-app", nil)
	p.replace("shop/base/deployment.yaml", "web:2.4.0", "web:2.5.0")
	head := p.commit("2.5.0")
	vars := map[string]string{"TEST_KUBECONFIG": kubeconfig, "SOPS_AGE_KEY": exampleKeyText(t)}
	for name, args := range map[string][]string{
		"apply, content":    {"apply", "--repo", p.dir, "--kubeconfig-env", "TEST_KUBECONFIG"},
		"apply, file":       {"apply", "--repo", p.dir, "--kubeconfig", file},
		"drift, content":    {"drift", "--repo", p.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--report", "none"},
		"diff --live, file": {"diff", "--repo", p.dir, "--base", base, "--head", head, "--live", "--kubeconfig", file, "--format", "json"},
		"diff --live, text": {"diff", "--repo", p.dir, "--base", base, "--head", head, "--live", "--kubeconfig-env", "TEST_KUBECONFIG"},
	} {
		t.Run(name, func(t *testing.T) {
			res := ferry(t, vars, args...)
			if res.code != exitError || !strings.Contains(res.stdout+res.stderr, "Bearer ***") {
				t.Fatalf("exit %d, want %d and the server's answer, masked:\nstdout: %s\nstderr: %s", res.code, exitError, res.stdout, res.stderr)
			}
			for name, out := range map[string]string{"stdout": res.stdout, "stderr": res.stderr} {
				if leaks := secretstest.Leaks(out, token); len(leaks) > 0 {
					t.Errorf("%s holds the token as %v:\n%s", name, leaks, out)
				}
			}
		})
	}
}

// TestRenderHidesOwnCredentialsOnly: render shows decrypted values (its
// purpose), but not ferry's own credentials: an object holding one is
// printed (and written with -o) with *** in its place, and named in a
// warning.
func TestRenderHidesOwnCredentialsOnly(t *testing.T) {
	const decrypted, password = "decrypted-value-shown-4a1b", "registry-password-hidden-9c2d"
	r := newScenario(t)
	r.write("ferry.yaml", "targets:\n  - name: app\n    path: app\n")
	r.write("app/kustomization.yaml", "resources: [pull.yaml, secret.yaml]\n")
	r.write("app/pull.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pull, namespace: apps}\ndata: {password: "+password+"}\n")
	r.encrypt("app/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: apps}\nstringData: {password: "+decrypted+"}\n", "^(data|stringData)$")
	vars := r.vars()
	vars["FERRY_REGISTRY_GHCR_IO_PASSWORD"] = password
	out := filepath.Join(t.TempDir(), "out")
	for name, args := range map[string][]string{"stdout": {"render", "--repo", r.dir}, "-o": {"render", "--repo", r.dir, "-o", out}} {
		t.Run(name, func(t *testing.T) {
			res := ferry(t, vars, args...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			shown := res.stdout
			if name == "-o" {
				cm, err := os.ReadFile(filepath.Join(out, "app", "configmap_apps_pull.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				secret, err := os.ReadFile(filepath.Join(out, "app", "secret_apps_db.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				shown = string(cm) + string(secret)
			}
			if !strings.Contains(shown, decrypted) || !strings.Contains(shown, "password: '***'") {
				t.Errorf("want the decrypted value shown and the credential as ***:\n%s", shown)
			}
			if leaks := secretstest.Leaks(shown+res.stderr, password); len(leaks) > 0 {
				t.Errorf("the output holds the credential as %v:\n%s", leaks, shown)
			}
			if !strings.Contains(res.stderr, `warning: target "app": ConfigMap/apps/pull holds a credential`) {
				t.Errorf("stderr does not name the object:\n%s", res.stderr)
			}
		})
	}
}
