package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/forge/githubtest"
	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/notify"
	"github.com/ferry-ci/ferry/internal/notify/alertmanagertest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// hookServer is a generic webhook receiver (Flux's generic provider
// posts the event as JSON) on 127.0.0.1, recording the events by path.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	events map[string][]notify.Event
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{events: map[string][]notify.Event{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev notify.Event
		if err := json.Unmarshal(b, &ev); err != nil || r.Method != http.MethodPost {
			t.Errorf("webhook %s %s: not an event: %v\n%s", r.Method, r.URL.Path, err, b)
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.events[r.URL.Path] = append(h.events[r.URL.Path], ev)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// take returns the events posted to path since the last take, and
// forgets them.
func (h *hookServer) take(path string) []notify.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	evs := h.events[path]
	delete(h.events, path)
	return evs
}

// withoutMasks drops the ::add-mask:: lines, where the runner is told
// the secrets to hide.
func withoutMasks(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "::add-mask::") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// summarize is each event as "target reason severity", sorted: sends
// run concurrently.
func summarize(evs []notify.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.InvolvedObject.Name+" "+e.Reason+" "+e.Severity)
	}
	slices.Sort(out)
	return out
}

// notifyRepo is a repository with targets ok, bad and dep (dependsOn
// bad), each a ConfigMap in ns, and two generic Providers: "all", whose
// address is in a SOPS-encrypted Secret of target ok, gets every event
// of an Alert with eventSeverity info; "errors", whose address comes
// from FERRY_SECRET_HOOK__ERR_ADDRESS, those of an Alert with
// eventSeverity error.
func notifyRepo(t *testing.T, ns, allURL string) (*scenario, map[string]string) {
	r := newScenario(t)
	r.write("ferry.yaml", fmt.Sprintf(`targets:
  - {name: ok, path: ok}
  - {name: bad, path: bad}
  - {name: dep, path: dep, dependsOn: [bad]}
notifications:
  providers:
    - {name: all, namespace: %[1]s, type: generic, secretRef: {name: hook-all}}
    - {name: errors, namespace: %[1]s, type: generic, secretRef: {name: hook-err}}
  alerts:
    - {name: all, namespace: %[1]s, providerRef: {name: all}, eventSources: [{kind: Kustomization, name: "*", namespace: flux-system}]}
    - name: errors
      namespace: %[1]s
      providerRef: {name: errors}
      eventSeverity: error
      eventSources: [{kind: Kustomization, name: "*", namespace: flux-system}]
`, ns))
	for _, n := range []string{"ok", "bad", "dep"} {
		r.write(n+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-"+n+", namespace: "+ns+"}\ndata: {k: v}\n")
		r.write(n+"/kustomization.yaml", "resources: [cm.yaml]\n")
	}
	r.encrypt("ok/hook.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: hook-all, namespace: "+ns+"}\nstringData: {address: "+allURL+"}\n", "^(data|stringData)$")
	r.write("ok/kustomization.yaml", "resources: [cm.yaml, hook.yaml]\n")
	vars := r.vars()
	vars["TEST_KUBECONFIG"] = string(cp.Require(t).Kubeconfig())
	return r, vars
}

