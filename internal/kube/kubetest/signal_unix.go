//go:build unix

package kubetest

import (
	"os"
	"syscall"
)

// terminate asks the process group led by p to shut down.
func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill kills the process group led by p.
func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
