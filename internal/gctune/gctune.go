// Package gctune sets ferry's garbage collector policy when the program
// starts, before most packages run their init functions (Go initializes
// ready packages in import path order, and this one needs only os and
// runtime/debug): the init functions of ferry's dependencies allocate
// about 8 MB, and collecting it at the default GOGC=100 is a sixth of
// ferry's start-up. cmd/ferry imports it for that side effect only.
//
// The policy trades memory for time, as a short-lived CI command can: the
// heap may grow to five times what is live between collections (GOGC=400
// instead of 100), which takes 5-10% off a render or a registry scan (a
// render of 2,000 objects peaks at about 145 MiB instead of 105), and a
// soft limit of 2 GiB makes collections frequent again before the heap
// passes what Go's default would reach for any live heap under 1 GiB.
// GOGC and GOMEMLIMIT, when set, win.
package gctune

import (
	"os"
	"runtime/debug"
)

// Percent and Limit are the policy: GOGC and the soft memory limit.
const (
	Percent = 400
	Limit   = 2 << 30
)

func init() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(Percent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(Limit)
	}
}
