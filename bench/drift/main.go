// Command drift is the drift benchmark (`make bench-drift`): `ferry drift`
// against `kubectl diff --server-side` on a real etcd and kube-apiserver
// (internal/kube/kubetest), side by side in one run.
//
// Each round writes a repository of 1,000 objects (10 Namespaces and, per
// namespace, 35 ConfigMaps, 5 Secrets, 30 Services and 29 Deployments),
// applies it with `bin/ferry apply` (untimed), then drifts 10 of them the
// ways people do: 4 Deployments scaled, 3 ConfigMap values edited, 1 Secret
// value edited (each by another field manager), 2 Services deleted. Then,
// timed, each tool looks for the drift:
//
//   - ferry:   bin/ferry drift --repo DIR (renders the repository itself)
//   - kubectl: kubectl diff --server-side --field-manager=ferry
//     --force-conflicts -f FILE, FILE being the objects exactly as ferry
//     applies them (bin/ferry render, plus ferry's ApplySet member label),
//     so that both ask the server the same question: what would applying
//     Git change?
//
// Both answers are checked: ferry must report exactly the 10 objects, and
// kubectl's diff must name exactly those 10. Numbers, not a test: nothing
// here asserts a speed.
//
// Usage: go run ./bench/drift [-rounds N] [-keep]
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/bench/benchkit"
	"github.com/ferry-ci/ferry/internal/kube"
)

const (
	namespaces  = 10
	configMaps  = 35 // per namespace
	secrets     = 5
	services    = 30
	deployments = 29
	target      = "bench"
	revision    = "0123456789abcdef0123456789abcdef01234567"
	goal        = 5.0 // kubectl/ferry, from the issue
)

func main() { os.Exit(run()) }

func run() int {
	rounds := flag.Int("rounds", 3, "rounds (each on fresh namespaces); medians are printed")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	p, err := benchkit.Launch("bench/drift", *keep)
	if err != nil {
		return fail(err)
	}
	defer p.Stop()
	b := &bench{Plane: p}
	if b.cs, err = kubernetes.NewForConfig(p.CP.RESTConfig()); err != nil {
		return fail(err)
	}
	// Warm up: kubectl's page cache and discovery cache.
	if b.kubectlVersion, err = b.Kubectl.Warm(ctx); err != nil {
		return fail(err)
	}
	if err := b.main(ctx, *rounds); err != nil {
		return fail(err)
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "bench/drift: FAILED:", err)
	return 1
}

type bench struct {
	*benchkit.Plane
	cs             kubernetes.Interface
	kubectlVersion string
}

// ---------------------------------------------------------------- a round

type round struct {
	name  string
	dir   string // the repository
	invNS string
	file  string // kubectl's input
	// drifted are the 10 objects changed behind ferry's back, as
	// Kind/namespace/name.
	drifted []string
}

func (r *round) ns(i int) string { return fmt.Sprintf("%s-ns-%d", r.name, i) }

func (r *round) writeRepo() error {
	var files []benchkit.File
	for i := 0; i < namespaces; i++ {
		files = append(files, benchkit.File{Name: fmt.Sprintf("ns-%d.yaml", i), Content: r.namespaceObjects(i)})
	}
	return benchkit.WriteTarget(r.dir, target, files)
}

func (r *round) namespaceObjects(i int) string {
	ns := r.ns(i)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
	for j := 0; j < configMaps; j++ {
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
  settings.json: '{"feature": true, "limit": %d}'
`, j, ns, j%deployments, j, j*10)
	}
	for j := 0; j < secrets; j++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Secret
metadata:
  name: secret-%d
  namespace: %s
type: Opaque
data:
  token: %s
`, j, ns, base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("token-%d-%d", i, j))))
	}
	for j := 0; j < services; j++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata:
  name: svc-%d
  namespace: %s
spec:
  selector: {app.kubernetes.io/name: app-%d}
  ports:
    - {name: http, port: 80, targetPort: 8080}
