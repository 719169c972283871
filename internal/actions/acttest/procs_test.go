package acttest

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// The leak checks must be able to fail: a listener on every interface is
// found with its owner, and a process started in a folder is found until
// it is stopped.
func TestLeakChecksSeeWhatIsLeft(t *testing.T) {
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	find := func() *Listener {
		ls, err := Listening()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if l.Port == port {
				return &l
			}
		}
		return nil
	}
	l := find()
	if l == nil {
		t.Fatalf("the listener on 0.0.0.0:%d is not listed", port)
	}
	if l.Addr.IsLoopback() || !l.Addr.IsUnspecified() {
		t.Errorf("listener %s: want the unspecified address", l)
	}
	if owners := SocketOwners()[l.Inode]; !slices.Contains(owners, os.Getpid()) {
		t.Errorf("listener %s: owners %v, want this process %d", l, owners, os.Getpid())
	}
	ln.Close()
	if l := find(); l != nil {
		t.Errorf("listener %s still listed after Close", l)
	}

	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Under load (the runner's containers starting and stopping beside
	// this test) one scan of /proc has missed the process: scan again for
	// a while before calling it missing.
	var found []Process
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		found = ProcessesUsing(dir)
		if len(found) == 1 && found[0].PID == cmd.Process.Pid || time.Now().After(deadline) {
			break
		}
	}
	if len(found) != 1 || found[0].PID != cmd.Process.Pid {
		t.Errorf("processes using %s: %v, want sleep (pid %d)", dir, found, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if found := ProcessesUsing(dir); len(found) != 0 {
		t.Errorf("processes using %s after the kill: %v", dir, found)
	}
}

// summaries reads act's "Summary - " blocks: the first line after the
// marker, then the unprefixed lines up to act's next line.
func TestSummariesFromActLog(t *testing.T) {
	log := "[wf/job] ⭐ Run Main step\n" +
		"[wf/job]   | output\n" +
		"[wf/job]   ⚙  Summary - ### report\n" +
		"\n" +
		"| a | b |\n" +
		"[wf/job]   ✅  Success - Main step\n" +
		"[wf/job]   ⚙  Summary - one line\n"
	got := summaries(log)
	want := []string{"### report\n\n| a | b |", "one line"}
	if !slices.Equal(got, want) {
		t.Errorf("summaries %q, want %q", got, want)
	}
	if lines := StepLines(log); !slices.Equal(lines, []string{"output"}) {
		t.Errorf("step lines %q", lines)
	}
}
