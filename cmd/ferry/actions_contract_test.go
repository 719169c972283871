package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/actions/actionstest"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// eventsDir holds real event payloads, as GitHub and Gitea write them.
const eventsDir = "../../internal/actions/testdata/events"

// runnerVars is the environment a runner gives a container action: GitHub's
// or Gitea's variable set, the event, and files for outputs and summary.
type runnerVars struct {
	vars             map[string]string
	output, summary  string
	forge, eventName string
}

func newRunnerVars(t *testing.T, forge, event string) *runnerVars {
	t.Helper()
	dir := t.TempDir()
	rv := &runnerVars{
		forge: forge, eventName: strings.TrimSuffix(event, ".json"),
		output:  filepath.Join(dir, "set_output_a1b2"),
		summary: filepath.Join(dir, "step_summary_a1b2"),
	}
	for _, p := range []string{rv.output, rv.summary} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eventPath, err := filepath.Abs(filepath.Join(eventsDir, forge, event))
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "HOME": "/github/home",
		"GITHUB_ACTION": "__ferry-ci_ferry", "GITHUB_ACTOR": "octocat", "GITHUB_JOB": "ferry",
		"GITHUB_EVENT_NAME": rv.eventName, "GITHUB_EVENT_PATH": eventPath,
		"GITHUB_REPOSITORY": "acme/fleet", "GITHUB_REPOSITORY_OWNER": "acme",
		"GITHUB_RUN_ID": "4242", "GITHUB_RUN_NUMBER": "7", "GITHUB_RUN_ATTEMPT": "1",
		"GITHUB_REF": "refs/heads/main", "GITHUB_SHA": "9a1c0f5e3b7d2a4c6e8f0a1b3c5d7e9f1a2b3c4d",
		"GITHUB_WORKSPACE": "/github/workspace", "RUNNER_OS": "Linux", "RUNNER_TEMP": "/home/runner/work/_temp",
		"GITHUB_OUTPUT": rv.output, "GITHUB_STEP_SUMMARY": rv.summary,
	}
	switch forge {
	case "github":
		v["GITHUB_SERVER_URL"] = "https://github.com"
		v["GITHUB_API_URL"] = "https://api.github.com"
		v["GITHUB_GRAPHQL_URL"] = "https://api.github.com/graphql"
	case "gitea":
		v["GITEA_ACTIONS"] = "true"
		v["GITEA_ACTIONS_RUNNER_VERSION"] = "v0.2.13"
		v["GITHUB_SERVER_URL"] = "https://git.example.org"
		v["GITHUB_API_URL"] = "https://git.example.org/api/v1"
		v["GITHUB_GRAPHQL_URL"] = ""
		v["GITEA_OUTPUT"] = rv.output
		v["GITEA_STEP_SUMMARY"] = rv.summary
	}
	rv.vars = v
	return rv
}

// with adds step inputs, as the runner turns `with:` into INPUT_*.
func (rv *runnerVars) with(inputs map[string]string) *runnerVars {
	for k, v := range inputs {
		rv.vars[actions.InputVar(k)] = v
	}
	return rv
}

// step is one run of ferry as a step, with what it left for the runner.
type step struct {
	result
	outputs map[string]string
	summary string
}

func runStep(t *testing.T, rv *runnerVars, newRoot func(*env) *cobra.Command, args ...string) step {
	t.Helper()
	// Each step gets empty files, as a runner gives it.
	for _, p := range []string{rv.output, rv.summary} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return rv.vars[k] }, environ: func() []string { return environOf(rv.vars) }}
	if newRoot == nil {
		newRoot = newRootCmd
	}
	code := runWith(context.Background(), args, e, newRoot)
	s := step{result: result{stdout: out.String(), stderr: errb.String(), code: code}}
	s.outputs = actionstest.Outputs(t, rv.output)
	b, err := os.ReadFile(rv.summary)
	if err != nil {
		t.Fatal(err)
	}
	s.summary = string(b)
	return s
}

