package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/verify/verifytest"
)

// TestDiffImageRisks: a pull request that moves a Deployment to an image
// tag its registry does not have is flagged (one manifest HEAD, with the
// step's credentials for that registry); a tag the registry has is not;
// without credentials for the registry, or in a fork's run, the registry
// is not asked at all.
func TestDiffImageRisks(t *testing.T) {
	reg := registrytest.Start(t)
	reg.MustPush(t, "shop/web", "1.0.0", "1.2.0")
	r := verifytest.NewRepo(t)
	r.Commit(nil, "ferry.yaml", "targets:\n  - {name: app, path: app}\n")
	deployment := func(tag string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: " + reg.Host + "/shop/web:" + tag + "}]}\n"
	}
	base := r.Commit(nil, "app/web.yaml", deployment("1.0.0"))
	missing := r.Commit(nil, "app/web.yaml", deployment("1.1.0"))
	present := r.Commit(nil, "app/web.yaml", deployment("1.2.0"))
	hostVar, _ := images.RegistryEnv(reg.Host)
	creds := map[string]string{hostVar + "_USERNAME": reg.Username, hostVar + "_PASSWORD": reg.Password}

	risks := func(vars map[string]string, head string) []string {
		t.Helper()
		res := ferry(t, vars, "diff", "--repo", r.Dir, "--base", base, "--head", head, "--format", "json")
		var rep struct {
			Risks []struct{ ID, Head, From string }
		}
		// (In a step, workflow commands come before the report.)
		if err := json.Unmarshal([]byte(res.stdout[strings.Index(res.stdout, "{"):]), &rep); err != nil {
			t.Fatalf("exit %d: %v\n%s", res.code, err, res.stderr)
		}
		var out []string
		for _, rk := range rep.Risks {
			out = append(out, rk.ID+" "+rk.From)
		}
		return out
	}
	want := "image-missing:Deployment/shop/web:" + reg.Host + "/shop/web:1.1.0 registry"
	if got := risks(creds, missing); len(got) != 1 || got[0] != want {
		t.Errorf("a tag the registry does not have: %q, want %q", got, want)
	}
	if got := risks(creds, present); len(got) != 0 {
		t.Errorf("a tag the registry has: %q", got)
	}
	if got := risks(nil, missing); len(got) != 0 {
		t.Errorf("without credentials for the registry: %q", got)
	}
	event := filepath.Join(t.TempDir(), "event.json")
	payload := `{"number": 3, "pull_request": {"number": 3, "head": {"repo": {"full_name": "mallory/fleet"}}, "base": {"repo": {"full_name": "acme/fleet"}}}, "repository": {"full_name": "acme/fleet"}}`
	if err := os.WriteFile(event, []byte(payload), 0o600); err != nil {
		t.Fatal(err)
	}
	fork := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event,
		"GITHUB_OUTPUT": filepath.Join(t.TempDir(), "out"), "GITHUB_STEP_SUMMARY": filepath.Join(t.TempDir(), "sum")}
	for k, v := range creds {
		fork[k] = v
	}
	if got := risks(fork, missing); len(got) != 0 {
		t.Errorf("in a fork's run: %q", got)
	}
}
