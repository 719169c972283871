//go:build !linux

package helm

import "syscall"

// childAttr: only Linux can tie a child's life to ferry's; elsewhere the
// child ends when its stdin closes, between renders.
func childAttr() *syscall.SysProcAttr { return nil }

// capData: the memory budget is the sampled one alone outside Linux.
func capData(int64) {}