// maskedBefore checks that every occurrence of value in the step's log
// comes after an ::add-mask:: of it, and that it never shows on stderr.
func maskedBefore(t *testing.T, s step, value string) {
	t.Helper()
	mask := "::add-mask::" + value + "\n"
	i := strings.Index(s.stdout, mask)
	if i < 0 {
		t.Errorf("%q was never registered as a mask", value)
		return
	}
	rest := strings.Replace(s.stdout, mask, "", 1)
	if j := strings.Index(rest, value); j >= 0 && j < i {
		t.Errorf("%q was printed before it was masked", value)
	}
	if strings.Contains(s.stderr, value) {
		t.Errorf("%q is on stderr", value)
	}
}

// logLines returns the stdout lines that are not workflow commands.
func logLines(stdout string) []string {
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(l, "::") {
			out = append(out, l)
		}
	}
	return out
}

var runnerEvents = map[string][]string{
	"github": {"pull_request.json", "push.json", "schedule.json", "repository_dispatch.json"},
	"gitea":  {"pull_request.json", "push.json", "schedule.json", "workflow_dispatch.json"},
}

// TestActionRenderStep runs the generic action's render the way a runner
// does: no arguments, the command and everything else from INPUT_*, under
// GitHub's and Gitea's variables with each event.
func TestActionRenderStep(t *testing.T) {
	repo := newSecretRepo(t)
	for forge, events := range runnerEvents {
		for _, ev := range events {
			t.Run(forge+"/"+ev, func(t *testing.T) {
				rv := newRunnerVars(t, forge, ev).with(map[string]string{
					"command": "render", "repo": repo.dir, "targets": "app",
					"age-key": "# created: 2026-12-02T16:59:22Z\n" + repo.key.Identity + "\n",
				})
				s := runStep(t, rv, nil)
				if s.code != 0 {
					t.Fatalf("exit %d\nstderr: %s\nstdout: %s", s.code, s.stderr, s.stdout)
				}
				// The key is masked before anything else is printed.
				first := strings.SplitN(s.stdout, "\n", 2)[0]
				if first != "::add-mask::"+repo.key.Identity {
					t.Errorf("first line %q, want the key's mask", first)
				}
				if strings.Count(s.stdout, repo.key.Identity) != 1 {
					t.Error("the age key shows outside its ::add-mask:: command")
				}
				// Every decrypted value, and the base64 a rendered Secret's
				// data holds, is masked before it is printed.
				for _, c := range canaries[:4] {
					maskedBefore(t, s, c)
				}
				maskedBefore(t, s, base64.StdEncoding.EncodeToString([]byte(canaries[1])))
				if !strings.Contains(s.stdout, "::group::ferry render: inputs\nfrom step inputs: repo, age-key, targets\n::endgroup::\n") {
					t.Errorf("the inputs used are not listed:\n%s", s.stdout)
				}
				objs := objectsByID(t, []byte(strings.Join(logLines(s.stdout), "\n")))
				if _, ok := objs["Secret/db"]; !ok {
					t.Errorf("Secret/db not rendered: %v", keys(objs))
				}
				if len(s.outputs) != 0 || s.summary != "" {
					t.Errorf("render writes no outputs or summary; got %v and %q", s.outputs, s.summary)
				}
			})
		}
	}
}

// probeOptions is what the probe command saw.
type probeOptions struct {
	Name     string        `json:"name"`
	Count    int           `json:"count"`
	Ratio    float64       `json:"ratio"`
	Timeout  time.Duration `json:"timeout"`
	Fail     bool          `json:"failOnDrift"`
	DryRun   bool          `json:"dryRun"`
	Default  bool          `json:"default"`
	Policies []string      `json:"policies"`
	Hosts    []string      `json:"hosts"`
	Args     []string      `json:"args"`
	Token    string        `json:"-"`
}