`, j, ns, j)
	}
	for j := 0; j < deployments; j++ {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d
  namespace: %s
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
          envFrom: [{configMapRef: {name: cm-%d}}]
          resources:
            requests: {cpu: 10m, memory: 16Mi}
`, j, ns, j, j, j, i, j)
	}
	return b.String()
}

// newRound writes the repository, applies it and writes kubectl's input.
func (b *bench) newRound(ctx context.Context, n int) (*round, error) {
	r := &round{name: fmt.Sprintf("r%d", n), invNS: fmt.Sprintf("ferry-bench-r%d", n)}
	r.dir = filepath.Join(b.Work, r.name, "repo")
	if err := r.writeRepo(); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, b.Ferry, append([]string{"apply"}, b.ferryArgs(r)...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ferry apply: %w\n%s", err, benchkit.LastLines(string(out), 20))
	}
	if !strings.Contains(string(out), "1000 created") {
		return nil, fmt.Errorf("ferry apply did not create 1000 objects:\n%s", benchkit.LastLines(string(out), 5))
	}
	// kubectl's input: what ferry applies, member label included.
	cmd := exec.CommandContext(ctx, b.Ferry, "render", "--repo", r.dir)
	rendered, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ferry render: %w", err)
	}
	id := kube.ApplySetID(kube.ParentName(target), r.invNS, "Secret", "")
	labelled, err := withLabel(rendered, kube.LabelPartOf, id)
	if err != nil {
		return nil, err
	}
	r.file = filepath.Join(b.Work, r.name, "objects.yaml")
	return r, os.WriteFile(r.file, labelled, 0o644)
}

func withLabel(stream []byte, key, value string) ([]byte, error) {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var docs []string
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if m == nil {
			continue
		}
		meta, _ := m["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels[key] = value
		meta["labels"] = labels
		b, err := sigsyaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(b))
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

// drift changes 10 objects behind ferry's back.
func (b *bench) drift(ctx context.Context, r *round) error {
	patch := func(kind, ns, name, body, manager string) error {
		var err error
		po := metav1.PatchOptions{FieldManager: manager}
		switch kind {
		case "Deployment":
			_, err = b.cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(body), po)
		case "ConfigMap":
			_, err = b.cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(body), po)
		case "Secret":
			_, err = b.cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, []byte(body), po)
		}
		return err
	}
	changes := []struct{ kind, ns, name, body, manager string }{
		{"Deployment", r.ns(0), "app-1", `{"spec":{"replicas":5}}`, "kubectl-scale"},
		{"Deployment", r.ns(2), "app-7", `{"spec":{"replicas":0}}`, "kubectl-scale"},
		{"Deployment", r.ns(5), "app-3", `{"spec":{"replicas":9}}`, "hpa"},
		{"Deployment", r.ns(9), "app-28", `{"spec":{"replicas":1}}`, "kubectl-edit"},
		{"ConfigMap", r.ns(1), "cm-4", `{"data":{"LOG_LEVEL":"debug"}}`, "kubectl-edit"},
		{"ConfigMap", r.ns(4), "cm-30", `{"data":{"INDEX":"x"}}`, "kubectl-edit"},
		{"ConfigMap", r.ns(8), "cm-0", `{"data":{"settings.json":"{}"}}`, "kubectl-patch"},
		{"Secret", r.ns(6), "secret-2", `{"data":{"token":"ZWRpdGVk"}}`, "kubectl-patch"},
	}
	for _, c := range changes {
		if err := patch(c.kind, c.ns, c.name, c.body, c.manager); err != nil {
			return fmt.Errorf("%s %s/%s: %w", c.kind, c.ns, c.name, err)
		}
		r.drifted = append(r.drifted, c.kind+"/"+c.ns+"/"+c.name)
	}
	for _, s := range []struct{ ns, name string }{{r.ns(3), "svc-11"}, {r.ns(7), "svc-29"}} {
		if err := b.cs.CoreV1().Services(s.ns).Delete(ctx, s.name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		r.drifted = append(r.drifted, "Service/"+s.ns+"/"+s.name)
	}
	sort.Strings(r.drifted)
	return nil
}

