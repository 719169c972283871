package kubetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// process is one running control-plane binary whose output goes to a log
// file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid after done is closed
}

// startProc starts bin with args, a minimal environment and stdout/stderr
// appended to logPath.
//
// The child is started from a goroutine locked to its OS thread that stays
// there until the child exits: on Linux the parent-death signal is tied to
// the starting thread, not the process, so the thread must outlive the child.
func startProc(name, bin string, args []string, dir, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// cleanEnv is the environment of the children: only PATH, HOME and TMPDIR.
// etcd reads every ETCD_* variable as a flag and the apiserver has no use for
// the test's environment either, so nothing else is passed through.
func cleanEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// exited reports whether the process has already exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then kills the
// group, and waits until the process has been reaped. A zero grace kills at
// once. Safe to call on an exited process.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	if grace > 0 {
		terminate(p.cmd.Process)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
	}
	kill(p.cmd.Process)
	<-p.done
}

// failure describes why the process is not usable, with the tail of its log.
func (p *process) failure(what string) error {
	state := "is running"
	if p.exited() {
		state = "exited"
		if p.waitErr != nil {
			state = "exited: " + p.waitErr.Error()
		}
	}
	return fmt.Errorf("%s: %s %s; last %d lines of %s:\n%s",
		what, p.name, state, logTailLines, filepath.Base(p.logPath), tail(p.logPath, logTailLines))
}

const logTailLines = 30

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	b = bytes.TrimRight(b, "\n")
	lines := strings.Split(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
