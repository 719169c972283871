//go:build !unix

package kubetest

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) { _ = p.Kill() }

func kill(p *os.Process) { _ = p.Kill() }

// processAlive cannot tell here, so stale directories are never swept.
func processAlive(pid int) bool { return true }
