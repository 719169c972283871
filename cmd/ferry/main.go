// Command ferry is a push-model GitOps pipeline runner: it renders a
// repository's Kustomize targets, decrypts their SOPS secrets, and carries
// them to clusters from CI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/ferry-ci/ferry/internal/gctune" // GC policy, set before the dependencies' init functions run
	"github.com/ferry-ci/ferry/internal/helm"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == helm.SandboxArg {
		// The child process that renders charts for ferry (helm.Sandbox).
		os.Exit(helm.ServeSandbox(os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], newEnv())
	stop()
	os.Exit(code)
}
