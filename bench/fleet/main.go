// Command fleet is the fleet apply benchmark: `ferry apply` of 50 targets
// of 20 objects each (1,000 objects over 10 namespaces) against what a
// hand-written push pipeline runs on every merge, `kustomize build` of each
// overlay and one `kubectl apply --server-side -f` of the result, side by
// side on one real control plane (etcd + kube-apiserver, built by `make
// controlplane`). Three cases: first apply, one object changed, nothing
// changed. Each tool has its own namespaces, so neither touches the
// other's objects. Prints wall times and ratios; nothing asserts a speed.
//
// Usage: go run ./bench/fleet [-rounds N] [-baseline FERRY]   (make
// bench-fleet builds ferry; FERRY_ARGS adds flags to ferry apply, e.g.
// FERRY_ARGS="--parallel 8"). With -baseline, another ferry binary (an
// older build) runs each case too, in the same rounds, and the ratio of
// the two ferries is printed: the paired comparison of a change's speed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ferry-ci/ferry/bench/benchkit"
)

const (
	targets    = 50
	perTarget  = 20
	namespaces = 10
)

func main() {
	rounds := flag.Int("rounds", 3, "rounds (fresh namespaces each); medians are printed")
	baseline := flag.String("baseline", "", "another ferry binary to run side by side (its ratio to bin/ferry is printed)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *rounds, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "bench/fleet: FAILED:", err)
		os.Exit(1)
	}
}

type tools struct {
	*benchkit.Plane
	kustomize string
	baseline  string
}

func run(ctx context.Context, rounds int, baseline string) error {
	root, err := benchkit.ModuleRoot()
	if err != nil {
		return err
	}
	t := tools{kustomize: filepath.Join(root, ".cache", "testbin", "kustomize"), baseline: baseline}
	if err := benchkit.Require("make bench-fleet", t.kustomize); err != nil {
		return err
	}
	if t.Plane, err = benchkit.Launch("bench/fleet", false); err != nil {
		return err
	}
	defer t.Stop()

	cases := []string{"first apply", "one object changed", "nothing changed"}
	times := map[string]map[string][]float64{"ferry": {}, "baseline": {}, "pipeline": {}}
	runners := []string{"ferry", "pipeline"}
	if baseline != "" {
		runners = []string{"ferry", "baseline", "pipeline"}
	}
	for r := 0; r < rounds; r++ {
		if baseline != "" && r%2 == 1 {
			// Every other round the baseline goes first: neither ferry
			// gains from its place in the round.
			runners = []string{"baseline", "ferry", "pipeline"}
		} else if baseline != "" {
			runners = []string{"ferry", "baseline", "pipeline"}
		}
		for _, tool := range runners {
			prefix := fmt.Sprintf("r%d-%s", r, tool[:1])
			repo := filepath.Join(t.Work, prefix)
			if err := writeFleet(repo, prefix, "v1"); err != nil {
				return err
			}
			for i := 0; i < namespaces; i++ {
				if _, err := t.cmd(ctx, t.Kubectl.Bin, "--kubeconfig", t.Kubectl.Kubeconfig, "create", "namespace", fmt.Sprintf("%s-ns%d", prefix, i)); err != nil {
					return err
				}
			}
			for i, c := range cases {
				if c == "one object changed" {
					if err := writeFleet(repo, prefix, "v2"); err != nil {
						return err
					}
				}
				rev := fmt.Sprintf("%040d", i)
				if c == "nothing changed" {
					rev = fmt.Sprintf("%040d", i-1)
				}
				d, err := t.apply(ctx, tool, repo, rev)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", tool, c, err)
				}
				times[tool][c] = append(times[tool][c], d.Seconds())
			}
		}
	}
	fmt.Printf("fleet apply benchmark: %d targets x %d objects over %d namespaces, %d rounds (medians)\n", targets, perTarget, namespaces, rounds)
	targetsFor := map[string]string{"first apply": ">= 2x", "one object changed": ">= 10x", "nothing changed": ">= 15x"}
	for _, c := range cases {
		f, p := benchkit.Median(times["ferry"][c]), benchkit.Median(times["pipeline"][c])
		fmt.Printf("  %-20s ferry apply %6.2f s   kustomize build x%d + kubectl apply --server-side %6.2f s   ratio %5.1fx (target %s)\n", c, f, targets, p, p/f, targetsFor[c])
	}
	if baseline != "" {
		fmt.Printf("bin/ferry against the baseline %s (new / old wall time, medians; below 1 is faster)\n", baseline)
		for _, c := range cases {
			f, b := benchkit.Median(times["ferry"][c]), benchkit.Median(times["baseline"][c])
			fmt.Printf("  %-20s new %6.2f s   old %6.2f s   new/old %5.2f\n", c, f, b, f/b)
		}
	}
	return nil
}