// withProbe adds a command with a flag of every kind to ferry's tree. It
// puts what it parsed, and what it read of the event, in step outputs.
func withProbe(required bool, secret func(*env) string) func(*env) *cobra.Command {
	return func(e *env) *cobra.Command {
		root := newRootCmd(e)
		o := &probeOptions{}
		cmd := &cobra.Command{
			Use: "probe [TARGET...]",
			RunE: func(cmd *cobra.Command, args []string) error {
				o.Args = args
				b, _ := json.Marshal(o)
				e.Output("options", string(b))
				e.Output("token-set", fmt.Sprint(e.Getenv("FERRY_TOKEN") != ""))
				e.Output("multi", "first line\nsecond=line\n")
				if !e.InStep() {
					return nil
				}
				ev, err := e.Event()
				if err != nil {
					return err
				}
				e.Output("event", ev.Name)
				if pr := ev.PullRequest; pr != nil {
					e.Output("pr", fmt.Sprint(pr.Number))
					e.Output("base", pr.BaseSHA)
					e.Output("head", pr.HeadSHA)
				}
				if ev.Push != nil {
					e.Output("base", ev.Push.Base())
					e.Output("head", ev.Push.Head())
				}
				if ev.Schedule != "" {
					e.Output("schedule", ev.Schedule)
				}
				if ev.Dispatch != nil {
					e.Output("image", ev.Dispatch.String("image"))
				}
				forge := e.Step.Forge()
				e.Output("forge", forge.Kind+" "+forge.APIURL+" "+forge.Owner+"/"+forge.Repo)
				if secret != nil {
					v := secret(e)
					// Through the stream that shows decrypted values (render's
					// manifests): stdout would mask it.
					fmt.Fprintf(e.manifests, "the value is %s\n", v)
					e.Summary("### probe\n\nsecret: " + v + "\n")
				}
				return nil
			},
		}
		f := cmd.Flags()
		f.StringVar(&o.Name, "name", "default-name", "")
		f.IntVar(&o.Count, "count", 1, "")
		f.Float64Var(&o.Ratio, "ratio", 0.5, "")
		f.DurationVar(&o.Timeout, "timeout", time.Minute, "")
		f.BoolVar(&o.Fail, "fail-on-drift", false, "")
		f.BoolVar(&o.DryRun, "dry-run", false, "")
		f.BoolVar(&o.Default, "default-true", true, "")
		f.StringSliceVar(&o.Policies, "policy", nil, "")
		f.StringArrayVar(&o.Hosts, "insecure-registry", nil, "")
		f.String("base", "", "")
		if required {
			_ = cmd.MarkFlagRequired("base")
		}
		root.AddCommand(cmd)
		return root
	}
}

func probeOpts(t *testing.T, s step) probeOptions {
	t.Helper()
	var o probeOptions
	if err := json.Unmarshal([]byte(s.outputs["options"]), &o); err != nil {
		t.Fatalf("options output %q: %v\nstderr: %s", s.outputs["options"], err, s.stderr)
	}
	return o
}

// TestActionInputsBecomeFlags checks the generic mapping on a command with
// a flag of every kind: names, bools, lists, the command line winning over
// inputs, and the extra inputs.
func TestActionInputsBecomeFlags(t *testing.T) {
	rv := newRunnerVars(t, "github", "push.json").with(map[string]string{
		"command": "probe", "name": "from-input", "count": "3", "ratio": "0.25", "timeout": "90s",
		"fail-on-drift": "true", "default-true": "false",
		"policy": "podinfo, api\nsherpa\n", "insecure-registry": "a.local:5000,b.local",
		"targets": "stage\nprod", "token": "ghs_0123456789abcdefTOKEN",
	})
	rv.vars["INPUT_DRY_RUN"] = "true" // the form a shell exports
	s := runStep(t, rv, withProbe(false, nil))
	if s.code != 0 {
		t.Fatalf("exit %d: %s", s.code, s.stderr)
	}
	want := probeOptions{Name: "from-input", Count: 3, Ratio: 0.25, Timeout: 90 * time.Second, Fail: true, DryRun: true,
		Default: false, Policies: []string{"podinfo", "api", "sherpa"}, Hosts: []string{"a.local:5000", "b.local"},
		Args: []string{"stage", "prod"}}
	if d := cmp.Diff(want, probeOpts(t, s)); d != "" {
		t.Errorf("parsed (-want +got):\n%s", d)
	}
	if s.outputs["token-set"] != "true" {
		t.Error("input token did not reach the command as FERRY_TOKEN")
	}
	maskedBefore(t, s, "ghs_0123456789abcdefTOKEN")
	if s.outputs["multi"] != "first line\nsecond=line\n" {
		t.Errorf("multi-line output = %q", s.outputs["multi"])
	}

	// The command line wins over inputs; list inputs do not add to it.
	s = runStep(t, rv, withProbe(false, nil), "probe", "--name=cli", "--policy=only", "--fail-on-drift=false", "dev")
	got := probeOpts(t, s)
	if got.Name != "cli" || got.Fail || !cmp.Equal(got.Policies, []string{"only"}) || !cmp.Equal(got.Args, []string{"dev"}) || got.Count != 3 {
		t.Errorf("command line over inputs: %+v", got)
	}

	// Outside Actions no input is read and nothing is written.
	rv.vars["GITHUB_ACTIONS"] = ""
	s = runStep(t, rv, withProbe(false, nil), "probe")
	if s.code != 0 || len(s.outputs) != 0 || strings.Contains(s.stdout, "::") {
		t.Errorf("outside Actions: exit %d, outputs %v, stdout %q", s.code, s.outputs, s.stdout)
	}
}