func (b *bench) ferryArgs(r *round) []string {
	return []string{"--repo", r.dir, "--kubeconfig", b.Kubectl.Kubeconfig, "--inventory-namespace", r.invNS, "--revision", revision}
}

// ----------------------------------------------------------------- timing

type result struct {
	wall, cpu time.Duration
	requests  map[string]float64
	output    string
}

func (b *bench) timed(ctx context.Context, okCodes []int, bin string, args ...string) (*result, error) {
	before, err := benchkit.Requests(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err = cmd.Run()
	r := &result{wall: time.Since(t0), output: out.String()}
	if st := cmd.ProcessState; st != nil {
		r.cpu = st.UserTime() + st.SystemTime()
	}
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		return nil, err
	}
	okCode := false
	for _, c := range okCodes {
		okCode = okCode || c == code
	}
	if !okCode {
		return nil, fmt.Errorf("%s %s: exit %d\n%s", filepath.Base(bin), strings.Join(args, " "), code, benchkit.LastLines(out.String(), 20))
	}
	if r.requests, err = benchkit.RequestsSince(ctx, b.cs, before); err != nil {
		return nil, err
	}
	return r, nil
}

// --------------------------------------------------------------- checking

type report struct {
	Target  string `json:"target"`
	Objects []struct {
		Object struct {
			Group, Kind, Namespace, Name string
		} `json:"object"`
		Class string `json:"class"`
	} `json:"objects"`
	InSync int `json:"inSync"`
}

// checkFerry checks ferry found exactly the drifted objects.
func checkFerry(out string, want []string) error {
	var reports []report
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 1 {
		return fmt.Errorf("ferry's JSON (%v):\n%s", err, benchkit.LastLines(out, 10))
	}
	var got []string
	for _, o := range reports[0].Objects {
		if o.Class != "modified" && o.Class != "missing" {
			return fmt.Errorf("ferry reports %s %s/%s/%s", o.Class, o.Object.Kind, o.Object.Namespace, o.Object.Name)
		}
		got = append(got, o.Object.Kind+"/"+o.Object.Namespace+"/"+o.Object.Name)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") || reports[0].InSync != 990 {
		return fmt.Errorf("ferry found %v (%d in sync), want %v (990 in sync)", got, reports[0].InSync, want)
	}
	return nil
}

// kubectl diff names each differing object in a "diff -u -N LIVE MERGED"
// header: .../<group>.<version>.<Kind>.<namespace>.<name>.
var diffHeader = regexp.MustCompile(`(?m)^diff -u -N \S+/(?:[^/\s]*\.)?v1\.(\w+)\.([a-z0-9-]+)\.([a-z0-9.-]+) `)

func checkKubectl(out string, want []string) error {
	var got []string
	for _, m := range diffHeader.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+"/"+m[2]+"/"+m[3])
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return fmt.Errorf("kubectl diff named %v, want %v\n%s", got, want, benchkit.LastLines(out, 20))
	}
	return nil
}

// ------------------------------------------------------------------- main

