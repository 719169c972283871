package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/actions/actionstest"
)

// hostileText is text from a repository or a cluster that tries to issue
// workflow commands through ferry's output.
var hostileText = []string{
	"x\n::error file=x::pwned",
	"x\r::warning::carriage return",
	"x\n   ::add-mask::leading spaces",
	"x\n\t::notice::a tab",
	"x\n::stop-commands::tok",
	"x ##[set-output name=changed;]forged",
	"x\n##[stop-commands]tok",
}

// In an Actions step, no line ferry prints, on either stream, reads as a
// workflow command it did not issue: not in an error message (a --repo
// path here), not in rendered YAML.
func TestActionsOutputIssuesOnlyFerrysCommands(t *testing.T) {
	for _, h := range hostileText {
		t.Run(strings.Fields(h)[1], func(t *testing.T) {
			// An error message holding the text, on stderr, and in the
			// annotation ferry issues on stdout.
			rv := newRunnerVars(t, "github", "push.json").with(map[string]string{"command": "render", "repo": filepath.Join(t.TempDir(), h)})
			s := runStep(t, rv, nil)
			if s.code != exitError {
				t.Fatalf("exit %d, want 2\nstderr: %s", s.code, s.stderr)
			}
			if !strings.Contains(s.stderr, "ferry: repository ") {
				t.Errorf("stderr lacks the error:\n%s", s.stderr)
			}
			onlyFerrys(t, s)
			ann := 0
			for _, c := range actionstest.Commands(s.stdout) {
				if c.Name == "error" {
					ann++
				}
			}
			if ann != 1 {
				t.Errorf("%d error annotations, want ferry's one:\n%s", ann, s.stdout)
			}

			// Rendered YAML holding the text, with decrypted values that
			// must still be masked before they show.
			r := newSecretRepo(t)
			r.write("app/kustomization.yaml", strings.Replace(r.read("app/kustomization.yaml"), "  - secret.yaml\n", "  - secret.yaml\n  - hostile.yaml\n", 1))
			r.write("app/hostile.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hostile\ndata:\n  text: "+quote(h)+"\n")
			rv = newRunnerVars(t, "github", "push.json").with(map[string]string{
				"command": "render", "repo": r.dir, "age-key": r.key.Identity,
			})
			s = runStep(t, rv, nil)
			if s.code != 0 {
				t.Fatalf("exit %d\nstderr: %s", s.code, s.stderr)
			}
			if !strings.Contains(s.stdout, "name: hostile") {
				t.Fatalf("the ConfigMap was not rendered:\n%s", s.stdout)
			}
			onlyFerrys(t, s)
			for _, c := range canaries[:4] {
				maskedBefore(t, s, c)
			}
		})
	}
}

// onlyFerrys fails the test when the runner would act on a command in the
// step's output that ferry did not issue: on stdout its masks, groups,
// fences and error annotation; on stderr nothing.
func onlyFerrys(t *testing.T, s step) {
	t.Helper()
	for _, c := range actionstest.Commands(s.stdout) {
		switch {
		case c.Name == "add-mask", c.Name == "group", c.Name == "endgroup":
		case c.Name == "stop-commands" && strings.HasPrefix(c.Line, "::stop-commands::ferry-"):
		case strings.HasPrefix(c.Name, "ferry-") && c.Line == "::"+c.Name+"::":
		case c.Name == "error" && strings.HasPrefix(c.Line, "::error ") && strings.Contains(c.Line, "title=ferry render::"):
		default:
			t.Errorf("stdout: the runner reads %q as a command", c.Line)
		}
		if c.Name == "add-mask" && strings.Contains(c.Line, "leading spaces") {
			t.Errorf("stdout: a forged mask: %q", c.Line)
		}
	}
	for _, c := range actionstest.Commands(s.stderr) {
		t.Errorf("stderr: the runner reads %q as a command", c.Line)
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
