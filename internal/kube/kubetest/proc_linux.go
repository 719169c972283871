//go:build linux

package kubetest

import "syscall"

// sysProcAttr puts the child in its own process group (so Stop can signal
// the whole group) and asks the kernel to SIGKILL it if the thread that
// started it dies, so a crashed or timed-out test binary leaves nothing
// behind. The starting goroutine is locked to its OS thread until the child
// exits (see startProc), which makes the parent-death signal reliable.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
