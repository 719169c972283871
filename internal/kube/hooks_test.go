package kube_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/manifest"
	"github.com/ferry-ci/ferry/internal/output"
)

// hookJob is a Helm hook Job of a rendered HelmRelease: phase pre or
// post, its delete policy ("" for Helm's default) and weight.
func hookJob(name, phase, policy string, weight int, image string) string {
	annotations := fmt.Sprintf("ferry.dev/helm-hook: %s\n    helm.sh/hook: %s-install\n    helm.sh/hook-weight: %q\n", phase, phase, strconv.Itoa(weight))
	if policy != "" {
		annotations += fmt.Sprintf("    helm.sh/hook-delete-policy: %q\n", policy)
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: NS
  annotations:
    %s
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: run
          image: %s
`, name, annotations, image)
}

// hookConfigMap is a Helm hook ConfigMap of phase pre or post.
func hookConfigMap(name, phase string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: NS\n  annotations: {ferry.dev/helm-hook: %s}\ndata: {key: hook}\n", name, phase)
}

// created returns the resource version of a live object: the API
// server's etcd revision when it was written, and nothing here writes an
// object twice, so it orders the creations of one apply.
func (f *fixture) created(kind, name string) int {
	f.t.Helper()
	var rv string
	var err error
	ctx := context.Background()
	switch kind {
	case "Job":
		var j *batchv1.Job
		if j, err = f.cs.BatchV1().Jobs(f.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			rv = j.ResourceVersion
		}
	case "ConfigMap":
		var c *corev1.ConfigMap
		if c, err = f.cs.CoreV1().ConfigMaps(f.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			rv = c.ResourceVersion
		}
	default:
		d, gerr := f.cs.AppsV1().Deployments(f.ns).Get(ctx, name, metav1.GetOptions{})
		err = gerr
		if err == nil {
			rv = d.ResourceVersion
		}
	}
	if err != nil {
		f.t.Fatalf("%s %s: %v", kind, name, err)
	}
	n, err := strconv.Atoi(rv)
	if err != nil {
		f.t.Fatalf("%s %s: resourceVersion %q: %v", kind, name, rv, err)
	}
	return n
}

func (f *fixture) exists(kind, name string) bool {
	ctx := context.Background()
	var err error
	switch kind {
	case "Job":
		_, err = f.cs.BatchV1().Jobs(f.ns).Get(ctx, name, metav1.GetOptions{})
	default:
		_, err = f.cs.CoreV1().ConfigMaps(f.ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Errorf("%s %s: %v", kind, name, err)
	}
	return err == nil
}

// finishJob sets a Job's status as its controller would once it ran (no
// controller runs here): Complete, or Failed.
func (f *fixture) finishJob(name string, failed bool) error {
	ctx := context.Background()
	j, err := f.cs.BatchV1().Jobs(f.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	j.Status.StartTime = &now
	cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now}
	}
	if failed {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"), cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	} else {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"), cond(batchv1.JobComplete, "CompletionsReached")}
	}
	_, err = f.cs.BatchV1().Jobs(f.ns).UpdateStatus(ctx, j, metav1.UpdateOptions{})
	return err
}

// await polls until cond holds (or fails the test after a minute).
func (f *fixture) await(what string, cond func() bool) bool {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Errorf("gave up waiting for %s", what)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// TestHookWaves: pre hooks are applied before every other object of the
// target, post hooks after all of them; a changed hook Job (whose pod
// template cannot change in place) is replaced under Helm's default
// delete policy; a replacement that the server rejects is caught by the
// dry-run before anything is written.
func TestHookWaves(t *testing.T) {
	f := newFixture(t)
	render := func(image string) []string {
		docs := []string{hookConfigMap("done", "post"), deploymentYAML, hookJob("migrate", "pre", "", 0, image)}
		for i := range 5 {
			docs = append(docs, configMap("app-"+strconv.Itoa(i), "1"))
		}
		return docs
	}
	f.apply(f.objects(render("migrate:1")...), f.opts())

	pre, post := f.created("Job", "migrate"), f.created("ConfigMap", "done")
	chart := map[string]int{"Deployment/web": f.created("Deployment", "web")}
	for i := range 5 {
		chart["ConfigMap/app-"+strconv.Itoa(i)] = f.created("ConfigMap", "app-"+strconv.Itoa(i))
	}
	for name, rv := range chart {
		if rv < pre || rv > post {
			t.Errorf("%s written at revision %d, want between the pre hook's %d and the post hook's %d", name, rv, pre, post)
		}
	}

	job, err := f.cs.BatchV1().Jobs(f.ns).Get(context.Background(), "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := f.apply(f.objects(render("migrate:2")...), f.opts())
	want := []string{"replaced Job.batch/" + f.ns + "/migrate"}
	var got []string
	for _, c := range cs.Changes {
		if c.Action != kube.Unchanged {
			got = append(got, string(c.Action)+" "+c.Object.String())
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changed pre hook (-want +got):\n%s", diff)
	}
	again, err := f.cs.BatchV1().Jobs(f.ns).Get(context.Background(), "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.UID == job.UID || again.Spec.Template.Spec.Containers[0].Image != "migrate:2" {
		t.Errorf("hook Job not created anew: uid %s (was %s), image %s", again.UID, job.UID, again.Spec.Template.Spec.Containers[0].Image)
	}

	// A container name the server rejects: the dry-run (a create under a
	// generated name) fails before the old Job is deleted.
	bad := render("migrate:3")
	for i := range bad {
		bad[i] = strings.ReplaceAll(bad[i], "- name: run", "- name: Bad_Name")
	}
	_, err = f.client.Apply(context.Background(), f.objects(bad...), f.opts())
	if err == nil || !strings.Contains(err.Error(), "Job.batch/"+f.ns+"/migrate") {
		t.Fatalf("invalid hook: err = %v, want one naming the Job", err)
	}
	if j, err := f.cs.BatchV1().Jobs(f.ns).Get(context.Background(), "migrate", metav1.GetOptions{}); err != nil || j.UID != again.UID {
		t.Errorf("invalid hook: the live Job was touched (%v)", err)
	}
}

// TestHookWaitDeletePolicies: with Wait, pre hooks run in weight order,
// each awaited before the next and before the chart's objects; a hook
// with hook-succeeded is deleted once it completed, stays deleted on the
// next apply of the same configuration, and is not missing for drift.
func TestHookWaitDeletePolicies(t *testing.T) {
	f := newFixture(t)
	opts := f.opts()
	opts.Wait = true
	objs := f.objects(
		configMap("app", "1"),
		hookJob("second", "pre", "hook-succeeded", 5, "migrate:1"),
		hookJob("first", "pre", "before-hook-creation,hook-succeeded", -1, "schema:1"),
		hookConfigMap("done", "post"),
	)

	// Stand in for the Job controller, and look at what exists meanwhile.
	seen := make(chan string, 1)
	go func() {
		var log []string
		defer func() { seen <- strings.Join(log, "; ") }()
		for _, name := range []string{"first", "second"} {
			if !f.await("Job "+name, func() bool { return f.exists("Job", name) }) {
				return
			}
			log = append(log, fmt.Sprintf("%s running: second=%v app=%v done=%v", name, f.exists("Job", "second"), f.exists("ConfigMap", "app"), f.exists("ConfigMap", "done")))
			if err := f.finishJob(name, false); err != nil {
				t.Errorf("completing Job %s: %v", name, err)
				return
			}
		}
	}()
	cs, err := f.client.Apply(context.Background(), objs, opts)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	want := "first running: second=false app=false done=false; second running: second=true app=false done=false"
	if got := <-seen; got != want {
		t.Errorf("while the hooks ran:\n got %s\nwant %s", got, want)
	}
	ns := f.ns
	wantChanges := []string{
		"created ConfigMap/" + ns + "/app", "created ConfigMap/" + ns + "/done",
		"created Job.batch/" + ns + "/first", "created Job.batch/" + ns + "/second",
		"deleted Job.batch/" + ns + "/first", "deleted Job.batch/" + ns + "/second",
	}
	if diff := cmp.Diff(wantChanges, actions(cs)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if f.exists("Job", "first") || f.exists("Job", "second") {
		t.Errorf("hook-succeeded: Jobs still there")
	}

	// The same configuration again: the hooks ran, they are not run again.
	cs = f.apply(objs, opts)
	for _, c := range cs.Changes {
		if c.Action != kube.Unchanged {
			t.Errorf("re-apply: %s %s", c.Action, c.Object)
		}
	}
	if f.exists("Job", "first") {
		t.Errorf("re-apply ran the hook again")
	}
	cmpr, err := f.client.Compare(context.Background(), objs, kube.CompareOptions{Target: opts.Target, InventoryNamespace: opts.InventoryNamespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, lo := range cmpr.Objects {
		if lo.ID.Kind == "Job" && (!lo.HookDeleted || !lo.Unchanged || lo.Live != nil) {
			t.Errorf("compare %s: HookDeleted %v Unchanged %v live %v, want a hook deleted by its policy, unchanged", lo.ID, lo.HookDeleted, lo.Unchanged, lo.Live != nil)
		}
	}
}

// TestHookBothPhases: a hook of both phases (helm.sh/hook:
// pre-install,post-install) is one object that runs twice, as Helm runs
// it: before the chart's objects, and after them created anew (Helm's
// default delete policy replaces it). The same configuration again runs
// neither phase.
func TestHookBothPhases(t *testing.T) {
	f := newFixture(t)
	opts := f.opts()
	opts.Wait = true
	check := strings.Replace(hookJob("check", "pre", "", 0, "check:1"), "ferry.dev/helm-hook: pre", "ferry.dev/helm-hook: pre,post", 1)
	check = strings.Replace(check, "helm.sh/hook: pre-install", "helm.sh/hook: pre-install,post-install", 1)
	objs := f.objects(configMap("app", "1"), check)

	// Stand in for the Job controller: complete each run of the hook, and
	// look at what exists meanwhile.
	seen := make(chan string, 1)
	go func() {
		var log []string
		defer func() { seen <- strings.Join(log, "; ") }()
		var last types.UID
		for run := range 2 {
			var uid types.UID
			if !f.await(fmt.Sprintf("run %d of Job check", run+1), func() bool {
				j, err := f.cs.BatchV1().Jobs(f.ns).Get(context.Background(), "check", metav1.GetOptions{})
				if err == nil {
					uid = j.UID
				}
				return err == nil && uid != last
			}) {
				return
			}
			last = uid
			log = append(log, fmt.Sprintf("run %d: app=%v", run+1, f.exists("ConfigMap", "app")))
			if err := f.finishJob("check", false); err != nil {
				t.Errorf("completing Job check: %v", err)
				return
			}
		}
	}()
	cs, err := f.client.Apply(context.Background(), objs, opts)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got, want := <-seen, "run 1: app=false; run 2: app=true"; got != want {
		t.Errorf("while the hook ran:\n got %s\nwant %s", got, want)
	}
	ns := f.ns
	want := []string{"created ConfigMap/" + ns + "/app", "created Job.batch/" + ns + "/check", "replaced Job.batch/" + ns + "/check"}
	if diff := cmp.Diff(want, actions(cs)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	// The same configuration again: the hook ran, neither phase runs again.
	cs = f.apply(objs, opts)
	for _, c := range cs.Changes {
		if c.Action != kube.Unchanged {
			t.Errorf("re-apply: %s %s", c.Action, c.Object)
		}
	}
}

// TestHookFailed: a pre hook Job that fails fails the target at once;
// the chart's objects are not applied, the hook-failed policy deletes the
// Job, and the next apply runs it again.
func TestHookFailed(t *testing.T) {
	f := newFixture(t)
	opts := f.opts()
	opts.Wait = true
	objs := f.objects(configMap("app", "1"), hookJob("migrate", "pre", "hook-failed", 0, "migrate:1"))
	go func() {
		if f.await("Job migrate", func() bool { return f.exists("Job", "migrate") }) {
			if err := f.finishJob("migrate", true); err != nil {
				t.Errorf("failing Job: %v", err)
			}
		}
	}()
	cs, err := f.client.Apply(context.Background(), objs, opts)
	var hf *kube.HookFailedError
	if !errors.As(err, &hf) || !strings.Contains(err.Error(), "Job.batch/"+f.ns+"/migrate: hook failed") {
		t.Fatalf("err = %v, want the hook named as failed", err)
	}
	if f.exists("ConfigMap", "app") {
		t.Errorf("the chart's ConfigMap was applied after its pre hook failed")
	}
	if f.exists("Job", "migrate") {
		t.Errorf("hook-failed: the Job is still there")
	}
	wantChanges := []string{"created Job.batch/" + f.ns + "/migrate", "deleted Job.batch/" + f.ns + "/migrate"}
	if diff := cmp.Diff(wantChanges, actions(cs)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	// The next apply runs the hook again (here it succeeds).
	go func() {
		if f.await("Job migrate", func() bool { return f.exists("Job", "migrate") }) {
			if err := f.finishJob("migrate", false); err != nil {
				t.Errorf("completing Job: %v", err)
			}
		}
	}()
	cs = f.apply(objs, opts)
	wantChanges = []string{"created ConfigMap/" + f.ns + "/app", "created Job.batch/" + f.ns + "/migrate"}
	if diff := cmp.Diff(wantChanges, actions(cs)); diff != "" {
		t.Errorf("second apply (-want +got):\n%s", diff)
	}
}

// TestHookChangesReported: hook replacements and deletions have their
// own words in the text report, and their own columns in the markdown
// table only when some target has them.
func TestHookChangesReported(t *testing.T) {
	job := manifest.ID{Group: "batch", Kind: "Job", Namespace: "shop", Name: "migrate"}
	hooks := &kube.ChangeSet{Target: "apps", Revision: "abc", Changes: []kube.Change{
		{Object: job, Action: kube.Replaced, Reason: "hook-delete-policy before-hook-creation"},
		{Object: job, Action: kube.Deleted, Reason: "hook-delete-policy hook-succeeded"},
	}}
	var text strings.Builder
	if err := (kube.ChangeSets{hooks}).Write(&text, output.Text); err != nil {
		t.Fatal(err)
	}
	want := `target apps (applied abc): 1 replaced, 1 deleted
  replaced   Job.batch/shop/migrate (hook-delete-policy before-hook-creation)
  deleted    Job.batch/shop/migrate (hook-delete-policy hook-succeeded)
`
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	plain := &kube.ChangeSet{Target: "web", Revision: "abc"}
	for _, tc := range []struct {
		sets   []*kube.ChangeSet
		header string
	}{
		{[]*kube.ChangeSet{plain, hooks}, "| target | revision | created | configured | replaced | unchanged | deleted | pruned | skipped | orphaned |"},
		{[]*kube.ChangeSet{plain}, "| target | revision | created | configured | unchanged | pruned | skipped | orphaned |"},
	} {
		md := kube.MarkdownChangeSets(tc.sets)
		if got := strings.Split(md, "\n")[2]; got != tc.header {
			t.Errorf("markdown header\n got %s\nwant %s", got, tc.header)
		}
	}
}