// apply runs one tool over the fleet and returns its wall time.
func (t tools) apply(ctx context.Context, tool, repo, rev string) (time.Duration, error) {
	start := time.Now()
	if tool == "ferry" || tool == "baseline" {
		bin := t.Ferry
		if tool == "baseline" {
			bin = t.baseline
		}
		// Each round's inventories apart (the target names repeat).
		inv := filepath.Base(repo) + "-inventory"
		_, err := t.cmd(ctx, bin, append([]string{"apply", "--repo", repo, "--kubeconfig", t.Kubectl.Kubeconfig, "--revision", rev, "--inventory-namespace", inv}, strings.Fields(os.Getenv("FERRY_ARGS"))...)...)
		return time.Since(start), err
	}
	var all strings.Builder
	for i := 0; i < targets; i++ {
		out, err := t.cmd(ctx, t.kustomize, "build", filepath.Join(repo, "apps", fmt.Sprintf("t%02d", i)))
		if err != nil {
			return 0, err
		}
		all.WriteString("---\n")
		all.WriteString(out)
	}
	file := filepath.Join(repo, "all.yaml")
	if err := os.WriteFile(file, []byte(all.String()), 0o644); err != nil {
		return 0, err
	}
	_, err := t.cmd(ctx, t.Kubectl.Bin, t.Kubectl.Args("apply", "--server-side", "--field-manager", "pipeline", "-f", file)...)
	return time.Since(start), err
}

func (t tools) cmd(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return "", fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, ee.Stderr)
	}
	return string(out), err
}

// writeFleet writes 50 overlays of 20 objects (ConfigMaps, Services,
// ServiceAccounts, Deployments) into 10 namespaces, and a ferry.yaml
// listing them. version changes one ConfigMap of one overlay.
func writeFleet(dir, prefix, version string) error {
	var ferry strings.Builder
	ferry.WriteString("targets:\n")
	for i := 0; i < targets; i++ {
		ns := fmt.Sprintf("%s-ns%d", prefix, i%namespaces)
		var objs []string
		for j := 0; j < perTarget; j++ {
			name := fmt.Sprintf("t%02d-o%02d", i, j)
			value := "v1"
			if i == 7 && j == 3 {
				value = version
			}
			switch j % 4 {
			case 0:
				objs = append(objs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {key: %q}\n", name, value))
			case 1:
				objs = append(objs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s}\nspec: {ports: [{port: 80}], selector: {app: %s}}\n", name, name))
			case 2:
				objs = append(objs, fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: %s}\n", name))
			case 3:
				objs = append(objs, fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s}\nspec:\n  selector: {matchLabels: {app: %s}}\n  template:\n    metadata: {labels: {app: %s}}\n    spec: {containers: [{name: app, image: registry.example.com/app:1.0.0}]}\n", name, name, name))
			}
		}
		d := filepath.Join(dir, "apps", fmt.Sprintf("t%02d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "objects.yaml"), []byte(strings.Join(objs, "---\n")), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "kustomization.yaml"), []byte("namespace: "+ns+"\nresources: [objects.yaml]\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&ferry, "  - {name: t%02d, path: apps/t%02d}\n", i, i)
	}
	return os.WriteFile(filepath.Join(dir, "ferry.yaml"), []byte(ferry.String()), 0o644)
}
