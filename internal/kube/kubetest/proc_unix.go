//go:build unix && !linux

package kubetest

import "syscall"

// sysProcAttr puts the child in its own process group so Stop can signal the
// whole group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
