package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// Kubectl runs kubectl against one cluster, with its discovery cache in
// the benchmark's work folder.
type Kubectl struct {
	Bin, Kubeconfig, Work string
}

// Args are kubectl's arguments for args on the cluster.
func (k Kubectl) Args(args ...string) []string {
	return append([]string{"--kubeconfig", k.Kubeconfig, "--cache-dir", filepath.Join(k.Work, "kubectl-cache")}, args...)
}

// Run runs kubectl untimed (setup), with env added to the environment,
// and returns what it printed.
func (k Kubectl) Run(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.Bin, k.Args(args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Warm runs kubectl untimed, so that its first timed run does not pay for
// the page cache and the discovery cache, and returns its client version
// ("v1.33.1").
func (k Kubectl) Warm(ctx context.Context) (string, error) {
	out, err := k.Run(ctx, nil, "version", "--client")
	if err != nil {
		return "", err
	}
	if _, err := k.Run(ctx, nil, "api-resources"); err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "Client Version: ")), nil
}

// Plane is what a benchmark against kubectl runs on: a control plane
// (etcd and kube-apiserver, internal/kube/kubetest), bin/ferry and kubectl
// pointed at it, and a work folder.
type Plane struct {
	CP      *kubetest.ControlPlane
	Ferry   string
	Kubectl Kubectl
	Work    string
	cleanup func()
}

// Launch finds bin/ferry and kubectl in the module (failing with the make
// targets that build them), makes the work folder of the benchmark name
// ("bench/apply"; kept with keep), and launches a control plane.
func Launch(name string, keep bool) (*Plane, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	p := &Plane{Ferry: filepath.Join(root, "bin", "ferry")}
	p.Kubectl.Bin = filepath.Join(root, ".cache", "testbin", "kubectl")
	if err := Require("`make build controlplane` (or `make "+strings.ReplaceAll(name, "/", "-")+"`)", p.Ferry, p.Kubectl.Bin); err != nil {
		return nil, err
	}
	if p.Work, p.cleanup, err = WorkDir(name, keep); err != nil {
		return nil, err
	}
	p.Kubectl.Work = p.Work
	begin := time.Now()
	if p.CP, err = kubetest.Launch(); err != nil {
		p.cleanup()
		return nil, err
	}
	p.Kubectl.Kubeconfig = p.CP.KubeconfigPath()
	fmt.Fprintf(os.Stderr, "%s: control plane %s ready in %v\n", name, p.CP.URL(), time.Since(begin).Round(time.Millisecond))
	return p, nil
}

// Stop stops the control plane and removes the work folder, unless kept.
func (p *Plane) Stop() {
	p.CP.Stop()
	p.cleanup()
}
