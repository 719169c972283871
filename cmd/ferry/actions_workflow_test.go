package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflowDirs hold the workflows that must parse and use ferry's actions
// correctly: the project's own CI and the templates users copy.
var workflowDirs = []string{".github/workflows", ".gitea/workflows", "examples/workflows"}

// ferryAction returns the folder (relative to the repository root) of the
// ferry action a step's uses: names, or "" when it is another action.
func ferryAction(uses string) (string, bool) {
	u := strings.TrimPrefix(uses, "https://github.com/")
	if strings.HasPrefix(u, "./") {
		return strings.TrimSuffix(strings.TrimPrefix(u, "./"), "/"), true
	}
	path, _, ok := strings.Cut(u, "@")
	if !ok {
		return "", false
	}
	if path == "ferry-ci/ferry" {
		return "", true
	}
	if rest, ok := strings.CutPrefix(path, "ferry-ci/ferry/"); ok {
		return rest, true
	}
	return "", false
}

type workflowStep struct {
	ID   string            `yaml:"id"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]any    `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type workflowJob struct {
	RunsOn      any               `yaml:"runs-on"`
	Needs       any               `yaml:"needs"`
	Permissions any               `yaml:"permissions"`
	Concurrency any               `yaml:"concurrency"`
	Outputs     map[string]string `yaml:"outputs"`
	Steps       []workflowStep    `yaml:"steps"`
}

type workflow struct {
	Name        string                 `yaml:"name"`
	On          map[string]any         `yaml:"on"`
	Permissions any                    `yaml:"permissions"`
	Jobs        map[string]workflowJob `yaml:"jobs"`
}

var (
	stepOutputRef = regexp.MustCompile(`steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)`)
	needsRef      = regexp.MustCompile(`needs\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)`)
)

// TestWorkflowsUseKnownInputs parses every workflow and checks each step
// that uses ferry's actions: its with: keys are inputs the action declares,
// required inputs are given, command names a command, outputs it reads are
// declared; and that no run: line interpolates an expression.
func TestWorkflowsUseKnownInputs(t *testing.T) {
	commands := map[string]bool{"version": true}
	for _, d := range stepDirs(t) {
		commands[d] = true
	}
	for name := range registered() {
		commands[name] = true
	}
	var files []string
	for _, dir := range workflowDirs {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	sort.Strings(files)
	for _, want := range []string{
		".github/workflows/ci.yml", ".gitea/workflows/ci.yml",
		"examples/workflows/github/diff.yaml", "examples/workflows/github/deploy.yaml", "examples/workflows/github/drift.yaml", "examples/workflows/github/bump.yaml",
		"examples/workflows/gitea/diff.yaml", "examples/workflows/gitea/deploy.yaml", "examples/workflows/gitea/drift.yaml", "examples/workflows/gitea/bump.yaml",
	} {
		if !slices.Contains(files, filepath.Join(repoRoot, want)) {
			t.Errorf("%s is missing", want)
		}
	}
	actionsByDir := map[string]*actionMeta{}
	action := func(dir string) *actionMeta {
		if a, ok := actionsByDir[dir]; ok {
			return a
		}
		a := readAction(t, filepath.Join(repoRoot, dir, "action.yml"))
		actionsByDir[dir] = a
		return a
	}
	for _, path := range files {
		rel, _ := filepath.Rel(repoRoot, path)
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var wf workflow
			if err := yaml.Unmarshal(b, &wf); err != nil {
				t.Fatalf("does not parse: %v", err)
			}
			var raw struct {
				Jobs map[string]any `yaml:"jobs"`
			}
			if err := yaml.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			if wf.Name == "" || len(wf.On) == 0 || len(wf.Jobs) == 0 {
				t.Fatalf("want name, on and jobs; got name %q, %d events, %d jobs", wf.Name, len(wf.On), len(wf.Jobs))
			}
			if _, ok := wf.On["pull_request_target"]; ok {
				t.Error("pull_request_target runs a fork's code with secrets: use pull_request (docs/security.md)")
			}
			for jobName, job := range wf.Jobs {
				if job.RunsOn == nil {
					t.Errorf("job %s: no runs-on", jobName)
				}
				if wf.Permissions == nil && job.Permissions == nil {
					t.Errorf("job %s: no permissions (least privilege: say what the token may do)", jobName)
				}
				ferrySteps := map[string]*actionMeta{}
				for i, st := range job.Steps {
					where := fmt.Sprintf("job %s step %d", jobName, i+1)
					if strings.Contains(st.Run, "${{") {
						t.Errorf("%s: run interpolates an expression into the shell; pass it through env:", where)
					}
					dir, ok := ferryAction(st.Uses)
					if !ok {
						continue
					}
					meta := action(dir)
					if st.ID != "" {
						ferrySteps[st.ID] = meta
					}
					for k := range st.With {
						if _, ok := meta.Inputs[k]; !ok {
							t.Errorf("%s (%s): input %s does not exist", where, st.Uses, k)
						}
					}
					for k, in := range meta.Inputs {
						if _, ok := st.With[k]; in.Required && !ok {
							t.Errorf("%s (%s): required input %s is not given", where, st.Uses, k)
						}
					}
					if c, ok := st.With["command"].(string); ok && !commands[c] {
						t.Errorf("%s: command %q is no ferry command", where, c)
					}
					if dir == "steps/apply" && job.Concurrency == nil {
						t.Errorf("%s: an apply job needs concurrency: per target", where)
					}
				}
				// Outputs read from ferry steps exist.
				jobText, _ := yaml.Marshal(raw.Jobs[jobName])
				for _, m := range stepOutputRef.FindAllStringSubmatch(string(jobText), -1) {
					if meta, ok := ferrySteps[m[1]]; ok {
						if _, ok := meta.Outputs[m[2]]; !ok {
							t.Errorf("job %s reads output %s of step %s, which its action does not declare", jobName, m[2], m[1])
						}
					}
				}
				for _, m := range needsRef.FindAllStringSubmatch(string(jobText), -1) {
					need, ok := wf.Jobs[m[1]]
					if !ok {
						t.Errorf("job %s needs unknown job %s", jobName, m[1])
						continue
					}
					if _, ok := need.Outputs[m[2]]; !ok {
						t.Errorf("job %s reads output %s of job %s, which does not declare it", jobName, m[2], m[1])
					}
				}
			}
			if strings.Contains(rel, "diff") {
				if _, ok := wf.On["pull_request"]; !ok {
					t.Error("the diff workflow runs on pull_request")
				}
				if !strings.Contains(string(b), "fetch-depth: 0") {
					t.Error("the diff workflow checks out with fetch-depth: 0 (the base commit must be there)")
				}
			}
		})
	}
}
