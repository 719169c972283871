package helm

import "syscall"

// childAttr has the kernel kill a Sandbox's child when ferry dies, so a
// runaway render never outlives the run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// capData bounds what the process may map for its data (the Go heap and
// the goroutine stacks) to bytes, RLIMIT_DATA's soft limit: past it an
// allocation fails and the Go runtime dies of "out of memory", which the
// Sandbox reports as limits.renderMemory. The kernel holds this bound
// however fast a template allocates; Go maps its heap once and reuses
// it, so the bound holds across renders.
func capData(bytes int64) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_DATA, &rl) != nil {
		return
	}
	rl.Cur = uint64(bytes)
	if rl.Max < rl.Cur {
		rl.Cur = rl.Max
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_DATA, &rl)
}
