package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/actions/actionstest"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// fleetsDir holds the fleet fixtures of internal/config's tests.
const fleetsDir = "../../internal/config/testdata/fleets"

// One broken dependency in an otherwise good fleet: the listing succeeds
// and names the broken target with its reason, the good targets render,
// the broken one fails naming its file and the dependency, and apply of
// everything writes nothing to the cluster.
func TestBrokenDependencyInAFleet(t *testing.T) {
	repo := copyScenario(t, filepath.Join(fleetsDir, "namespaced")).dir
	ks := filepath.Join(repo, "kubernetes/apps/observability/exporter/ks.yaml")
	b, err := os.ReadFile(ks)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "      namespace: kube-system", "      namespace: monitoring", 1)
	if broken == string(b) {
		t.Fatal("the fixture's dependsOn namespace was not found")
	}
	if err := os.WriteFile(ks, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	reason := []string{"kubernetes/apps/observability/exporter/ks.yaml:1", `dependsOn "metrics-server" (namespace monitoring)`}

	list := ferry(t, nil, "render", "--list", "--repo", repo)
	if list.code != 0 {
		t.Fatalf("render --list: exit %d: %s", list.code, list.stderr)
	}
	var row, errLine string
	for _, line := range strings.Split(list.stdout, "\n") {
		if strings.HasPrefix(line, "exporter ") {
			row = line
		}
		if strings.HasPrefix(line, "error exporter: ") {
			errLine = line
		}
	}
	if !strings.Contains(row, " error ") {
		t.Errorf("the exporter row does not say error: %q\n%s", row, list.stdout)
	}
	for _, w := range reason {
		if !strings.Contains(errLine, w) {
			t.Errorf("the error line lacks %q: %q", w, errLine)
		}
	}
	if n := strings.Count(list.stdout, " ok "); n != 5 {
		t.Errorf("%d targets ok, want 5:\n%s", n, list.stdout)
	}

	good := ferry(t, nil, "render", "--repo", repo, "web")
	if good.code != 0 || !strings.Contains(good.stdout, "name: home-web") {
		t.Errorf("render web: exit %d, want 0 and its objects: %s%s", good.code, good.stdout, good.stderr)
	}
	bad := ferry(t, nil, "render", "--repo", repo, "exporter")
	if bad.code != exitError || bad.stdout != "" {
		t.Errorf("render exporter: exit %d with %d bytes of output, want %d and none", bad.code, len(bad.stdout), exitError)
	}
	for _, w := range reason {
		if !strings.Contains(bad.stderr, w) {
			t.Errorf("render exporter: stderr lacks %q: %s", w, bad.stderr)
		}
	}
	all := ferry(t, nil, "render", "--repo", repo)
	if all.code != exitError || all.stdout != "" {
		t.Errorf("render of every target: exit %d with %d bytes, want %d and nothing printed", all.code, len(all.stdout), exitError)
	}

	vars := map[string]string{"TEST_KUBECONFIG": string(cp.Require(t).Kubeconfig())}
	apply := ferry(t, vars, "apply", "--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", cp.Namespace(t))
	if apply.code != exitError {
		t.Errorf("apply: exit %d, want %d: %s", apply.code, exitError, apply.stderr)
	}
	for _, w := range append(reason, "nothing was applied") {
		if !strings.Contains(apply.stderr, w) {
			t.Errorf("apply: stderr lacks %q: %s", w, apply.stderr)
		}
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	ctx := context.Background()
	if _, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "cilium", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet/kube-system/cilium of a good target: %v, want not found (nothing applied)", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "observability", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Namespace/observability: %v, want not found (nothing applied)", err)
	}

	// A target that neither is nor depends on the broken one can still be
	// applied on its own.
	dependent := ferry(t, vars, "apply", "--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", cp.Namespace(t), "--dry-run", "web")
	if dependent.code != 0 {
		t.Errorf("apply --dry-run web (not depending on the broken target): exit %d: %s", dependent.code, dependent.stderr)
	}
}

