// Command apply is the apply benchmark (`make bench-apply`): ferry apply
// against kubectl's server-side apply with an ApplySet, on a real etcd and
// kube-apiserver (internal/kube/kubetest), side by side in one run.
//
// Each round generates two repositories of 1,000 objects over 10 namespaces
// (the 10 Namespaces, one namespaced CRD with a schema, and per namespace 40
// ConfigMaps, 25 Services, 25 Deployments and 8 or 9 custom resources), one
// per tool, with their own namespaces (f-rN-ns-I and k-rN-ns-I) and CRD
// group, so the tools never touch each other's objects. kubectl applies the
// objects `bin/ferry render` prints for its repository. Three phases, the
// tools interleaved: first apply, no-op re-apply, and a prune of 500 objects.
// Every command is timed as a whole process; the cluster is checked after
// each phase and the benchmark fails if either tool did not converge.
// Numbers, not a test: nothing here asserts a speed.
//
// kubectl on several namespaces: an ApplySet with a namespaced parent
// (a Secret) needs -n and then refuses objects of other namespaces, so the
// kubectl side uses a cluster-scoped custom-resource parent: a CRD labelled
// applyset.kubernetes.io/is-parent-type, created once, and one parent object
// per round, created (with the id label and tooling annotation kubectl
// requires, since kubectl cannot create custom-resource parents) before the
// clock starts. kubectl cannot apply a CRD and its custom resources in one
// run ("ensure CRDs are installed first"), so its first apply is three
// processes, timed together: apply the CRD, kubectl wait for Established,
// apply everything.
//
// Usage: go run ./bench/apply [-rounds N] [-keep]
//
// With FERRY_CPUPROFILE=PREFIX, one extra round runs ferry's apply in this
// process (the same steps as `ferry apply`) under the CPU profiler, writes
// PREFIX-first.pprof, PREFIX-noop.pprof and PREFIX-prune.pprof and prints
// each phase's request timeline on stderr; -rounds 0 runs only that round.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-ci/ferry/bench/benchkit"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/secrets"
)

const (
	namespaces    = 10
	configMaps    = 40 // per namespace; the prune keeps 20
	services      = 25 // the prune keeps 12
	deployments   = 25 // the prune keeps 13
	customRes     = 9  // 8 in the first namespace; the prune keeps 4 (3)
	crPruned      = 5
	parentGroup   = "bench.ferry.dev"
	parentKind    = "ApplySet"
	parentCRDName = "applysets." + parentGroup
	target        = "bench"
)

var phases = []string{"first apply", "no-op re-apply", "prune 500"}

// targets from the issue, kubectl/ferry.
var targets = []float64{3, 10, 3}

func main() {
	os.Exit(run())
}

func run() int {
	rounds := flag.Int("rounds", 3, "rounds (each on fresh namespaces); medians are printed (0 with FERRY_CPUPROFILE: only the profiled round)")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	p, err := benchkit.Launch("bench/apply", *keep)
	if err != nil {
		return fail(err)
	}
	// SIGINT/SIGTERM cancel ctx: the running command is killed, run
	// returns and the deferred Stop stops the plane.
	defer p.Stop()
	b := &bench{Plane: p}
	if err := b.init(ctx); err != nil {
		return fail(err)
	}

	if *rounds == 0 && os.Getenv("FERRY_CPUPROFILE") != "" {
		// only the profiled round
	} else if err := b.main(ctx, *rounds); err != nil {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("interrupted: %w", err))
		}
		return fail(err)
	}
	if prefix := os.Getenv("FERRY_CPUPROFILE"); prefix != "" {
		if err := b.profile(ctx, prefix); err != nil {
			return fail(err)
		}
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "bench/apply: FAILED:", err)
	return 1
}

type bench struct {
	*benchkit.Plane
	dyn            dynamic.Interface
	cs             kubernetes.Interface
	planePIDs      []int
	kubectlVersion string
}

