package kubetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNamespaceName(t *testing.T) {
	for _, tc := range []struct{ in, prefix string }{
		{"TestFoo", "testfoo-"},
		{"TestFoo/sub_test#01", "testfoo-sub-test-01-"},
		{"--x--", "x-"},
		{"ünï/ø", "n-"},
		{"", "test-"},
		{"///", "test-"},
		{"123", "123-"},
		{strings.Repeat("ab-", 40), strings.Repeat("ab-", 19)},
		{strings.Repeat("a", 56) + "/b", strings.Repeat("a", 56) + "-"},
	} {
		got := namespaceName(tc.in)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("namespaceName(%q) = %q: %v", tc.in, got, errs)
		}
		if !strings.HasPrefix(got, tc.prefix) || len(got) != len(tc.prefix)+5 {
			t.Errorf("namespaceName(%q) = %q, want %q + 5 random characters", tc.in, got, tc.prefix)
		}
	}
	if a, b := namespaceName("T"), namespaceName("T"); a == b {
		t.Errorf("namespaceName twice = %q", a)
	}
}

func TestSweepStale(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no stale-directory sweep on Windows")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	mk := func(name string, owner int, mtime time.Time) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != 0 {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(owner)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{filepath.Join(dir, ownerFile), filepath.Join(dir, "etcd"), dir} {
			_ = os.Chtimes(p, mtime, mtime)
		}
		return dir
	}
	stale := mk("kubetest-stale", dead.Process.Pid, old)
	fresh := mk("kubetest-fresh", dead.Process.Pid, time.Now())
	alive := mk("kubetest-alive", os.Getppid(), old)
	noOwner := mk("kubetest-noowner", 0, old)
	other := mk("other-stale", dead.Process.Pid, old)

	sweepStale()

	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s: not removed (%v)", stale, err)
	}
	for _, dir := range []string{fresh, alive, noOwner, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestEtcdOnTakenPort starts an etcd on the port another plane's etcd
// holds, as when another test binary takes the free port first: the other
// etcd answers /health there, and startEtcd must not take it for its own
// but fail with "address already in use", which startPlane retries on.
func TestEtcdOnTakenPort(t *testing.T) {
	bin, err := findBinDir()
	if err == nil {
		err = checkBinaries(bin)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	first := &ControlPlane{binDir: bin, dir: t.TempDir(), etcdName: "kubetest-" + randomHex(8), etcdPort: port}
	if err := first.startEtcd(); err != nil {
		t.Fatal(err)
	}
	defer first.etcd.stop(0)
	second := &ControlPlane{binDir: bin, dir: t.TempDir(), etcdName: "kubetest-" + randomHex(8), etcdPort: port}
	err = second.startEtcd()
	if second.etcd != nil {
		defer second.etcd.stop(0)
	}
	if err == nil || !addrInUse(err) {
		t.Fatalf("second etcd on the first one's port %d: %v; want an address-in-use failure", port, err)
	}
}
