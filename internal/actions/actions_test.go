package actions

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/actions/actionstest"
)

// runner is the environment a runner gives a step, with its files.
type runner struct {
	vars    map[string]string
	output  string
	summary string
}

func newRunner(t *testing.T, gitea bool) *runner {
	t.Helper()
	dir := t.TempDir()
	r := &runner{
		vars:    map[string]string{"GITHUB_ACTIONS": "true", "CI": "true"},
		output:  filepath.Join(dir, "set_output"),
		summary: filepath.Join(dir, "step_summary"),
	}
	for _, p := range []string{r.output, r.summary} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prefix := "GITHUB_"
	if gitea {
		// Gitea's own names only: the runtime must find them too.
		prefix = "GITEA_"
		r.vars["GITEA_ACTIONS"] = "true"
	}
	r.vars[prefix+"OUTPUT"] = r.output
	r.vars[prefix+"STEP_SUMMARY"] = r.summary
	return r
}

func (r *runner) getenv(k string) string { return r.vars[k] }

func TestInputVarMangling(t *testing.T) {
	for name, want := range map[string]string{
		"fail-on-drift":    "INPUT_FAIL-ON-DRIFT",
		"age-key":          "INPUT_AGE-KEY",
		"command":          "INPUT_COMMAND",
		"My Input":         "INPUT_MY_INPUT",
		"mass-prune-ratio": "INPUT_MASS-PRUNE-RATIO",
	} {
		if got := InputVar(name); got != want {
			t.Errorf("InputVar(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestInput(t *testing.T) {
	r := New(func(k string) string {
		return map[string]string{
			"INPUT_FAIL-ON-DRIFT": "  true\n",
			"INPUT_DRY_RUN":       "false",
			"INPUT_EMPTY":         "   ",
		}[k]
	}, &bytes.Buffer{})
	for _, tc := range []struct {
		name string
		want string
		set  bool
	}{
		{"fail-on-drift", "true", true},
		{"dry-run", "false", true}, // the form a shell can export
		{"empty", "", false},
		{"absent", "", false},
	} {
		got, set := r.Input(tc.name)
		if got != tc.want || set != tc.set {
			t.Errorf("Input(%q) = %q, %t; want %q, %t", tc.name, got, set, tc.want, tc.set)
		}
	}
}

func TestListAndBool(t *testing.T) {
	got := List(" stage, prod\n\n  gpu-cluster/apps ,\n")
	if d := cmp.Diff([]string{"stage", "prod", "gpu-cluster/apps"}, got); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
	if List("  \n") != nil {
		t.Error("List of blanks should be empty")
	}
	for in, want := range map[string]bool{"true": true, "True": true, "false": false, "FALSE": false} {
		if got, ok := Bool(in); !ok || got != want {
			t.Errorf("Bool(%q) = %t, %t", in, got, ok)
		}
	}
	for _, in := range []string{"yes", "1", "on", ""} {
		if _, ok := Bool(in); ok {
			t.Errorf("Bool(%q) accepted", in)
		}
	}
}

func TestOutputsAreHeredocsThatCannotBeForged(t *testing.T) {
	for _, gitea := range []bool{false, true} {
		rn := newRunner(t, gitea)
		r := New(rn.getenv, &bytes.Buffer{})
		values := map[string]string{
			"changed": "true",
			"targets": "[\"stage\",\"prod\"]",
			// A value that tries to end a heredoc and set another output.
			"report": "line one\nEOF\nchanged=false\n_GitHubActionsFileCommandDelimeter_\nlast",
			"empty":  "",
		}
		for _, name := range []string{"changed", "targets", "report", "empty"} {
			if err := r.SetOutput(name, values[name]); err != nil {
				t.Fatal(err)
			}
		}
		if d := cmp.Diff(values, actionstest.Outputs(t, rn.output)); d != "" {
			t.Errorf("gitea=%t: outputs (-want +got):\n%s", gitea, d)
		}
	}
	r := New(newRunner(t, false).getenv, &bytes.Buffer{})
	for _, bad := range []string{"", "a\nb", "a=b", "x<<y"} {
		if err := r.SetOutput(bad, "v"); err == nil {
			t.Errorf("SetOutput(%q) accepted", bad)
		}
	}
}

func TestOutputWithoutRunnerFile(t *testing.T) {
	r := New(func(string) string { return "" }, &bytes.Buffer{})
	err := r.SetOutput("changed", "true")
	if err == nil || !strings.Contains(err.Error(), "GITHUB_OUTPUT is not set") {
		t.Fatalf("got %v, want an error naming GITHUB_OUTPUT", err)
	}
}

func TestSummaryAppendsAndIsCapped(t *testing.T) {
	rn := newRunner(t, false)
	r := New(rn.getenv, &bytes.Buffer{})
	if err := r.AddSummary("### one"); err != nil {
		t.Fatal(err)
	}
	if err := r.AddSummary("### two\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(rn.summary)
	if string(b) != "### one\n### two\n" {
		t.Errorf("summary = %q", b)
	}
	if err := r.AddSummary(strings.Repeat("é", MaxSummary)); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(rn.summary)
	if len(b) > MaxSummary {
		t.Errorf("summary is %d bytes, more than %d", len(b), MaxSummary)
	}
	if !strings.HasSuffix(string(b), "at most 1 MiB)_\n") {
		t.Errorf("a cut summary should say so; ends with %q", b[len(b)-60:])
	}
	if !bytes.Contains(b, []byte("é")) || strings.Contains(string(b), "\ufffd") {
		t.Error("the cut must fall between characters")
	}
}

func TestMaskLineByLine(t *testing.T) {
	var out bytes.Buffer
	r := New(func(string) string { return "" }, &out)
	key := "# created: 2026-01-01\nAGE-SECRET-KEY-1QQQQQQ\n\n  AGE-SECRET-KEY-1ZZZZZZ  \n"
	if err := r.Mask(key, "p%ss", "AGE-SECRET-KEY-1QQQQQQ"); err != nil {
		t.Fatal(err)
	}
	want := "::add-mask::# created: 2026-01-01\n" +
		"::add-mask::AGE-SECRET-KEY-1QQQQQQ\n" +
		"::add-mask::AGE-SECRET-KEY-1ZZZZZZ\n" +
		"::add-mask::p%25ss\n"
	if out.String() != want {
		t.Errorf("masks:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestGroupsAndAnnotations(t *testing.T) {
	var out bytes.Buffer
	r := New(func(string) string { return "" }, &out)
	_ = r.Group("ferry render")
	_ = r.EndGroup()
	_ = r.Error("decrypting apps/stage/secret.yaml: MAC mismatch\nsecond line", Annotation{File: "apps/stage/secret.yaml", Line: 12, Title: "ferry render"})
	_ = r.Warning("one, two: three", Annotation{File: "a,b:c.yaml"})
	want := "::group::ferry render\n" +
		"::endgroup::\n" +
		"::error file=apps/stage/secret.yaml,line=12,title=ferry render::decrypting apps/stage/secret.yaml: MAC mismatch%0Asecond line\n" +
		"::warning file=a%2Cb%3Ac.yaml::one, two: three\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestStdoutMasksFirstAndFencesCommands(t *testing.T) {
	var out bytes.Buffer
	r := New(func(string) string { return "" }, &out)
	var pending []string
	w := r.Stdout(func() []string { return pending })
	pending = []string{"s3cr3t-value"}
	if _, err := w.Write([]byte("password: s3cr3t-value\n")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "::add-mask::s3cr3t-value" {
		t.Fatalf("the mask must come before the value; got %q", out.String())
	}
	// A manifest line that looks like a workflow command is fenced, and
	// shown as it is.
	out.Reset()
	body := "data: |\n  ::add-mask::nothing\n::error::forged\n"
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != 5 || !strings.HasPrefix(got[0], "::stop-commands::ferry-") || got[4] != "::"+strings.TrimPrefix(got[0], "::stop-commands::")+"::" {
		t.Fatalf("not fenced:\n%s", out.String())
	}
	if strings.Join(got[1:4], "\n")+"\n" != body {
		t.Errorf("fenced text changed: %q", got[1:4])
	}
}

// hostile is text from outside ferry (names, paths, messages) that tries
// to issue workflow commands, each followed by a mask ferry registers:
// the mask must still be read.
var hostile = []string{
	"ferry: ferry.yaml: target \"a\n::error file=x::pwned\"\n",
	"plain\r::warning::carriage return\n",
	"   ::add-mask::leading spaces\n",
	"\t\u00a0\u2003::notice::unicode white space\n",
	"::stop-commands::tok\n",
	"\n::stop-commands::tok",
	"a line with ##[set-output name=x;]forged inside\n",
	"##[stop-commands]tok\n",
	"split #",
	"#[error]across writes\n",
	"ends in a colon:",
	":error::across writes\n",
	"no newline at the end ::",
	"::",
	"error::x\n",
	"CRLF\r\n::error::after\r\n",
}

// Whatever the text, on either stream, the runner acts only on the
// commands ferry issued: its masks, and its own fences.
func TestNoHostileCommandOnEitherStream(t *testing.T) {
	for _, stdout := range []bool{true, false} {
		var out, errb bytes.Buffer
		r := New(func(string) string { return "" }, &out)
		var w io.Writer = r.Stdout(nil)
		if !stdout {
			w = r.Stderr(&errb, nil)
		}
		var masks []string
		for i, text := range hostile {
			if _, err := io.WriteString(w, text); err != nil {
				t.Fatal(err)
			}
			m := "mask-" + strconv.Itoa(i)
			if err := r.Mask(m); err != nil {
				t.Fatal(err)
			}
			masks = append(masks, m)
		}
		if e, ok := w.(*Escaper); ok {
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		var gotMasks []string
		for _, c := range actionstest.Commands(out.String()) {
			switch {
			case c.Name == "add-mask":
				gotMasks = append(gotMasks, strings.TrimPrefix(c.Line, "::add-mask::"))
			case c.Name == "stop-commands" && strings.HasPrefix(c.Line, "::stop-commands::ferry-"),
				strings.HasPrefix(c.Name, "ferry-") && c.Line == "::"+c.Name+"::":
			default:
				t.Errorf("stdout=%t: the runner reads %q as a command", stdout, c.Line)
			}
		}
		if d := cmp.Diff(masks, gotMasks); d != "" {
			t.Errorf("stdout=%t: masks the runner registers (-want +got):\n%s\nstdout:\n%s", stdout, d, out.String())
		}
		for _, c := range actionstest.Commands(errb.String()) {
			t.Errorf("stderr: the runner reads %q as a command", c.Line)
		}
	}
}

func TestStderrEscapesLines(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"plain text is kept", []string{"ferry: target \"stage\": no such path\n"}, "ferry: target \"stage\": no such path\n"},
		{"a colon or a hash alone is kept", []string{"a: b # c [d] x::y\n"}, "a: b # c [d] x::y\n"},
		{"a line that starts with :: is escaped whatever follows", []string{"::1\n"}, "\\::1\n"},
		{"a command after a newline", []string{"ferry: bad \"x\n::error file=x::pwned\"\n"}, "ferry: bad \"x\n\\::error file=x::pwned\"\n"},
		{"after white space", []string{" \t::warning::x\n"}, " \t\\::warning::x\n"},
		{"after Unicode white space", []string{"\u2003::warning::x\n"}, "\u2003\\::warning::x\n"},
		{"after a carriage return", []string{"a\r::warning::x\r\n"}, "a\r\\::warning::x\r\n"},
		{"the older form, anywhere", []string{"x ##[error]y ###[z]\n"}, "x ##\\[error]y ###\\[z]\n"},
		{"split across writes", []string{"a\n:", ":error::x", "\n#", "#[error]y\n"}, "a\n\\::error::x\n##\\[error]y\n"},
		{"the last line waits for Flush", []string{"ok\n::stop-commands::t"}, "ok\n\\::stop-commands::t"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cmds, out bytes.Buffer
			r := New(func(string) string { return "" }, &cmds)
			e := r.Stderr(&out, nil)
			for _, w := range tc.writes {
				if _, err := io.WriteString(e, w); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, out.String()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// An escape must not split a value the runner masks: the masks known are
// applied to the line first.
func TestStderrEscapeKeepsMasks(t *testing.T) {
	var cmds, out bytes.Buffer
	r := New(func(string) string { return "" }, &cmds)
	e := r.Stderr(&out, func() []string { return []string{"::s3cr3t", "p##[w"} })
	if _, err := io.WriteString(e, "::s3cr3t\nkey p##[w\nsafe p##[w ::s3cr3t\n"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("***\nkey ***\nsafe *** ***\n", out.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if !strings.HasPrefix(cmds.String(), "::add-mask::::s3cr3t\n") {
		t.Errorf("masks not registered first: %q", cmds.String())
	}
}

// A command written while the output is in the middle of a line starts a
// line of its own: the runner reads commands only at the start of one.
func TestCommandsStartALine(t *testing.T) {
	var out bytes.Buffer
	r := New(func(string) string { return "" }, &out)
	w := r.Stdout(nil)
	_, _ = io.WriteString(w, "waiting for ")
	if err := r.Mask("s3cr3t"); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(w, "x: ")
	_, _ = io.WriteString(w, "::error::y\n")
	got := actionstest.Commands(out.String())
	if len(got) != 3 || got[0].Line != "::add-mask::s3cr3t" || got[1].Name != "stop-commands" {
		t.Fatalf("commands %+v in:\n%s", got, out.String())
	}
}

func TestForge(t *testing.T) {
	gh := New(func(k string) string {
		return map[string]string{"GITHUB_REPOSITORY": "acme/fleet", "GITHUB_RUN_ID": "99"}[k]
	}, &bytes.Buffer{})
	if d := cmp.Diff(Forge{Kind: GitHub, APIURL: "https://api.github.com/", ServerURL: "https://github.com", Owner: "acme", Repo: "fleet"}, gh.Forge()); d != "" {
		t.Errorf("github (-want +got):\n%s", d)
	}
	if got := gh.RunURL(); got != "https://github.com/acme/fleet/actions/runs/99" {
		t.Errorf("RunURL = %q", got)
	}
	gt := New(func(k string) string {
		return map[string]string{
			"GITEA_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/fleet",
			"GITHUB_SERVER_URL": "https://git.example.org/", "GITHUB_API_URL": "https://git.example.org/api/v1",
		}[k]
	}, &bytes.Buffer{})
	if d := cmp.Diff(Forge{Kind: Gitea, APIURL: "https://git.example.org", ServerURL: "https://git.example.org", Owner: "acme", Repo: "fleet"}, gt.Forge()); d != "" {
		t.Errorf("gitea (-want +got):\n%s", d)
	}
}

// TestWithMask: a runtime made WithMask masks every text it writes (the
// outputs, the summary, annotations with their properties, group titles)
// but the values it registers as masks, which the runner must read as
// they are.
func TestWithMask(t *testing.T) {
	rn := newRunner(t, false)
	var cmds bytes.Buffer
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret-value", "***") }
	r := New(rn.getenv, &cmds, WithMask(mask))
	for _, err := range []error{
		r.SetOutput("report", "a s3cret-value in an output"),
		r.AddSummary("a s3cret-value in the summary"),
		r.Error("error s3cret-value", Annotation{Title: "title s3cret-value", File: "dir/s3cret-value.yaml"}),
		r.Warning("warning s3cret-value", Annotation{Title: "t"}),
		r.Group("group s3cret-value"),
		r.Mask("s3cret-value"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff(map[string]string{"report": "a *** in an output"}, actionstest.Outputs(t, rn.output)); d != "" {
		t.Errorf("outputs (-want +got):\n%s", d)
	}
	if b, _ := os.ReadFile(rn.summary); string(b) != "a *** in the summary\n" {
		t.Errorf("summary %q", b)
	}
	want := "::error file=dir/***.yaml,title=title ***::error ***\n::warning title=t::warning ***\n::group::group ***\n::add-mask::s3cret-value\n"
	if got := cmds.String(); got != want {
		t.Errorf("commands:\n%s\nwant:\n%s", got, want)
	}
}