func (b *bench) init(ctx context.Context) error {
	cfg := b.CP.RESTConfig()
	var err error
	if b.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if b.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	// etcd and kube-apiserver of this plane: their command lines name its
	// directory.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(b.CP.Dir())) {
			b.planePIDs = append(b.planePIDs, pid)
		}
	}
	// The parent type of kubectl's ApplySets: cluster-scoped, labelled as a
	// permitted parent type.
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  labels: {applyset.kubernetes.io/is-parent-type: "true"}
spec:
  group: %s
  scope: Cluster
  names: {plural: applysets, singular: applyset, kind: %s, listKind: %sList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, parentCRDName, parentGroup, parentKind, parentKind)
	p := filepath.Join(b.Work, "parent-crd.yaml")
	if err := os.WriteFile(p, []byte(crd), 0o644); err != nil {
		return err
	}
	if _, err := b.Kubectl.Run(ctx, nil, "apply", "--server-side", "-f", p); err != nil {
		return err
	}
	if _, err := b.Kubectl.Run(ctx, nil, "wait", "--for=condition=established", "--timeout=60s", "crd/"+parentCRDName); err != nil {
		return err
	}
	// Warm up: page cache for both binaries, kubectl's discovery cache.
	if b.kubectlVersion, err = b.Kubectl.Warm(ctx); err != nil {
		return err
	}
	if err := exec.CommandContext(ctx, b.Ferry, "version").Run(); err != nil {
		return fmt.Errorf("ferry version: %w", err)
	}
	return nil
}

// ---------------------------------------------------------------- the objects

// set is one tool's objects in one round.
type set struct {
	prefix string // namespaces are <prefix>-ns-<i>
	group  string // the CRD's group
	dir    string // the repository
}

func (s set) ns(i int) string { return fmt.Sprintf("%s-ns-%d", s.prefix, i) }
func (s set) crdName() string { return "widgets." + s.group }

func crCount(i int) int {
	if i == 0 {
		return customRes - 1
	}
	return customRes
}

// counts is what each namespace must hold: ConfigMaps, Services,
// Deployments, custom resources.
func counts(i int, pruned bool) [4]int {
	if pruned {
		return [4]int{configMaps / 2, services / 2, deployments - deployments/2, crCount(i) - crPruned}
	}
	return [4]int{configMaps, services, deployments, crCount(i)}
}

// writeRepo writes ferry.yaml and app/ (a kustomization listing plain YAML
// files); pruned writes the repository after the prune.
func (s set) writeRepo(pruned bool) error {
	var ns strings.Builder
	for i := 0; i < namespaces; i++ {
		fmt.Fprintf(&ns, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels: {bench: ferry-apply}\n", s.ns(i))
	}
	files := []benchkit.File{{Name: "namespaces.yaml", Content: ns.String()}, {Name: "crd.yaml", Content: s.crd()}}
	for i := 0; i < namespaces; i++ {
		files = append(files, benchkit.File{Name: fmt.Sprintf("ns-%d.yaml", i), Content: s.namespaceObjects(i, counts(i, pruned))})
	}
	return benchkit.WriteTarget(s.dir, target, files)
}

func (s set) crd() string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
spec:
  group: %s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 0}
                color: {type: string, enum: [red, green, blue]}
                tags: {type: array, items: {type: string}}
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`, s.crdName(), s.group)
}

func (s set) namespaceObjects(i int, n [4]int) string {
	ns := s.ns(i)
	var b strings.Builder
	for j := 0; j < n[0]; j++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-%d
  namespace: %s
  labels: {app.kubernetes.io/name: app-%d}
data:
  LOG_LEVEL: info
  INDEX: "%d"
  GREETING: hello from %s
  settings.json: '{"feature": true, "limit": %d}'
`, j, ns, j%deployments, j, ns, j*10)
	}
	for j := 0; j < n[1]; j++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata:
  name: svc-%d
  namespace: %s
  labels: {app.kubernetes.io/name: app-%d}
