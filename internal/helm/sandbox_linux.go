package helm

import "syscall"

// childAttr has the kernel kill a Sandbox's child when ferry dies, so a
// runaway render never outlives the run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