// A change under a folder an ArtifactGenerator copies affects exactly the
// targets of that artifact; a change no copy rule reads affects none.
func TestDiffFollowsCopyRules(t *testing.T) {
	p, base := newPRRepoOf(t, filepath.Join(fleetsDir, "artifacts"), nil)
	p.replace("apps/redis/statefulset.yaml", "image: redis:8.2", "image: redis:8.4")
	redis := p.commit("redis image")
	p.replace("apps/base/podinfo/service.yaml", "port: 9898", "port: 9899")
	podinfo := p.commit("podinfo base")
	p.replace("apps/prod/podinfo/README.md", "excluded", "left out")
	excluded := p.commit("a file the copy rule excludes")
	p.write("docs/README.md", "# fleet docs, edited\n")
	docs := p.commit("docs")
	for _, c := range []struct {
		name, base, head string
		want             []string
	}{
		{"the redis folder", base, redis, []string{"redis"}},
		{"the podinfo base, copied into one artifact with its overlay", redis, podinfo, []string{"podinfo"}},
		{"a file the copy rule excludes", podinfo, excluded, nil},
		{"a file no artifact holds", excluded, docs, nil},
	} {
		res := ferry(t, nil, "diff", "--repo", p.dir, "--base", c.base, "--head", c.head, "--format", "json")
		if res.code != 0 {
			t.Fatalf("%s: diff: exit %d: %s", c.name, res.code, res.stderr)
		}
		var report struct {
			Targets []struct {
				Name   string `json:"name"`
				Counts struct {
					Changed int `json:"changed"`
				} `json:"counts"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &report); err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, res.stdout)
		}
		var got []string
		for _, tg := range report.Targets {
			got = append(got, tg.Name)
			if tg.Counts.Changed != 1 {
				t.Errorf("%s: target %s: %d objects changed, want 1\n%s", c.name, tg.Name, tg.Counts.Changed, res.stdout)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: diff names targets %v, want %v", c.name, got, c.want)
		}
	}
}

// A pull request that breaks one target's dependsOn: diff still compares
// the other affected targets, names the broken one with its reason and
// exits 2; plan lists every affected target.
func TestDiffWithABrokenDependency(t *testing.T) {
	p, base := newPRRepoOf(t, filepath.Join(fleetsDir, "namespaced"), nil)
	p.replace("kubernetes/apps/observability/exporter/ks.yaml", "      namespace: kube-system", "      namespace: monitoring")
	p.replace("kubernetes/apps/default/web/app/deployment.yaml", "replicas: 2", "replicas: 5")
	head := p.commit("breaks exporter, scales web")
	res := ferry(t, nil, "diff", "--repo", p.dir, "--base", base, "--head", head, "--format", "text")
	if res.code != exitError {
		t.Errorf("diff: exit %d, want %d", res.code, exitError)
	}
	for _, w := range []string{"-  replicas: 2", "+  replicas: 5", "target exporter", `dependsOn "metrics-server" (namespace monitoring)`} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("diff report lacks %q:\n%s", w, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, "exporter") {
		t.Errorf("stderr does not name the failed target: %s", res.stderr)
	}
	plan := ferry(t, nil, "plan", "--repo", p.dir, "--base", base, "--head", head)
	if plan.code != 0 || !strings.Contains(plan.stdout, `"target":"exporter"`) || !strings.Contains(plan.stdout, `"target":"web"`) {
		t.Errorf("plan: exit %d: %s%s", plan.code, plan.stdout, plan.stderr)
	}
}

// A push that touches what targets of two clusters share gives plan's
// per-cluster matrix two entries, each listing that cluster's affected
// targets in dependency order (the deploy workflows run one job each).
func TestPlanPerCluster(t *testing.T) {
	p, base := newPRRepo(t, "fleet", nil)
	p.replace("infrastructure/controllers/ingress/deployment.yaml", "replicas: 2", "replicas: 3")
	p.replace("apps/base/podinfo/service.yaml", "port: 80", "port: 8080")
	head := p.commit("a shared base and shared infrastructure")
	dir := t.TempDir()
	output := filepath.Join(dir, "output")
	res := ferry(t, map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": output, "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary")},
		"plan", "--repo", p.dir, "--base", base, "--head", head, "--no-decrypt")
	if res.code != 0 {
		t.Fatalf("plan: exit %d: %s", res.code, res.stderr)
	}
	var out struct {
		Clusters []plannedCluster `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	want := []plannedCluster{
		{Cluster: "production", Targets: "production/infra-controllers,production/apps"},
		{Cluster: "staging", Targets: "staging/infra-controllers,staging/apps"},
	}
	if diff := cmp.Diff(want, out.Clusters); diff != "" {
		t.Errorf("plan's clusters (-want +got):\n%s\n%s", diff, res.stdout)
	}
	outs := actionstest.Outputs(t, output)
	var matrix struct {
		Include []plannedCluster `json:"include"`
	}
	if err := json.Unmarshal([]byte(outs["clusters"]), &matrix); err != nil || !cmp.Equal(want, matrix.Include) {
		t.Errorf("step output clusters = %q (%v), want the include of %v", outs["clusters"], err, want)
	}
}

// plannedCluster is one entry of plan's per-cluster matrix, as a workflow
// reads it.
type plannedCluster struct {
	Cluster string `json:"cluster"`
	Targets string `json:"targets"`
}