spec:
  selector: {app.kubernetes.io/name: app-%d}
  ports:
    - {name: http, port: 80, targetPort: 8080}
`, j, ns, j, j)
	}
	for j := 0; j < n[2]; j++ {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d
  namespace: %s
  labels: {app.kubernetes.io/name: app-%d}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: app-%d}
  template:
    metadata:
      labels: {app.kubernetes.io/name: app-%d}
    spec:
      containers:
        - name: app
          image: registry.example.com/app-%d:1.0.%d
          ports: [{name: http, containerPort: 8080}]
          envFrom: [{configMapRef: {name: cm-%d}}]
          resources:
            requests: {cpu: 10m, memory: 16Mi}
            limits: {memory: 64Mi}
`, j, ns, j, j, j, j, i, j)
	}
	colors := []string{"red", "green", "blue"}
	for j := 0; j < n[3]; j++ {
		fmt.Fprintf(&b, `---
apiVersion: %s/v1
kind: Widget
metadata:
  name: w-%d
  namespace: %s
spec:
  size: %d
  color: %s
  tags: [bench, w-%d]
`, s.group, j, ns, j+1, colors[j%3], j)
	}
	return b.String()
}

// ------------------------------------------------------------------ timing

// result is one timed phase of one tool: one or more processes.
type result struct {
	wall     time.Duration
	steps    []string // "name wall" for multi-process phases
	procCPU  time.Duration
	planeCPU time.Duration // kube-apiserver + etcd
	maxRSS   int64         // KiB, largest process
	others   float64       // share of the machine's CPU used by other processes meanwhile
	requests map[string]float64
	settle   time.Duration
	output   string
}

func (r *result) requestTotal() float64 {
	var t float64
	for _, v := range r.requests {
		t += v
	}
	return t
}

