package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// peakRSSVar, set to 1 in its environment, makes the test binary the
// parent that measures a run (see TestMain): it runs the command line it
// is given and writes the command's peak resident set, in KiB, to file
// descriptor 3. Linux charges a child, in its ru_maxrss, the resident set
// of the process it was started from (the two share memory until exec),
// so a ferry started from this test process is charged the test's own
// memory, more than 1 GiB under -race. A parent that has just started
// charges it a few MiB at most: the measure can be over, never under.
const peakRSSVar = "FERRY_TEST_PEAK_RSS"

// measuredCommand runs bin with args through a fresh test binary (see
// peakRSSVar); its caller adds peakRSSVar=1 to the environment it sets.
// peak returns the run's peak resident set in KiB once it has been
// waited for.
func measuredCommand(ctx context.Context, t *testing.T, bin string, args ...string) (cmd *exec.Cmd, peak func() int64) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.CommandContext(ctx, self, append([]string{bin}, args...)...)
	cmd.ExtraFiles = []*os.File{w}
	return cmd, func() int64 {
		t.Helper()
		w.Close()
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		kib, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			t.Fatalf("peak resident set of %s: %q: %v", bin, b, err)
		}
		return kib
	}
}

// measurePeakRSS is the test binary as the measuring parent: it runs
// os.Args[1:], killed with it, and exits with the command's status.
func measurePeakRSS() int {
	// The child is killed when the thread that started it ends.
	runtime.LockOSThread()
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, peakRSSVar+"=") })
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "measuring parent:", err)
		return 125
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		fmt.Fprint(os.NewFile(3, "peak-rss"), ru.Maxrss)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// TestPeakRSSChargesTheRunOnly: with 512 MiB of this test process's
// memory in use, a ferry run measured through the fresh parent is
// charged well under it, and its exit status comes through.
func TestPeakRSSChargesTheRunOnly(t *testing.T) {
	bin := builtFerry(t)
	held := make([]byte, 512<<20)
	for i := range held {
		held[i] = 1 // resident, not only reserved
	}
	cmd, peak := measuredCommand(t.Context(), t, bin, "render", "--repo", filepath.Join(t.TempDir(), "missing"))
	cmd.Env = []string{peakRSSVar + "=1", "HOME=" + t.TempDir()}
	err := cmd.Run()
	kib := peak()
	runtime.KeepAlive(held)
	if code := cmd.ProcessState.ExitCode(); code != exitError {
		t.Errorf("render of a missing folder: exit %d (%v), want %d", code, err, exitError)
	}
	if kib <= 0 || kib > 256<<10 {
		t.Errorf("peak resident set %d KiB, want above 0 and well under the 512 MiB the test process holds", kib)
	}
}