// holdLease has another run hold target's Lease for the next minute, so
// its apply fails.
func holdLease(t *testing.T, ns, target string) {
	t.Helper()
	holder, seconds, now := "another-run", int32(60), metav1.NewMicroTime(time.Now())
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	_, err := cs.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: kube.ParentName(target) + "-lock", Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

const notifyRevision = "0123456789abcdef0123456789abcdef01234567"

func TestApplyNotifications(t *testing.T) {
	hooks := newHookServer(t)
	secretPath := "/all/s3cr3t-hook-token"
	ns := cp.Namespace(t)
	r, vars := notifyRepo(t, ns, hooks.URL+secretPath)
	vars["FERRY_SECRET_HOOK__ERR_ADDRESS"] = hooks.URL + "/errors/an0ther-s3cr3t"
	args := []string{"apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns, "--revision", notifyRevision, "--lock-timeout", "1s"}
	var outputs []string

	// A good apply: one info event per target, nothing for eventSeverity error.
	good := ferry(t, vars, append(args, "ok")...)
	outputs = append(outputs, good.stdout, good.stderr)
	if good.code != 0 {
		t.Fatalf("apply ok: exit %d: %s", good.code, good.stderr)
	}
	all := hooks.take(secretPath)
	if len(all) != 1 {
		t.Fatalf("a good apply of one target sent %d events to the info Alert, want 1: %+v", len(all), all)
	}
	ev := all[0]
	wantRef := notify.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "ok", APIVersion: "kustomize.toolkit.fluxcd.io/v1"}
	if diff := cmp.Diff(wantRef, ev.InvolvedObject); diff != "" {
		t.Errorf("involvedObject (-want +got):\n%s", diff)
	}
	if ev.Severity != notify.SeverityInfo || ev.Reason != "ReconciliationSucceeded" || ev.ReportingController != "ferry" || ev.Metadata["revision"] != notifyRevision {
		t.Errorf("event = %+v, want info ReconciliationSucceeded from ferry with revision %s", ev, notifyRevision)
	}
	// The ConfigMap and the Secret were created.
	if want := "Applied revision 0123456789ab: 2 created, 0 configured, 0 unchanged, 0 pruned"; ev.Message != want {
		t.Errorf("message %q, want %q", ev.Message, want)
	}
	if got := hooks.take("/errors/an0ther-s3cr3t"); len(got) != 0 {
		t.Errorf("the eventSeverity error Alert got %v from a good apply", summarize(got))
	}

	// bad fails (another run holds its Lease), dep is not attempted.
	holdLease(t, ns, "bad")
	failed := ferry(t, vars, args...)
	outputs = append(outputs, failed.stdout, failed.stderr)
	if failed.code != exitError {
		t.Fatalf("apply: exit %d, want %d: %s", failed.code, exitError, failed.stderr)
	}
	wantAll := []string{"bad ReconciliationFailed error", "dep DependencyNotReady error", "ok ReconciliationSucceeded info"}
	all = hooks.take(secretPath)
	if diff := cmp.Diff(wantAll, summarize(all)); diff != "" {
		t.Errorf("events of the info Alert (-want +got):\n%s", diff)
	}
	errs := hooks.take("/errors/an0ther-s3cr3t")
	if diff := cmp.Diff(wantAll[:2], summarize(errs)); diff != "" {
		t.Errorf("events of the error Alert (-want +got):\n%s", diff)
	}
	for _, e := range errs {
		switch e.Reason {
		case "ReconciliationFailed":
			if !strings.Contains(e.Message, "another-run") {
				t.Errorf("failure message %q does not say why (the Lease holder)", e.Message)
			}
		case "DependencyNotReady":
			if !strings.Contains(e.Message, "bad") {
				t.Errorf("DependencyNotReady message %q does not name the dependency", e.Message)
			}
		}
	}

	// --no-notify and --notify-dry-run send nothing; the dry run prints
	// the payloads, without the addresses.
	off := ferry(t, vars, append(args, "ok", "--no-notify")...)
	dry := ferry(t, vars, append(args, "ok", "--notify-dry-run")...)
	outputs = append(outputs, off.stdout, off.stderr, dry.stdout, dry.stderr)
	if off.code != 0 || dry.code != 0 {
		t.Fatalf("exit %d and %d: %s %s", off.code, dry.code, off.stderr, dry.stderr)
	}
	if got := hooks.take(secretPath); len(got) != 0 {
		t.Errorf("--no-notify or --notify-dry-run sent %v", summarize(got))
	}
	if strings.Contains(off.stdout, "ReconciliationSucceeded") {
		t.Errorf("--no-notify printed a payload:\n%s", off.stdout)
	}
	if !strings.Contains(dry.stdout, `"reason": "ReconciliationSucceeded"`) || !strings.Contains(dry.stdout, "Provider/"+ns+"/all") {
		t.Errorf("--notify-dry-run did not print the payload:\n%s", dry.stdout)
	}

	for _, out := range outputs {
		for _, secret := range []string{"s3cr3t", hooks.URL} {
			if strings.Contains(out, secret) {
				t.Errorf("output holds the webhook address (%q):\n%s", secret, out)
			}
		}
	}
}

func TestApplyNotificationFailuresAreWarnings(t *testing.T) {
	ns := cp.Namespace(t)
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/hooks/s3cr3t-unreachable"
	l.Close()

	r, vars := notifyRepo(t, ns, closed)
	// hook-err is given nowhere: the errors Alert's Provider has no address.
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary")
	for k, v := range map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary, "GITHUB_OUTPUT": filepath.Join(dir, "output")} {
		vars[k] = v
	}
	// An error event for the errors Alert: apply everything, with bad's
	// Lease held, and its exit status is that of the failed target.
	holdLease(t, ns, "bad")
	res := ferry(t, vars, "apply", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns,
		"--lock-timeout", "1s", "--notify-timeout", "3s")
	if res.code != exitError {
		t.Fatalf("exit %d, want %d (that of the failed target): %s", res.code, exitError, res.stderr)
	}
	good := ferry(t, vars, "apply", "ok", "--repo", r.dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns, "--notify-timeout", "3s")
	if good.code != 0 {
		t.Fatalf("a good apply whose notifications fail: exit %d, want 0: %s", good.code, good.stderr)
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "cm-ok", metav1.GetOptions{}); err != nil {
		t.Errorf("target ok was not applied: %v", err)
	}
	for _, want := range []string{
		"ferry: warning: notification Alert/" + ns + "/errors -> Provider/" + ns + "/errors: ",
		"Secret/" + ns + "/hook-err",
		"FERRY_SECRET_HOOK__ERR_",
		"ferry: warning: notification Alert/" + ns + "/all -> Provider/" + ns + "/all: ",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if !strings.Contains(good.stderr, "Alert/"+ns+"/all -> Provider/"+ns+"/all") {
		t.Errorf("the unreachable address is not reported:\n%s", good.stderr)
	}
	if !strings.Contains(res.stdout, "::warning title=Notification not delivered::") {
		t.Errorf("no warning annotation:\n%s", res.stdout)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "### Notifications") || !strings.Contains(string(b), "hook-err") {
		t.Errorf("step summary lacks the notifications section:\n%s", b)
	}
	for _, out := range []string{res.stdout, res.stderr, good.stdout, good.stderr, string(b)} {
		out = withoutMasks(out)
		if strings.Contains(out, "s3cr3t") || strings.Contains(out, l.Addr().String()) {
			t.Errorf("output holds the webhook address:\n%s", out)
		}
	}
}

func TestDriftNotifications(t *testing.T) {
	hooks := newHookServer(t)
	vars := applyVars(t)
	vars["FERRY_SECRET_HOOK_ADDRESS"] = hooks.URL + "/drift/s3cr3t"
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	repo := t.TempDir()
	testtree.Write(t, repo, map[string]string{
		"ferry.yaml": `targets:
  - name: app
    path: app
notifications:
  providers: [{name: hook, type: generic, secretRef: {name: hook}}]
  alerts: [{name: drift, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: app}], inclusionList: ["^Drift"]}]
`,
		"app/kustomization.yaml": "namespace: " + ns + "\nresources: [deploy.yaml]\n",
		"app/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`,
	})
	common := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", driftRev1}
	if res := ferry(t, vars, append([]string{"apply"}, common...)...); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	step := func(name string, extra []string, want ...string) {
		t.Helper()
		res := ferry(t, vars, append(append([]string{"drift", "--report", "none"}, extra...), common...)...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d: %s", name, res.code, res.stderr)
		}
		if strings.Contains(res.stdout+res.stderr, "s3cr3t") {
			t.Errorf("%s: output holds the webhook address", name)
		}
		got := hooks.take("/drift/s3cr3t")
		if diff := cmp.Diff(want, summarize(got)); diff != "" {
			t.Fatalf("%s: events (-want +got):\n%s", name, diff)
		}
		for _, ev := range got {
			if ev.Reason == "DriftDetected" && !strings.Contains(ev.Message, "1 modified") {
				t.Errorf("%s: DriftDetected message %q lacks the drift's classes and counts", name, ev.Message)
			}
			if ev.Metadata["revision"] != driftRev1 {
				t.Errorf("%s: revision %q, want %s", name, ev.Metadata["revision"], driftRev1)
			}
		}
	}

	step("in sync", nil)
	kubectl(t, nil, "-n", ns, "scale", "deployment/web", "--replicas=3")
	step("drifted", nil, "app DriftDetected error")
	step("drifted, unchanged", nil)
	step("drifted, not notifying", []string{"--no-notify"})
	step("healed", []string{"--heal"}, "app DriftResolved info")
	step("in sync again", nil)
	kubectl(t, nil, "-n", ns, "scale", "deployment/web", "--replicas=2")
	step("drifted again", nil, "app DriftDetected error")
	// Reverted by re-applying Git: resolved, once.
	if res := ferry(t, vars, append([]string{"apply", "--no-notify", "--force-conflicts"}, common...)...); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	step("reverted", nil, "app DriftResolved info")
	step("reverted, unchanged", nil)
}

// TestApplyCommitStatusesGitea applies a commit pushed to a real Gitea
// whose repository a gitea Provider names: one status per target, with
// the state of its apply; an unchanged re-apply posts nothing new.
func TestApplyCommitStatusesGitea(t *testing.T) {
	g := giteatest.Require(t)
	bot := giteatest.Unique("ferry-bot")
	token := g.CreateUser(t, bot)
	name := giteatest.Unique("fleet")
	g.CreateRepo(t, bot, name)

	ns := cp.Namespace(t)
	r := newScenario(t)
	dir := r.dir
	r.write("ferry.yaml", fmt.Sprintf(`targets:
  - {name: ok, path: ok}
  - {name: bad, path: bad}
notifications:
  providers: [{name: gitea, type: gitea, address: "%s%s/%s", secretRef: {name: gitea-token}}]
  alerts: [{name: statuses, providerRef: {name: gitea}, eventSources: [{kind: Kustomization, name: "*"}]}]
`, g.URL, bot, name))
	for _, n := range []string{"ok", "bad"} {
		r.write(n+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-"+n+", namespace: "+ns+"}\ndata: {k: v}\n")
	}
	sha := r.commit("fleet")
	r.push(g, bot, name, "main")

	vars := map[string]string{"TEST_KUBECONFIG": string(cp.Require(t).Kubeconfig()), "FERRY_SECRET_GITEA__TOKEN_TOKEN": token}
	holdLease(t, ns, "bad")
	args := []string{"apply", "--repo", dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns, "--lock-timeout", "1s", "--revision", sha}
	if res := ferry(t, vars, args...); res.code != exitError || strings.Contains(res.stderr, "warning: notification") || strings.Contains(res.stderr+res.stdout, token) {
		t.Fatalf("apply: exit %d (want %d, bad fails), no notification warning, no token:\n%s", res.code, exitError, res.stderr)
	}
	statuses := func() map[string]string {
		list, _, err := g.Client(t, token).ListStatuses(bot, name, sha, gitea.ListStatusesOption{})
		if err != nil {
			t.Fatal(err)
		}
		// The context is kind/name/<hash of the provider's identity>, as
		// notification-controller sets it.
		out := map[string]string{}
		for _, s := range list {
			ctx := s.Context
			if i := strings.LastIndex(ctx, "/"); i > 0 && strings.Count(ctx, "/") == 2 {
				ctx = ctx[:i]
			}
			out[ctx+" "+string(s.State)] = s.Description
		}
		return out
	}
	first := statuses()
	got := slices.Sorted(maps.Keys(first))
	if want := []string{"kustomization/bad failure", "kustomization/ok success"}; !cmp.Equal(want, got) {
		t.Errorf("statuses on %s: %q, want %q", sha, got, want)
	}
	// ok again, unchanged: the same status is not posted twice.
	if res := ferry(t, vars, append(args, "ok")...); res.code != 0 {
		t.Fatalf("re-apply ok: exit %d: %s", res.code, res.stderr)
	}
	list, _, err := g.Client(t, token).ListStatuses(bot, name, sha, gitea.ListStatusesOption{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("after an unchanged re-apply %d statuses, want still 2", len(list))
	}
}

// TestBumpNotifications: bump --pr sends PullRequestOpened per policy it
// opened a pull request for, its involved object the ImagePolicy, and
// nothing on a run that changes nothing.
func TestBumpNotifications(t *testing.T) {
	hooks := newHookServer(t)
	reg, gh, token := startGitHubBump(t)
	sc := bumpScenario(t, reg.Host, "fleet", nil)
	dir := sc.dir
	testtree.Write(t, dir, map[string]string{"ferry.yaml": `notifications:
  providers: [{name: hook, type: generic, secretRef: {name: hook}}]
  alerts: [{name: prs, providerRef: {name: hook}, eventSources: [{kind: ImagePolicy, name: "*", namespace: flux-system}, {kind: ImagePolicy, name: "*", namespace: apps}]}]
`})
	local, _ := bareRemote(sc)
	local.PushHead(t, "origin", "main", gittest.Auth{})
	env := githubBumpEnv(reg, gh, token)
	env["FERRY_SECRET_HOOK_ADDRESS"] = hooks.URL + "/prs/s3cr3t"

	res := ferry(t, env, "bump", "--pr", "--repo", dir)
	if res.code != exitOK {
		t.Fatalf("bump --pr: exit %d\n%s", res.code, res.stderr)
	}
	evs := hooks.take("/prs/s3cr3t")
	var got []string
	for _, e := range evs {
		got = append(got, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name+" "+e.Reason)
		if !strings.Contains(e.Message, " -> ") || !strings.Contains(e.Message, "/pull/") {
			t.Errorf("message %q: want old -> new and the pull request's URL", e.Message)
		}
	}
	slices.Sort(got)
	want := []string{"ImagePolicy/apps/build PullRequestOpened", "ImagePolicy/flux-system/api PullRequestOpened", "ImagePolicy/flux-system/app PullRequestOpened"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s\nstderr:\n%s", diff, res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, "s3cr3t") {
		t.Error("output holds the webhook address")
	}
	if again := ferry(t, env, "bump", "--pr", "--repo", dir); again.code != exitOK {
		t.Fatalf("second bump --pr: exit %d\n%s", again.code, again.stderr)
	}
	if evs := hooks.take("/prs/s3cr3t"); len(evs) != 0 {
		t.Errorf("a run that changed no pull request sent %v", summarize(evs))
	}
}

// TestApplyCommitStatusesGitHub is TestApplyCommitStatusesGitea on the
// GitHub test server (its Enterprise API path, /api/v3/, as a github
// Provider on another host than github.com reaches it): one status per
// target on the applied commit, failure for the target that fails, and
// nothing posted again by an unchanged re-apply.
func TestApplyCommitStatusesGitHub(t *testing.T) {
	gh := githubtest.New(t)
	token := gh.AddUser("ferry-bot")
	gh.AddRepo("acme", "fleet")

	ns := cp.Namespace(t)
	r := newScenario(t)
	dir := r.dir
	r.write("ferry.yaml", fmt.Sprintf(`targets:
  - {name: ok, path: ok}
  - {name: bad, path: bad}
notifications:
  providers: [{name: github, type: github, address: "%sacme/fleet", secretRef: {name: github-token}}]
  alerts: [{name: statuses, providerRef: {name: github}, eventSources: [{kind: Kustomization, name: "*"}]}]
`, gh.URL))
	for _, n := range []string{"ok", "bad"} {
		r.write(n+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-"+n+", namespace: "+ns+"}\ndata: {k: v}\n")
	}
	sha := r.commit("fleet")

	vars := map[string]string{"TEST_KUBECONFIG": string(cp.Require(t).Kubeconfig()), "FERRY_SECRET_GITHUB__TOKEN_TOKEN": token}
	holdLease(t, ns, "bad")
	args := []string{"apply", "--repo", dir, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", ns, "--lock-timeout", "1s", "--revision", sha}
	if res := ferry(t, vars, args...); res.code != exitError || strings.Contains(res.stderr, "warning: notification") || strings.Contains(res.stderr+res.stdout, token) {
		t.Fatalf("apply: exit %d (want %d, bad fails), no notification warning, no token:\n%s", res.code, exitError, res.stderr)
	}
	statuses := func() []string {
		var out []string
		for _, s := range gh.Statuses("acme", "fleet", sha) {
			// The context is kind/name/<hash of the provider's identity>.
			parts := strings.Split(s.Context, "/")
			if len(parts) != 3 || s.Creator != "ferry-bot" {
				t.Errorf("status context %q by %q, want kind/name/hash by ferry-bot", s.Context, s.Creator)
			}
			out = append(out, parts[0]+"/"+parts[1]+" "+s.State)
		}
		slices.Sort(out)
		return out
	}
	if want, got := []string{"kustomization/bad failure", "kustomization/ok success"}, statuses(); !cmp.Equal(want, got) {
		t.Errorf("statuses on %s: %q, want %q", sha, got, want)
	}
	if res := ferry(t, vars, append(args, "ok")...); res.code != 0 {
		t.Fatalf("re-apply ok: exit %d: %s", res.code, res.stderr)
	}
	if n := len(gh.Statuses("acme", "fleet", sha)); n != 2 {
		t.Errorf("after an unchanged re-apply %d statuses, want still 2", n)
	}
}

// TestDiffNotifyCommitStatuses: diff --notify (opt-in) sets a status on
// the head commit per target that changes, named for the target: success
// for a target whose render changes, failure for one whose head does not
// render, none for a target the pull request leaves alone. Without
// --notify, diff sends nothing.
func TestDiffNotifyCommitStatuses(t *testing.T) {
	g := giteatest.Require(t)
	bot := giteatest.Unique("ferry-bot")
	token := g.CreateUser(t, bot)
	name := giteatest.Unique("fleet")
	g.CreateRepo(t, bot, name)

	r := newScenario(t)
	dir := r.dir
	r.write("ferry.yaml", fmt.Sprintf(`targets:
  - {name: changed, path: changed}
  - {name: broken, path: broken}
  - {name: same, path: same}
notifications:
  providers: [{name: gitea, type: gitea, address: "%s%s/%s", secretRef: {name: gitea-token}}]
  alerts: [{name: statuses, providerRef: {name: gitea}, eventSources: [{kind: Kustomization, name: "*"}]}]
`, g.URL, bot, name))
	for _, n := range []string{"changed", "broken", "same"} {
		r.write(n+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-"+n+", namespace: apps}\ndata: {k: v}\n")
	}
	base := r.commit("base")
	r.write("changed/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-changed, namespace: apps}\ndata: {k: v2}\n")
	r.write("broken/kustomization.yaml", "resources: [missing.yaml]\n")
	head := r.commit("change one, break one")
	r.push(g, bot, name, "main")

	vars := map[string]string{"FERRY_SECRET_GITEA__TOKEN_TOKEN": token}
	args := []string{"diff", "--repo", dir, "--base", base, "--head", head}
	list := func() []string {
		statuses, _, err := g.Client(t, token).ListStatuses(bot, name, head, gitea.ListStatusesOption{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range statuses {
			parts := strings.Split(s.Context, "/")
			out = append(out, parts[0]+"/"+parts[1]+" "+string(s.State)+" "+s.Description)
		}
		slices.Sort(out)
		return out
	}
	if res := ferry(t, vars, args...); res.code != exitError {
		t.Fatalf("diff without --notify: exit %d, want %d (a target fails to render):\n%s", res.code, exitError, res.stderr)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("diff without --notify set statuses %q", got)
	}
	res := ferry(t, vars, append(args, "--notify")...)
	if res.code != exitError || strings.Contains(res.stderr, "warning: notification") || strings.Contains(res.stdout+res.stderr, token) {
		t.Fatalf("diff --notify: exit %d (want %d), no notification warning, no token:\n%s", res.code, exitError, res.stderr)
	}
	want := []string{"kustomization/broken failure build failed", "kustomization/changed success diff changed"}
	if got := list(); !cmp.Equal(want, got) {
		t.Errorf("statuses on the head %s: %q, want %q", head, got, want)
	}
}

// TestDriftAlertmanager: ferry drift sends its DriftDetected event to a
// real Alertmanager, which holds it with the labels Flux's alertmanager
// provider sends.
func TestDriftAlertmanager(t *testing.T) {
	am := alertmanagertest.Start(t)
	vars := applyVars(t)
	vars["FERRY_SECRET_AM_ADDRESS"] = am.URL + "/api/v2/alerts"
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	repo := t.TempDir()
	testtree.Write(t, repo, map[string]string{
		"ferry.yaml": `targets:
  - name: app
    path: app
notifications:
  providers: [{name: am, type: alertmanager, secretRef: {name: am}}]
  alerts: [{name: drift, providerRef: {name: am}, eventSeverity: error, eventSources: [{kind: Kustomization, name: "*"}], summary: prod drift}]
`,
		"app/kustomization.yaml": "namespace: " + ns + "\nresources: [cm.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: safe}\n",
	})
	common := []string{"--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", driftRev1}
	if res := ferry(t, vars, append([]string{"apply"}, common...)...); res.code != 0 {
		t.Fatalf("apply: exit %d: %s", res.code, res.stderr)
	}
	if got := am.Alerts(t); len(got) != 0 {
		t.Fatalf("Alertmanager holds %d alerts after a good apply (eventSeverity: error)", len(got))
	}
	kubectl(t, nil, "-n", ns, "patch", "configmap/settings", "--type=merge", "-p", `{"data":{"mode":"unsafe"}}`)
	res := ferry(t, vars, append([]string{"drift", "--report", "none"}, common...)...)
	if res.code != 0 || strings.Contains(res.stderr, "warning") {
		t.Fatalf("drift: exit %d: %s", res.code, res.stderr)
	}
	alerts := am.Alerts(t)
	if len(alerts) != 1 {
		t.Fatalf("Alertmanager holds %d alerts, want the drift alert", len(alerts))
	}
	want := map[string]string{
		"alertname":           "FluxKustomizationDriftdetected",
		"severity":            "error",
		"reason":              "DriftDetected",
		"kind":                "Kustomization",
		"name":                "app",
		"namespace":           config.DefaultNamespace,
		"reportingcontroller": "ferry",
		"revision":            driftRev1,
	}
	for k, v := range want {
		if alerts[0].Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, alerts[0].Labels[k], v, alerts[0].Labels)
		}
	}
	if a := alerts[0].Annotations; a["summary"] != "prod drift" || !strings.Contains(a["message"], "1 modified") {
		t.Errorf("annotations %v, want the Alert's summary and the drift's counts", a)
	}
}

// A rendered Provider of a type neither Flux nor ferry knows is a
// warning naming it: the apply goes on and exits 0.
func TestUnknownProviderTypeIsAWarning(t *testing.T) {
	vars := applyVars(t)
	ns, invNS := cp.Namespace(t), cp.Namespace(t)
	repo := t.TempDir()
	testtree.Write(t, repo, map[string]string{
		"ferry.yaml":             "targets:\n  - name: app\n    path: app\n",
		"app/kustomization.yaml": "resources: [cm.yaml, alerts.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: " + ns + "}\ndata: {mode: safe}\n",
		"app/alerts.yaml": `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: pager, namespace: flux-system}
spec: {type: pagerbeam, address: "https://example.test/hook"}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: all, namespace: flux-system}
spec:
  providerRef: {name: pager}
  eventSources: [{kind: Kustomization, name: "*"}]
`,
	})
	res := ferry(t, vars, "apply", "--repo", repo, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", invNS, "--revision", driftRev1)
	if res.code != 0 {
		t.Fatalf("apply: exit %d, want 0: %s", res.code, res.stderr)
	}
	for _, want := range []string{"ferry: warning: ", "Provider/flux-system/pager", "pagerbeam"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the target was not applied: %v", err)
	}
}
