package kubetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A test binary that panics or times out exits without Stop. On Linux its
// etcd and kube-apiserver die with it (parent-death signal), but the temp
// directory stays, and etcd preallocates ~120 MB of WAL in it. Each start
// therefore removes directories left by earlier crashed runs.

const (
	tempPattern = "kubetest-*"
	ownerFile   = "kubetest.pid" // pid of the test binary that owns the directory
	staleAfter  = 5 * time.Minute
)

// writeOwner records the current process as the owner of dir.
func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// sweepStale removes kubetest directories in the temp dir whose owner
// process is gone and in which nothing was written for staleAfter (a running
// apiserver writes to etcd every few seconds, which guards against owners in
// another PID namespace sharing the temp dir). Errors are ignored.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPattern))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if time.Since(lastWrite(dir)) < staleAfter {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// lastWrite is the newest modification time under dir.
func lastWrite(dir string) time.Time {
	var last time.Time
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
		return nil
	})
	return last
}