func (b *bench) main(ctx context.Context, rounds int) error {
	if rounds < 1 {
		rounds = 1
	}
	var ferryT, kubectlT, renderT []float64
	var ferryR, kubectlR []*result
	for n := 0; n < rounds; n++ {
		r, err := b.newRound(ctx, n)
		if err != nil {
			return fmt.Errorf("round %d: %w", n+1, err)
		}
		if err := b.drift(ctx, r); err != nil {
			return fmt.Errorf("round %d: %w", n+1, err)
		}
		fr, err := b.timed(ctx, []int{0}, b.Ferry, append([]string{"drift", "--format", "json"}, b.ferryArgs(r)...)...)
		if err != nil {
			return fmt.Errorf("round %d: ferry: %w", n+1, err)
		}
		if err := checkFerry(fr.output, r.drifted); err != nil {
			return fmt.Errorf("round %d: %w", n+1, err)
		}
		kr, err := b.timed(ctx, []int{1}, b.Kubectl.Bin, b.Kubectl.Args("diff", "--server-side", "--field-manager=ferry", "--force-conflicts", "-f", r.file)...)
		if err != nil {
			return fmt.Errorf("round %d: kubectl: %w", n+1, err)
		}
		if err := checkKubectl(kr.output, r.drifted); err != nil {
			return fmt.Errorf("round %d: %w", n+1, err)
		}
		t0 := time.Now()
		if err := exec.CommandContext(ctx, b.Ferry, "render", "--repo", r.dir).Run(); err != nil { // stdout discarded
			return err
		}
		renderT = append(renderT, time.Since(t0).Seconds())
		ferryT, kubectlT = append(ferryT, fr.wall.Seconds()), append(kubectlT, kr.wall.Seconds())
		ferryR, kubectlR = append(ferryR, fr), append(kubectlR, kr)
		fmt.Fprintf(os.Stderr, "round %d: ferry %.2fs, kubectl %.2fs\n", n+1, fr.wall.Seconds(), kr.wall.Seconds())
	}
	f, k := benchkit.Median(ferryT), benchkit.Median(kubectlT)
	fmt.Printf("drift benchmark: 1000 applied objects (%d Namespaces; per namespace %d ConfigMaps, %d Secrets, %d Services, %d Deployments), 10 drifted\n",
		namespaces, configMaps, secrets, services, deployments)
	fmt.Printf("  (4 Deployments scaled, 3 ConfigMaps and 1 Secret edited by other field managers, 2 Services deleted);\n")
	fmt.Printf("  kube-apiserver %s (kubetest: etcd + apiserver, no controllers), %d CPUs; %d rounds, each on fresh namespaces\n", b.kubectlVersion, runtime.NumCPU(), rounds)
	fmt.Printf("  ferry:   bin/ferry drift --repo DIR --format json (renders the repository itself: bin/ferry render alone takes %.2f s, median)\n", benchkit.Median(renderT))
	fmt.Printf("  kubectl: kubectl %s diff --server-side --field-manager=ferry --force-conflicts -f FILE (FILE: the same objects, rendered, with ferry's member label)\n", b.kubectlVersion)
	fmt.Printf("  both answers checked: exactly the 10 drifted objects\n\n")
	fmt.Printf("  %-8s %10s %12s %15s %8s\n", "", "ferry s", "kubectl s", "kubectl/ferry", "target")
	fmt.Printf("  %-8s %10.2f %12.2f %14.1fx %7.0fx\n", "drift", f, k, k/f, goal)
	fmt.Println()
	for _, t := range []struct {
		name string
		rs   []*result
	}{{"ferry", ferryR}, {"kubectl", kubectlR}} {
		fmt.Printf("  %-8s %s\n", t.name, describe(t.rs))
	}
	fmt.Printf("  all rounds (s), ferry / kubectl: %s / %s\n", benchkit.Floats(ferryT), benchkit.Floats(kubectlT))
	return nil
}

func describe(rs []*result) string {
	var cpu, req []float64
	for _, r := range rs {
		cpu = append(cpu, r.cpu.Seconds())
		t := 0.0
		for _, v := range r.requests {
			t += v
		}
		req = append(req, t)
	}
	mid := benchkit.MedianBy(rs, func(r *result) time.Duration { return r.wall })
	return fmt.Sprintf("CPU %5.2fs | %5.0f API requests (%s)", benchkit.Median(cpu), benchkit.Median(req), benchkit.ByVerb(mid.requests))
}
