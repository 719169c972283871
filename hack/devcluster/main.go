// Command devcluster runs a local Kubernetes control plane (etcd and
// kube-apiserver from .cache/testbin, on loopback) until it is interrupted,
// and writes an admin kubeconfig for it to the path given. The README's
// example uses it when no cluster is configured.
//
//	go run ./hack/devcluster KUBECONFIG_PATH
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: devcluster KUBECONFIG_PATH")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cp, err := kubetest.Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cp.Stop()
	if err := os.WriteFile(os.Args[1], cp.Kubeconfig(), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Printf("devcluster: control plane %s ready; kubeconfig %s\n", cp.URL(), os.Args[1])
	<-ctx.Done()
}