// TestActionEvents reads every event payload under both variable sets.
func TestActionEvents(t *testing.T) {
	want := map[string]map[string]string{
		"github/pull_request.json":        {"pr": "42", "base": "5a2c8e1f0b9d7c3a6e4f2b1d0c9a8e7f6b5d4c3a", "head": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"},
		"github/push.json":                {"base": "5a2c8e1f0b9d7c3a6e4f2b1d0c9a8e7f6b5d4c3a", "head": "9a1c0f5e3b7d2a4c6e8f0a1b3c5d7e9f1a2b3c4d"},
		"github/schedule.json":            {"schedule": "17 6 * * 1-5"},
		"github/repository_dispatch.json": {"image": "ghcr.io/acme/podinfo"},
		"gitea/pull_request.json":         {"pr": "7", "base": "1f4e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f", "head": "8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4"},
		"gitea/push.json":                 {"base": "1f4e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f", "head": "8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4"},
		"gitea/schedule.json":             {"schedule": "17 6 * * 1-5"},
		"gitea/workflow_dispatch.json":    {"image": "git.example.org/acme/podinfo"},
	}
	forges := map[string]string{
		"github": "github https://api.github.com/ acme/fleet",
		"gitea":  "gitea https://git.example.org acme/fleet",
	}
	for forge, events := range runnerEvents {
		for _, ev := range events {
			name := forge + "/" + ev
			t.Run(name, func(t *testing.T) {
				rv := newRunnerVars(t, forge, ev).with(map[string]string{"command": "probe"})
				s := runStep(t, rv, withProbe(false, nil))
				if s.code != 0 {
					t.Fatalf("exit %d: %s", s.code, s.stderr)
				}
				got := map[string]string{}
				for k, v := range s.outputs {
					switch k {
					case "pr", "base", "head", "schedule", "image":
						got[k] = v
					}
				}
				if d := cmp.Diff(want[name], got); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
				if s.outputs["event"] != rv.eventName || s.outputs["forge"] != forges[forge] {
					t.Errorf("event %q forge %q", s.outputs["event"], s.outputs["forge"])
				}
			})
		}
	}
}

// TestActionSummaryAndMasksOfDecryptedValues: a value decrypted during the
// step is masked before it reaches the log and never reaches the summary.
func TestActionSummaryAndMasksOfDecryptedValues(t *testing.T) {
	key := secretstest.NewKey(t)
	const value = "canary-summary-secret-9e41"
	enc := secretstest.Encrypt(t, "s.yaml", []byte("password: "+value+"\n"), "", key.Recipient)
	decrypt := func(e *env) string {
		d, err := e.Decryptor()
		if err != nil {
			return err.Error()
		}
		out, err := d.Decrypt("s.yaml", enc)
		if err != nil {
			return err.Error()
		}
		return strings.TrimSpace(strings.TrimPrefix(string(out), "password:"))
	}
	for _, forge := range []string{"github", "gitea"} {
		t.Run(forge, func(t *testing.T) {
			rv := newRunnerVars(t, forge, "push.json").with(map[string]string{"command": "probe", "age-key": key.Identity})
			s := runStep(t, rv, withProbe(false, decrypt))
			if s.code != 0 {
				t.Fatalf("exit %d: %s", s.code, s.stderr)
			}
			if !strings.Contains(s.stdout, "the value is "+value) {
				t.Fatalf("the probe did not decrypt: %s", s.stdout)
			}
			maskedBefore(t, s, value)
			if s.summary != "### probe\n\nsecret: ***\n" {
				t.Errorf("summary = %q", s.summary)
			}
		})
	}
}

// TestActionBadInputs: every bad input exits 2 with a message that names
// the input, annotated for the run's page, without echoing secrets.
func TestActionBadInputs(t *testing.T) {
	const notAKey = "hunter2-correct-horse-battery-7731"
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: kube-token-do-not-print-0451}\n"
	key := secretstest.NewKey(t)
	for _, tc := range []struct {
		name    string
		inputs  map[string]string
		args    []string
		root    func(*env) *cobra.Command
		want    string
		secrets []string
	}{
		{name: "unknown command", inputs: map[string]string{"command": "deploy"},
			want: `input command: unknown command "deploy" (want one of apply,`},
		{name: "no command", inputs: map[string]string{},
			want: "input command is required: the ferry command to run (one of apply,"},
		{name: "missing required input", inputs: map[string]string{"command": "probe"}, root: withProbe(true, nil),
			want: "required input base is not set (ferry probe needs --base)"},
		{name: "age-key not an identity", inputs: map[string]string{"command": "render", "age-key": notAKey},
			want: "input age-key is not an age identity", secrets: []string{notAKey}},
		{name: "age-key malformed identity", inputs: map[string]string{"command": "render", "age-key": "AGE-SECRET-KEY-1NOTVALIDATALL"},
			want: "input age-key is not an age identity", secrets: []string{"AGE-SECRET-KEY-1NOTVALIDATALL"}},
		{name: "age-key is the public key", inputs: map[string]string{"command": "render", "age-key": key.Recipient},
			want: "input age-key holds an age recipient (a public key, age1...), not an identity", secrets: []string{key.Recipient}},
		{name: "age-key is a path", inputs: map[string]string{"command": "render", "age-key": "/home/runner/age.key"},
			want: "input age-key is not an age identity: it looks like a file path", secrets: []string{"/home/runner/age.key"}},
		{name: "kubeconfig is a path", inputs: map[string]string{"command": "apply", "kubeconfig": "/home/runner/.kube/config"},
			want: "input kubeconfig holds a file path, not kubeconfig content", secrets: []string{"/home/runner/.kube/config"}},
		{name: "kubeconfig-path is content", inputs: map[string]string{"command": "apply", "kubeconfig-path": kubeconfig},
			want: "input kubeconfig-path holds kubeconfig content, not a file path", secrets: []string{"kube-token-do-not-print-0451"}},
		{name: "kubeconfig base64", inputs: map[string]string{"command": "apply", "kubeconfig": base64.StdEncoding.EncodeToString([]byte(kubeconfig))},
			want: "input kubeconfig is base64-encoded", secrets: []string{base64.StdEncoding.EncodeToString([]byte(kubeconfig))}},
		{name: "kubeconfig not a kubeconfig", inputs: map[string]string{"command": "apply", "kubeconfig": "hello: world\nfoo: bar\n"},
			want: "input kubeconfig is not kubeconfig content: it has no clusters"},
		{name: "kubeconfig for a command without cluster", inputs: map[string]string{"command": "render", "kubeconfig": kubeconfig},
			want: "input kubeconfig: ferry render does not connect to a cluster", secrets: []string{"kube-token-do-not-print-0451"}},
		{name: "kubeconfig and kubeconfig-path", inputs: map[string]string{"command": "apply", "kubeconfig": kubeconfig, "kubeconfig-path": "/tmp/kc"},
			want: "inputs kubeconfig (content) and kubeconfig-path (a file) are both set", secrets: []string{"kube-token-do-not-print-0451"}},
		{name: "bool not true or false", inputs: map[string]string{"command": "apply", "prune": "yes"},
			want: `input prune: want true or false, got "yes"`},
		{name: "bad duration", inputs: map[string]string{"command": "apply", "timeout": "soon"},
			want: "input timeout: "},
		{name: "targets for a command without targets", inputs: map[string]string{"command": "version", "targets": "stage"},
			want: "input targets: ferry version takes no targets"},
		{name: "target that looks like a flag", inputs: map[string]string{"command": "render", "targets": "stage,--list"},
			want: `input targets: "--list" is not a target name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rv := newRunnerVars(t, "github", "pull_request.json").with(tc.inputs)
			s := runStep(t, rv, tc.root, tc.args...)
			if s.code != 2 {
				t.Fatalf("exit %d, want 2\nstderr: %s", s.code, s.stderr)
			}
			if !strings.Contains(s.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, s.stderr)
			}
			if !strings.Contains(s.stdout, "::error title=ferry") {
				t.Errorf("no error annotation:\n%s", s.stdout)
			}
			for _, secret := range tc.secrets {
				if strings.Contains(s.stderr, secret) {
					t.Errorf("stderr echoes %q", secret)
				}
				for _, l := range strings.Split(s.stdout, "\n") {
					if strings.Contains(l, secret) && !strings.HasPrefix(l, "::add-mask::") {
						t.Errorf("stdout echoes %q outside a mask: %q", secret, l)
					}
				}
			}
			if len(s.outputs) != 0 {
				t.Errorf("outputs written: %v", s.outputs)
			}
		})
	}
}

// TestActionErrorAnnotation: a render error is annotated on the file it is
// about, relative to the workspace.
func TestActionErrorAnnotation(t *testing.T) {
	ws := t.TempDir()
	repo := filepath.Join(ws, "gitops")
	for p, c := range map[string]string{
		"ferry.yaml":                   "targets:\n  - name: app\n    path: app\n",
		"app/kustomization.yaml":       "resources: [cm.yaml]\n",
		"app/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: [unclosed\n",
		"unrelated/kustomization.yaml": "resources: []\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rv := newRunnerVars(t, "gitea", "push.json").with(map[string]string{"command": "render", "repo": repo})
	rv.vars["GITHUB_WORKSPACE"] = ws
	s := runStep(t, rv, nil)
	if s.code != 2 {
		t.Fatalf("exit %d: %s", s.code, s.stderr)
	}
	if !strings.Contains(s.stdout, "::error file=gitops/app/cm.yaml") || !strings.Contains(s.stdout, "title=ferry render::") {
		t.Errorf("annotation does not point at gitops/app/cm.yaml:\n%s\nstderr: %s", s.stdout, s.stderr)
	}
}

// TestActionApplyStep applies through the generic action on the test
// control plane: kubeconfig content as an input (its token masked first),
// outputs applied and pruned, and the markdown report in the summary.
func TestActionApplyStep(t *testing.T) {
	plane := cp.Require(t)
	ns := cp.Namespace(t)
	repo := t.TempDir()
	write := func(p, c string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ferry.yaml", "targets:\n  - name: app\n    path: app\n    prune: true\n")
	write("app/kustomization.yaml", "namespace: "+ns+"\nresources: [a.yaml, b.yaml]\n")
	write("app/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {k: v}\n")
	write("app/b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata: {k: v}\n")
	kubeconfig := string(plane.Kubeconfig())
	var token string
	for _, l := range strings.Split(kubeconfig, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "token: "); ok {
			token = v
		}
	}
	if token == "" {
		t.Fatal("the test kubeconfig has no token")
	}
	apply := func(revision string) step {
		rv := newRunnerVars(t, "github", "push.json").with(map[string]string{
			"command": "apply", "repo": repo, "kubeconfig": kubeconfig,
			"inventory-namespace": ns, "revision": revision,
		})
		s := runStep(t, rv, nil)
		if s.code != 0 {
			t.Fatalf("exit %d\nstderr: %s\nstdout: %s", s.code, s.stderr, s.stdout)
		}
		maskedBefore(t, s, token)
		return s
	}
	s := apply("1111111111111111111111111111111111111111")
	if d := cmp.Diff(map[string]string{"applied": "2", "pruned": "0"}, s.outputs); d != "" {
		t.Errorf("first apply outputs (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(s.summary, "### ferry apply\n") || !strings.Contains(s.summary, "| app | `111111111111` | 2 | 0 | 0 | 0 |") {
		t.Errorf("summary:\n%s", s.summary)
	}
	if err := os.Remove(filepath.Join(repo, "app/b.yaml")); err != nil {
		t.Fatal(err)
	}
	write("app/kustomization.yaml", "namespace: "+ns+"\nresources: [a.yaml]\n")
	s = apply("2222222222222222222222222222222222222222")
	if d := cmp.Diff(map[string]string{"applied": "0", "pruned": "1"}, s.outputs); d != "" {
		t.Errorf("second apply outputs (-want +got):\n%s", d)
	}
}