// timed runs one process and adds it to r.
func (b *bench) timed(ctx context.Context, r *result, name string, env []string, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	r.wall += d
	r.steps = append(r.steps, fmt.Sprintf("%s %.2fs", name, d.Seconds()))
	r.output += out.String()
	if st := cmd.ProcessState; st != nil {
		r.procCPU += st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > r.maxRSS {
			r.maxRSS = ru.Maxrss
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w\n%s", name, filepath.Base(bin), strings.Join(args, " "), err, benchkit.LastLines(out.String(), 30))
	}
	return nil
}

// measure settles the plane, then runs fn, recording the plane's CPU and
// the API requests fn caused.
func (b *bench) measure(ctx context.Context, fn func(r *result) error) (*result, error) {
	r := &result{}
	r.settle = b.settle(ctx)
	before, err := benchkit.Requests(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	cpu0, busy0 := b.planeCPU(), machineBusy()
	if err := fn(r); err != nil {
		return r, err
	}
	r.planeCPU = b.planeCPU() - cpu0
	if r.wall > 0 {
		others := machineBusy() - busy0 - r.planeCPU - r.procCPU
		r.others = max(0, others.Seconds()/(r.wall.Seconds()*float64(runtime.NumCPU())))
	}
	if r.requests, err = benchkit.RequestsSince(ctx, b.cs, before); err != nil {
		return nil, err
	}
	return r, nil
}

// planeCPU is the CPU time etcd and kube-apiserver have used.
func (b *bench) planeCPU() time.Duration {
	var ticks int64
	for _, pid := range b.planePIDs {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		// utime and stime are fields 14 and 15; f[0] is field 3.
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// machineBusy is the CPU time all processors have spent busy, from
// /proc/stat (user, nice, system, irq, softirq, steal).
func machineBusy() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / 100
}

// settle waits (up to 30 s) until the plane is idle: under 10% of a core
// for two 500 ms windows in a row, so that work one command left behind
// (a new CRD's OpenAPI, say) is not billed to the next.
func (b *bench) settle(ctx context.Context) time.Duration {
	start := time.Now()
	quiet := 0
	prev := b.planeCPU()
	for quiet < 2 && time.Since(start) < 30*time.Second && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		now := b.planeCPU()
		if now-prev <= 50*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		prev = now
	}
	return time.Since(start)
}

// ------------------------------------------------------------------- rounds

type roundSets struct {
	f, k      set
	invNS     string // ferry's inventory namespace this round
	parent    string // kubectl's ApplySet parent this round
	kAll      string // kubectl's file: everything
	kPruned   string // kubectl's file after the prune
	kCRD      string // kubectl's CRD-first file
	ferryID   string
	kubectlID string
	render    time.Duration // bin/ferry render of the kubectl repository
}

func (b *bench) newRound(ctx context.Context, name string) (*roundSets, error) {
	rs := &roundSets{
		f:      set{prefix: "f-" + name, group: "f" + name + ".bench.example.com", dir: filepath.Join(b.Work, name, "ferry-repo")},
		k:      set{prefix: "k-" + name, group: "k" + name + ".bench.example.com", dir: filepath.Join(b.Work, name, "kubectl-repo")},
		invNS:  "ferry-bench-" + name,
		parent: "k-" + name,
	}
	rs.ferryID = kube.ApplySetID(kube.ParentName(target), rs.invNS, "Secret", "")
	rs.kubectlID = kube.ApplySetID(rs.parent, "", parentKind, parentGroup)
	if err := rs.f.writeRepo(false); err != nil {
		return nil, err
	}
	if err := rs.k.writeRepo(true); err != nil {
		return nil, err
	}
	dir := filepath.Join(b.Work, name)
	rs.kPruned = filepath.Join(dir, "kubectl-pruned.yaml")
	if err := b.renderTo(ctx, rs.k.dir, rs.kPruned); err != nil {
		return nil, err
	}
	if err := rs.k.writeRepo(false); err != nil {
		return nil, err
	}
	rs.kAll = filepath.Join(dir, "kubectl-all.yaml")
	t0 := time.Now()
	if err := b.renderTo(ctx, rs.k.dir, rs.kAll); err != nil {
		return nil, err
	}
	rs.render = time.Since(t0)
	rs.kCRD = filepath.Join(dir, "kubectl-crd.yaml")
	if err := os.WriteFile(rs.kCRD, []byte(rs.k.crd()), 0o644); err != nil {
		return nil, err
	}
	// kubectl cannot create a custom-resource parent: create it, untimed,
	// with the id label and tooling annotation kubectl checks.
	parent := fmt.Sprintf(`apiVersion: %s/v1
kind: %s
metadata:
  name: %s
  labels: {applyset.kubernetes.io/id: %s}
  annotations:
    applyset.kubernetes.io/tooling: kubectl/%s
    applyset.kubernetes.io/contains-group-kinds: ""
`, parentGroup, parentKind, rs.parent, rs.kubectlID, b.kubectlVersion)
	p := filepath.Join(dir, "kubectl-parent.yaml")
	if err := os.WriteFile(p, []byte(parent), 0o644); err != nil {
		return nil, err
	}
	if _, err := b.Kubectl.Run(ctx, nil, "apply", "--server-side", "--field-manager=kubectl-applyset", "-f", p); err != nil {
		return nil, err
	}
	return rs, nil
}

// renderTo writes `ferry render --repo dir` to file and checks it holds
// every object.
func (b *bench) renderTo(ctx context.Context, dir, file string) error {
	cmd := exec.CommandContext(ctx, b.Ferry, "render", "--repo", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("ferry render --repo %s: %w\n%s", dir, err, stderr.String())
	}
	return os.WriteFile(file, out, 0o644)
}

func (b *bench) ferryArgs(rs *roundSets) []string {
	return []string{"apply", "--repo", rs.f.dir, "--kubeconfig", b.Kubectl.Kubeconfig, "--prune", "--inventory-namespace", rs.invNS}
}

func (b *bench) kubectlApply(rs *roundSets, file string) []string {
	return b.Kubectl.Args("apply", "--server-side", "--applyset="+parentCRDName+"/"+rs.parent, "--prune", "-f", file)
}

var applysetEnv = []string{"KUBECTL_APPLYSET=true"}

// phase runs one phase for both tools: ferry first, then kubectl.
func (b *bench) phase(ctx context.Context, p int, rs *roundSets) (fr, kr *result, err error) {
	if p == 2 {
		if err := rs.f.writeRepo(true); err != nil {
			return nil, nil, err
		}
	}
	fr, err = b.measure(ctx, func(r *result) error {
		return b.timed(ctx, r, "ferry apply", nil, b.Ferry, b.ferryArgs(rs)...)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ferry, %s: %w", phases[p], err)
	}
	if err := b.verify(ctx, rs.f, rs.ferryID, p == 2); err != nil {
		return nil, nil, fmt.Errorf("ferry did not converge after %s: %w\nferry's output:\n%s", phases[p], err, benchkit.LastLines(fr.output, 20))
	}
	if err := checkFerrySummary(fr.output, p); err != nil {
		return nil, nil, fmt.Errorf("ferry, %s: %w", phases[p], err)
	}
	kr, err = b.measure(ctx, func(r *result) error {
		switch p {
		case 0:
			if err := b.timed(ctx, r, "apply CRD", nil, b.Kubectl.Bin, b.Kubectl.Args("apply", "--server-side", "-f", rs.kCRD)...); err != nil {
				return err
			}
			if err := b.timed(ctx, r, "wait Established", nil, b.Kubectl.Bin, b.Kubectl.Args("wait", "--for=condition=established", "--timeout=60s", "crd/"+rs.k.crdName())...); err != nil {
				return err
			}
			return b.timed(ctx, r, "apply all", applysetEnv, b.Kubectl.Bin, b.kubectlApply(rs, rs.kAll)...)
		case 1:
			return b.timed(ctx, r, "apply all", applysetEnv, b.Kubectl.Bin, b.kubectlApply(rs, rs.kAll)...)
		default:
			return b.timed(ctx, r, "apply pruned", applysetEnv, b.Kubectl.Bin, b.kubectlApply(rs, rs.kPruned)...)
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kubectl, %s: %w", phases[p], err)
	}
	if err := b.verify(ctx, rs.k, rs.kubectlID, p == 2); err != nil {
		return nil, nil, fmt.Errorf("kubectl did not converge after %s: %w\nkubectl's output:\n%s", phases[p], err, benchkit.LastLines(kr.output, 20))
	}
	if p == 2 {
		if n := strings.Count(kr.output, " pruned\n"); n != 500 {
			return nil, nil, fmt.Errorf("kubectl, %s: it reported %d objects pruned, want 500", phases[p], n)
		}
	}
	return fr, kr, nil
}

var ferrySummary = regexp.MustCompile(`(?m)^target bench \([^)]*\): (.*)$`)

// checkFerrySummary checks what ferry says it did.
func checkFerrySummary(out string, p int) error {
	m := ferrySummary.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("no summary line in its output:\n%s", benchkit.LastLines(out, 10))
	}
	want := []string{"1000 created", "1000 unchanged", "500 unchanged, 500 pruned"}[p]
	if m[1] != want {
		return fmt.Errorf("it reported %q, want %q", m[1], want)
	}
	return nil
}

var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrCRD       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// verify checks that the cluster holds exactly the set's objects, each
// labelled as a member of the ApplySet id.
func (b *bench) verify(ctx context.Context, s set, id string, pruned bool) error {
	var problems []string
	member := func(u *unstructured.Unstructured) {
		if got := u.GetLabels()[kube.LabelPartOf]; got != id {
			problems = append(problems, fmt.Sprintf("%s %s/%s: label %s=%q, want %q", u.GetKind(), u.GetNamespace(), u.GetName(), kube.LabelPartOf, got, id))
		}
	}
	crd, err := b.dyn.Resource(gvrCRD).Get(ctx, s.crdName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("CRD %s: %w", s.crdName(), err)
	}
	member(crd)
	gvrs := []schema.GroupVersionResource{
		{Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "services"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: s.group, Version: "v1", Resource: "widgets"},
	}
	total := 1
	for i := 0; i < namespaces; i++ {
		ns, err := b.dyn.Resource(gvrNamespace).Get(ctx, s.ns(i), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("Namespace %s: %w", s.ns(i), err)
		}
		if ns.GetDeletionTimestamp() != nil {
			problems = append(problems, fmt.Sprintf("Namespace %s is being deleted", s.ns(i)))
		}
		member(ns)
		total++
		want := counts(i, pruned)
		for k, gvr := range gvrs {
			l, err := b.dyn.Resource(gvr).Namespace(s.ns(i)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing %s in %s: %w", gvr.Resource, s.ns(i), err)
			}
			if len(l.Items) != want[k] {
				problems = append(problems, fmt.Sprintf("%s has %d %s, want %d", s.ns(i), len(l.Items), gvr.Resource, want[k]))
			}
			for j := range l.Items {
				member(&l.Items[j])
			}
			total += len(l.Items)
		}
	}
	wantTotal := 1000
	if pruned {
		wantTotal = 500
	}
	if total != wantTotal {
		problems = append(problems, fmt.Sprintf("%d objects, want %d", total, wantTotal))
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// ------------------------------------------------------------------ main loop

func (b *bench) main(ctx context.Context, rounds int) error {
	if rounds < 1 {
		rounds = 1
	}
	ferryT := make([][]float64, len(phases))
	kubectlT := make([][]float64, len(phases))
	ferryR := make([][]*result, len(phases))
	kubectlR := make([][]*result, len(phases))
	var renders []float64
	for r := 0; r < rounds; r++ {
		rs, err := b.newRound(ctx, fmt.Sprintf("r%d", r))
		if err != nil {
			return err
		}
		renders = append(renders, rs.render.Seconds())
		line := fmt.Sprintf("round %d:", r+1)
		for p := range phases {
			fr, kr, err := b.phase(ctx, p, rs)
			if err != nil {
				return fmt.Errorf("round %d: %w", r+1, err)
			}
			ferryT[p] = append(ferryT[p], fr.wall.Seconds())
			kubectlT[p] = append(kubectlT[p], kr.wall.Seconds())
			ferryR[p] = append(ferryR[p], fr)
			kubectlR[p] = append(kubectlR[p], kr)
			line += fmt.Sprintf("  %s %.2fs/%.2fs", phases[p], fr.wall.Seconds(), kr.wall.Seconds())
		}
		fmt.Fprintln(os.Stderr, line+"  (ferry/kubectl)")
	}

	fmt.Printf("apply benchmark: 1000 objects over %d namespaces (10 Namespaces, 1 CRD, %d ConfigMaps, %d Services, %d Deployments, %d custom resources); kube-apiserver %s (kubetest: etcd + apiserver, no controllers), %d CPUs; %d rounds, each on fresh namespaces\n",
		namespaces, namespaces*configMaps, namespaces*services, namespaces*deployments, namespaces*customRes-1, b.kubectlVersion, runtime.NumCPU(), rounds)
	fmt.Printf("  ferry:   bin/ferry apply --repo DIR --kubeconfig KC --prune --inventory-namespace ferry-bench-rN (one process per phase; no --allow-mass-prune)\n")
	fmt.Printf("  kubectl: KUBECTL_APPLYSET=true kubectl %s apply --server-side --applyset=%s/k-rN --prune -f FILE (FILE from bin/ferry render)\n", b.kubectlVersion, parentCRDName)
	fmt.Printf("           one ApplySet over all 10 namespaces, with a cluster-scoped custom-resource parent (CRD labelled applyset.kubernetes.io/is-parent-type);\n")
	fmt.Printf("           the parent object is created before the clock starts (kubectl cannot create custom-resource parents).\n")
	fmt.Printf("           first apply = 3 processes timed together: apply the CRD, kubectl wait --for=condition=established, apply everything\n")
	fmt.Printf("           (kubectl cannot apply a CRD and its custom resources in one run)\n")
	fmt.Printf("  ferry's times include rendering the repository (kustomize, in-process); kubectl's do not: bin/ferry render of the same\n")
	fmt.Printf("  repository alone takes %.2f s (median), done before kubectl's clock starts\n", benchkit.Median(renders))
	fmt.Println()
	fmt.Printf("  %-16s %10s %12s %15s %8s\n", "phase", "ferry s", "kubectl s", "kubectl/ferry", "target")
	for p := range phases {
		f, k := benchkit.Median(ferryT[p]), benchkit.Median(kubectlT[p])
		fmt.Printf("  %-16s %10.2f %12.2f %14.1fx %7.0fx\n", phases[p], f, k, k/f, targets[p])
	}
	fmt.Printf("  (kubectl %s prunes one object at a time through a client-go client left at its default 5 requests/s: its\n", b.kubectlVersion)
	fmt.Printf("  500 DELETEs wait on client-side throttling; ferry prunes one object at a time too, unthrottled)\n")
	fmt.Println()
	fmt.Printf("  per phase, medians: wall | CPU of the tool's processes | CPU of kube-apiserver+etcd | API requests (by verb, median round) | peak RSS |\n")
	fmt.Printf("  share of the machine's CPU other processes (not this benchmark) used meanwhile; load average at the end: %s\n", loadavg())
	fmt.Printf("  (requests as kube-apiserver counts them, its own included: each new Service's ClusterIP is a POST of an IPAddress)\n")
	for p := range phases {
		for _, t := range []struct {
			name string
			rs   []*result
		}{{"ferry", ferryR[p]}, {"kubectl", kubectlR[p]}} {
			fmt.Printf("  %-16s %-8s %s\n", phases[p], t.name, describeResults(t.rs))
		}
	}
	fmt.Printf("  all rounds (s), ferry / kubectl:\n")
	for p := range phases {
		fmt.Printf("  %-16s %s / %s\n", phases[p], benchkit.Floats(ferryT[p]), benchkit.Floats(kubectlT[p]))
	}
	return nil
}

func describeResults(rs []*result) string {
	var wall, proc, plane, req, rss, others []float64
	for _, r := range rs {
		others = append(others, r.others*100)
		wall = append(wall, r.wall.Seconds())
		proc = append(proc, r.procCPU.Seconds())
		plane = append(plane, r.planeCPU.Seconds())
		req = append(req, r.requestTotal())
		rss = append(rss, float64(r.maxRSS)/1024)
	}
	// The request breakdown of the median-wall round.
	mid := benchkit.MedianBy(rs, func(r *result) time.Duration { return r.wall })
	s := fmt.Sprintf("%6.2fs | %5.2fs | %5.2fs | %5.0f req (%s) | %3.0f MiB | others %2.0f%%",
		benchkit.Median(wall), benchkit.Median(proc), benchkit.Median(plane), benchkit.Median(req), benchkit.ByVerb(mid.requests), benchkit.Median(rss), benchkit.Median(others))
	if len(mid.steps) > 1 {
		s += " | " + strings.Join(mid.steps, ", ")
	}
	return s
}

func loadavg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// ---------------------------------------------------------------- profiling

// profile runs ferry's apply in this process, the steps of `ferry apply`,
// under the CPU profiler, on a fresh set of namespaces.
func (b *bench) profile(ctx context.Context, prefix string) error {
	rs, err := b.newRound(ctx, "rp")
	if err != nil {
		return err
	}
	names := []string{"first", "noop", "prune"}
	for p := range phases {
		if p == 2 {
			if err := rs.f.writeRepo(true); err != nil {
				return err
			}
		}
		b.settle(ctx)
		f, err := os.Create(prefix + "-" + names[p] + ".pprof")
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		summary, err := applyInProcess(ctx, rs.f.dir, b.Kubectl.Kubeconfig, rs.invNS)
		pprof.StopCPUProfile()
		f.Close()
		if err != nil {
			return fmt.Errorf("in-process ferry apply, %s: %w", phases[p], err)
		}
		fmt.Fprintf(os.Stderr, "bench/apply: in-process ferry apply, %s: %.2fs (%s); profile %s\n", phases[p], time.Since(t0).Seconds(), summary, f.Name())
		if err := b.verify(ctx, rs.f, rs.ferryID, p == 2); err != nil {
			return fmt.Errorf("in-process ferry apply did not converge after %s: %w", phases[p], err)
		}
	}
	return nil
}

// call is one API request of the in-process apply.
type call struct {
	start, end time.Duration
	label      string
}

// recorder records every request a client makes.
type recorder struct {
	t0    time.Time
	mu    sync.Mutex
	calls []call
}

type recordingTransport struct {
	*recorder
	next http.RoundTripper
}

func (r recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Since(r.t0)
	resp, err := r.next.RoundTrip(req)
	label := req.Method
	if req.Method == http.MethodPatch {
		label = "APPLY"
	}
	if req.URL.Query().Get("dryRun") != "" {
		label += "(dry-run)"
	}
	if req.Method == http.MethodGet && req.URL.Query().Get("labelSelector") != "" {
		label = "LIST"
	}
	r.mu.Lock()
	r.calls = append(r.calls, call{start: start, end: time.Since(r.t0), label: label})
	r.mu.Unlock()
	return resp, err
}

// timeline prints runs of requests of one kind, in order.
func (r *recorder) timeline(renderEnd, total time.Duration) string {
	sort.Slice(r.calls, func(i, j int) bool { return r.calls[i].start < r.calls[j].start })
	var b strings.Builder
	fmt.Fprintf(&b, "    0.00-%.2fs  load + render\n", renderEnd.Seconds())
	for i := 0; i < len(r.calls); {
		j := i
		end := r.calls[i].end
		for j < len(r.calls) && r.calls[j].label == r.calls[i].label {
			end = max(end, r.calls[j].end)
			j++
		}
		fmt.Fprintf(&b, "    %.2f-%.2fs  %s x%d\n", r.calls[i].start.Seconds(), end.Seconds(), r.calls[i].label, j-i)
		i = j
	}
	fmt.Fprintf(&b, "    total %.2fs", total.Seconds())
	return b.String()
}

// applyInProcess mirrors cmd/ferry's runApply for one repository; it
// prints the requests' timeline.
func applyInProcess(ctx context.Context, repoDir, kubeconfig, invNS string) (string, error) {
	rec := &recorder{t0: time.Now()}
	repo, err := config.Load(ctx, repoDir, render.Options{Decryptor: secrets.NewDecryptor(nil)})
	if err != nil {
		return "", err
	}
	defer repo.Close()
	ts, err := repo.Select(nil)
	if err != nil {
		return "", err
	}
	var out []string
	for _, t := range ts {
		res, err := repo.Render(ctx, t)
		if err != nil {
			return "", err
		}
		renderEnd := time.Since(rec.t0)
		// kube.NewClient, with the recorder around the transport.
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return "", err
		}
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{rec, rt} }
		client, err := kube.NewClientFromConfig(cfg, "default", 0, 0)
		if err != nil {
			return "", err
		}
		opts := kube.DefaultApplyOptions()
		opts.Target = t.Name
		opts.Prune = true
		opts.InventoryNamespace = invNS
		cs, err := client.Apply(ctx, res.Set.Objects, opts)
		if err != nil {
			return "", err
		}
		counts := map[kube.Action]int{}
		for _, c := range cs.Changes {
			counts[c.Action]++
		}
		out = append(out, fmt.Sprint(counts))
		fmt.Fprintln(os.Stderr, rec.timeline(renderEnd, time.Since(rec.t0)))
	}
	return strings.Join(out, "; "), nil
}
