package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSetupActionMetadata checks setup/action.yml, the hand-written setup
// action (it is no ferry command, so the generator of action.yml and
// steps/*/action.yml leaves it alone): a composite action whose one step
// runs setup/install.sh with bash, its inputs reaching the script through
// env: only, each input documented, and the outputs the script writes.
func TestSetupActionMetadata(t *testing.T) {
	path := filepath.Join(repoRoot, "setup", "action.yml")
	meta := readAction(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs struct {
			Using string `yaml:"using"`
			Steps []struct {
				ID    string            `yaml:"id"`
				Shell string            `yaml:"shell"`
				Run   string            `yaml:"run"`
				Env   map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"runs"`
		Outputs map[string]struct {
			Value string `yaml:"value"`
		} `yaml:"outputs"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if doc.Runs.Using != "composite" || len(doc.Runs.Steps) != 1 {
		t.Fatalf("setup/action.yml: runs.using %q with %d steps, want composite with one", doc.Runs.Using, len(doc.Runs.Steps))
	}
	st := doc.Runs.Steps[0]
	if st.Shell != "bash" || strings.TrimSpace(st.Run) != `bash "$GITHUB_ACTION_PATH/install.sh"` {
		t.Errorf("setup/action.yml: the step runs %q with shell %q, want bash \"$GITHUB_ACTION_PATH/install.sh\" with bash", st.Run, st.Shell)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "setup", "install.sh")); err != nil {
		t.Error(err)
	}
	wantEnv := map[string]string{
		"FERRY_SETUP_VERSION":          "${{ inputs.version }}",
		"FERRY_SETUP_DOWNLOAD_URL":     "${{ inputs.download-url }}",
		"FERRY_SETUP_VERIFY_SIGNATURE": "${{ inputs.verify-signature }}",
	}
	for k, v := range wantEnv {
		if st.Env[k] != v {
			t.Errorf("setup/action.yml: env %s = %q, want %q", k, st.Env[k], v)
		}
	}
	if len(st.Env) != len(wantEnv) {
		t.Errorf("setup/action.yml: env %v, want exactly %v", st.Env, wantEnv)
	}
	var inputs []string
	for name, in := range meta.Inputs {
		inputs = append(inputs, name)
		if strings.TrimSpace(in.Description) == "" || in.Required {
			t.Errorf("setup/action.yml: input %s: want a description and required: false", name)
		}
	}
	slices.Sort(inputs)
	if want := []string{"download-url", "verify-signature", "version"}; !slices.Equal(inputs, want) {
		t.Errorf("setup/action.yml: inputs %v, want %v (each read by install.sh)", inputs, want)
	}
	if d := meta.Inputs["verify-signature"].Default; d != "auto" {
		t.Errorf("setup/action.yml: verify-signature defaults to %v, want auto", d)
	}
	for _, name := range []string{"version", "path"} {
		if got, want := doc.Outputs[name].Value, "${{ steps."+st.ID+".outputs."+name+" }}"; st.ID == "" || got != want {
			t.Errorf("setup/action.yml: output %s has value %q, want %q", name, got, want)
		}
		if strings.TrimSpace(meta.Outputs[name].Description) == "" {
			t.Errorf("setup/action.yml: output %s is not documented", name)
		}
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "setup", "install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`echo "version=$version"`, `echo "path=$(hostpath "$bin")"`} {
		if !strings.Contains(string(script), w) {
			t.Errorf("setup/install.sh does not write an output the action declares: no %s", w)
		}
	}
}
